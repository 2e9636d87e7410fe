"""Importing a thin-supervisor workflow spec (its 0.3 format) as a spec of this project.

thin-supervisor writes ``id`` where we write ``name``, ``type: task`` on each step, an
``approval.required`` flag, ``conditional_workflow`` plans under ``nodes``, decision ``options``
that its model judge chooses between, and ``git`` checks as ``check: dirty`` with a boolean
``expect``. :func:`import_thin_spec` converts each of those to its equivalent here and lists every
change it made (and everything it dropped) so the person importing can review them before
approving: an import is always a draft, because an approval here is bound to the content that
was approved, and the converted content is new.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from supervisor.errors import SpecError
from supervisor.workflow.spec import WorkflowSpec, parse_spec
from supervisor.yamlio import parse_yaml

THIN_KINDS = ("linear_plan", "conditional_workflow")
_RISK = {"low": "low", "standard": "medium", "medium": "medium", "high": "high", "critical": "high"}
_FIX = "give a thin-supervisor spec (kind, id, goal, steps or nodes), or run it as is with `supervisor spec validate`"


@dataclass
class ImportedSpec:
    """A converted spec: the YAML text to write, the validated spec, and what changed."""

    text: str
    spec: WorkflowSpec
    changes: list[str] = field(default_factory=list)
    """One line per change, in the order of the source file."""


def import_thin_spec(text: str, source: str = "<spec>") -> ImportedSpec:
    """Convert thin-supervisor spec YAML. Raises :class:`SpecError` naming the file when it is
    not one, or when the converted spec does not validate here."""
    data, _ = parse_yaml(text, source, SpecError)
    if not isinstance(data, dict):
        raise SpecError(f"{source}: a thin-supervisor spec is a YAML mapping", _FIX)
    kind = data.get("kind")
    if kind not in THIN_KINDS:
        raise SpecError(f"{source}: kind {kind!r} is not a thin-supervisor plan ({' or '.join(THIN_KINDS)})", _FIX)
    for key in ("id", "goal"):
        if key not in data:
            raise SpecError(f"{source}: a thin-supervisor spec needs `{key}`", _FIX)
    changes: list[str] = []
    out: dict[str, Any] = {"format_version": 1, "kind": "linear_plan"}
    out["name"] = str(data["id"])
    changes.append(f"id: {data['id']} -> name: {data['id']}")
    out["goal"] = str(data.get("goal") or "")
    items_key = "steps" if kind == "linear_plan" else "nodes"
    if kind == "conditional_workflow":
        changes.append("kind: conditional_workflow -> linear_plan with `next` links (a node without `next` "
                       "ends the plan, as it did there)")
    items = data.get(items_key)
    if not isinstance(items, list) or not items:
        raise SpecError(f"{source}: {kind} needs a non-empty `{items_key}` list", _FIX)
    out["steps"] = [_node(n, i, kind, items_key, changes, source) for i, n in enumerate(items)]

    finish = dict(data.get("finish_policy") or {})
    forbidden: list[str] = []
    if finish.pop("require_clean_or_committed_repo", False):
        forbidden.append("uncommitted_changes")
        changes.append("finish_policy.require_clean_or_committed_repo -> acceptance.forbidden_states: "
                       "[uncommitted_changes]")
    out["finish_policy"] = {k: bool(finish[k]) for k in ("require_all_steps_done", "require_verification_pass")
                            if k in finish}
    for k in sorted(set(finish) - set(out["finish_policy"])):
        changes.append(f"finish_policy.{k}: dropped (no equivalent)")

    policy = dict(data.get("policy") or {})
    out["policy"] = {"default_continue": bool(policy.pop("default_continue", True)),
                     "max_retries_per_node": int(policy.pop("max_retries_per_node", 3))}
    if "max_retries_global" in policy:
        changes.append(f"policy.max_retries_global: {policy.pop('max_retries_global')} dropped (the policy's "
                       "budgets.max_retries_per_node and the run's budgets bound retries here)")
    for k in sorted(policy):
        changes.append(f"policy.{k}: dropped (no equivalent)")

    acc = data.get("acceptance")
    out["acceptance"] = _acceptance(acc, forbidden, out["steps"], changes, source)
    if isinstance(acc, dict):
        for key in ("require_all_steps_done", "require_verification_pass"):
            if key in acc:  # thin-supervisor's acceptance overrides its finish_policy
                out["finish_policy"][key] = bool(acc[key])
                changes.append(f"acceptance.{key} -> finish_policy.{key}")
        if acc.get("goal") and acc["goal"] != out["goal"]:
            changes.append(f"acceptance.goal dropped (the spec's goal is {out['goal']!r})")
    approval = data.get("approval") or {}
    was = approval.get("status", "draft" if approval.get("required") else "approved") if isinstance(
        approval, dict) else "draft"
    out["approval"] = {"status": "draft"}
    changes.append(f"approval: {was} there -> draft here (an approval is bound to the content it approved; "
                   "review, then `supervisor spec approve FILE --by NAME`)")

    header = [f"# Imported from {source} (a thin-supervisor spec) by `supervisor spec import`.", "# Changes:"]
    header += [f"#  - {c}" for c in changes]
    body = yaml.safe_dump(out, sort_keys=False, allow_unicode=True, width=110)
    text_out = "\n".join(header) + "\n" + body
    spec = parse_spec(text_out, source + " (imported)")
    return ImportedSpec(text_out, spec, changes)


def _node(n: object, i: int, kind: str, items_key: str, changes: list[str], source: str) -> dict[str, Any]:
    where = f"{items_key}.{i}"
    if not isinstance(n, dict):
        raise SpecError(f"{source}: {where} is not a mapping", _FIX)
    for key in ("id", "type", "objective"):
        if key not in n:
            raise SpecError(f"{source}: {where} needs `{key}`", _FIX)
    sid = str(n["id"])
    step: dict[str, Any] = {"id": sid}
    ntype = str(n["type"])
    if ntype == "decision":
        step["kind"] = "decision"
    elif ntype != "task":
        changes.append(f"{where} ({sid}): type {ntype} -> a step")
    step["objective"] = str(n["objective"])
    verify = [_verifier(v, f"{where}.verify.{j}", sid, changes, source) for j, v in enumerate(n.get("verify") or [])]
    if verify:
        step["verify"] = verify
    options = n.get("options") or []
    if ntype == "decision":
        if not options:
            raise SpecError(f"{source}: {where} ({sid}) is a decision without `options`", _FIX)
        step["branches"] = []
        for o in options:
            if not isinstance(o, dict) or "id" not in o or "next" not in o:
                raise SpecError(f"{source}: {where} ({sid}): each option needs `id` and `next`", _FIX)
            b: dict[str, Any] = {"id": str(o["id"]), "next": str(o["next"])}
            label = o.get("label") or o.get("when_hint")
            if label:
                b["objective"] = str(label)
            b["when_choice"] = str(o["id"])
            step["branches"].append(b)
        changes.append(f"{where} ({sid}): options -> branches taken when the checkpoint's candidate_next_actions "
                       "name the option id (no model picks a branch; none named: a human is asked)")
    elif options:
        changes.append(f"{where} ({sid}): options dropped (only decision nodes branch)")
    nxt = n.get("next")
    if kind == "conditional_workflow":
        if ntype != "decision":
            step["next"] = str(nxt) if nxt else "end"
    elif nxt:
        changes.append(f"{where} ({sid}): next: {nxt} dropped (a linear_plan there runs its steps in order)")
    for key in ("depends_on", "outputs"):
        if n.get(key):
            changes.append(f"{where} ({sid}): {key} dropped (informational there: no check used it)")
    return step


def _verifier(v: object, where: str, sid: str, changes: list[str], source: str) -> dict[str, Any]:
    if not isinstance(v, dict) or "type" not in v:
        raise SpecError(f"{source}: {where} ({sid}): a verify item needs `type`", _FIX)
    vtype = v["type"]
    rest = {k: val for k, val in v.items() if k != "type"}
    if vtype == "command":
        if "run" not in rest:
            raise SpecError(f"{source}: {where} ({sid}): a command check needs `run`", _FIX)
        return {"type": "command", "run": str(rest["run"]), "expect": str(rest.get("expect", "pass"))}
    if vtype == "artifact":
        if "path" not in rest:
            raise SpecError(f"{source}: {where} ({sid}): an artifact check needs `path`", _FIX)
        return {"type": "artifact", "path": str(rest["path"]), "exists": bool(rest.get("exists", True))}
    if vtype == "git":
        check = rest.get("check", "dirty")
        if check != "dirty":
            raise SpecError(f"{source}: {where} ({sid}): git check {check!r} is unknown to thin-supervisor too",
                            "use check: dirty with expect: true|false")
        dirty = bool(rest.get("expect", True))
        here = "dirty" if dirty else "clean"
        changes.append(f"{where} ({sid}): git check: dirty, expect: {str(dirty).lower()} -> check: {here}")
        return {"type": "git", "check": here}
    if vtype == "workflow":
        if "require_node_done" not in rest:
            raise SpecError(f"{source}: {where} ({sid}): a workflow check needs `require_node_done`", _FIX)
        return {"type": "workflow", "require_node_done": str(rest["require_node_done"])}
    raise SpecError(f"{source}: {where} ({sid}): verifier type {vtype!r} is unknown",
                    "use command, artifact, git or workflow")


def _acceptance(acc: object, forbidden: list[str], steps: list[dict[str, Any]], changes: list[str],
                source: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if acc is None:
        if forbidden:
            out["forbidden_states"] = forbidden
        return out
    if not isinstance(acc, dict):
        raise SpecError(f"{source}: acceptance must be a mapping", _FIX)
    known = {f"{s['id']}.{v['type']}{n}" for s in steps
             for n, v in _numbered(s.get("verify") or [])}
    evidence = []
    for item in acc.get("required_evidence") or []:
        if isinstance(item, str) and item in known:
            evidence.append({"type": "passed", "verifier": item})
        else:
            changes.append(f"acceptance.required_evidence {json.dumps(item)} dropped (free text there; name a "
                           "verifier here with `type: passed`)")
    if evidence:
        out["required_evidence"] = evidence
    states = list(acc.get("forbidden_states") or [])
    for st in states:
        if st in ("failing_tests", "uncommitted_changes", "unverified_steps", "blocked"):
            forbidden.append(st)
        else:
            changes.append(f"acceptance.forbidden_states {st!r} dropped (no equivalent)")
    if acc.get("require_clean_or_committed_repo") and "uncommitted_changes" not in forbidden:
        forbidden.append("uncommitted_changes")
        changes.append("acceptance.require_clean_or_committed_repo -> forbidden_states: [uncommitted_changes]")
    if forbidden:
        out["forbidden_states"] = list(dict.fromkeys(forbidden))
    review = acc.get("must_review_by") or None
    if review:
        out["must_review_by"] = review
    risk = str(acc.get("risk_class", "standard"))
    if risk not in _RISK:
        raise SpecError(f"{source}: acceptance.risk_class {risk!r} is unknown", "use low, standard, high or critical")
    out["risk_class"] = _RISK[risk]
    if _RISK[risk] != risk:
        changes.append(f"acceptance.risk_class: {risk} -> {_RISK[risk]}"
                       + (" (a high risk class asks a human to review before finishing)" if risk == "critical"
                          else ""))
    return out


def _numbered(verify: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    counters: dict[str, int] = {}
    out = []
    for v in verify:
        counters[v["type"]] = counters.get(v["type"], 0) + 1
        out.append((counters[v["type"]], v))
    return out
