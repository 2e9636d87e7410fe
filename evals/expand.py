"""Synthetic expansion: seeded, deterministic variants of golden screen cases.

Each transform keeps what a careful human would conclude, or changes the expectation in a
way it can state exactly (a busy footer makes an idle screen busy; another agent's style
changes the agent and its answer keys). Transforms keep screens realistic: another width wraps
long lines mid-word at the column as a terminal does and redraws rule lines at the new width;
an answered prompt further up is one the same kind of pane really shows (a shell's own
``[Y/n]``, aider's own question, a tool's output inside an agent's transcript), never another
agent's prompt line pasted into the pane. Dangerous command approvals get other agents' styles
too, and stay escalations.

Variants are tagged ``synthetic`` and ``transform:NAME``, carry ``origin`` (the golden case
id), ``origin_hash`` (the golden case's content when expanded), ``transform`` and ``seed``,
and are written beside the golden suite (``suites/expanded/NAME.s<SEED>.jsonl``), never over
it. Loading an expanded suite whose origin cases have changed since is refused with the
command that regenerates it. The same suite file and seed give byte-identical output.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evals import styles
from evals.suites import ScreenCase, Suite
from supervisor.errors import SuiteError

Result = tuple[str, dict[str, Any], dict[str, Any]] | None
Transform = Callable[[random.Random, str, dict[str, Any], dict[str, Any]], Result]
"""(rng, text, input fields, expected) -> (text, input fields, expected), or None when it does not apply."""

_RULE_LINE = re.compile(r"^[─━═\-]{8,}$")


# --------------------------------------------------------------------------- transforms


def t_rewrap(rng: random.Random, text: str, inp: dict[str, Any], exp: dict[str, Any]) -> Result:
    """The pane at another width: a line longer than the pane continues on the next row from the
    exact column, mid-word, as a terminal wraps it; rule lines are redrawn at the new width."""
    old = int(inp.get("width", 120))
    width = rng.choice([w for w in (60, 72, 80, 132, 160, 200) if w != old])
    out: list[str] = []
    for ln in text.split("\n"):
        if _RULE_LINE.match(ln.strip()):
            out.append(ln.strip()[0] * width)
        elif len(ln) > width:
            out.extend(ln[i:i + width] for i in range(0, len(ln), width))
        else:
            out.append(ln)
    return "\n".join(out), {**inp, "width": width}, exp


_SGR = ["\x1b[1m", "\x1b[2m", "\x1b[3m", "\x1b[36m", "\x1b[38;5;174m", "\x1b[38;2;215;119;87m", "\x1b[48;5;236m"]


def t_ansi_noise(rng: random.Random, text: str, inp: dict[str, Any], exp: dict[str, Any]) -> Result:
    """Colours around words and cursor-forward runs instead of spaces, as TUIs really emit."""
    out = []
    for ln in text.split("\n"):
        if not ln.strip() or rng.random() < 0.4:
            out.append(ln)
            continue
        parts = re.split(r"( {2,})", ln)
        buf = []
        for p in parts:
            if p.startswith("  ") and not p.strip() and rng.random() < 0.5:
                buf.append(f"\x1b[{len(p)}C")
            elif p and rng.random() < 0.5:
                buf.append(rng.choice(_SGR) + p + "\x1b[0m")
            else:
                buf.append(p)
        out.append("".join(buf) + ("\x1b[K" if rng.random() < 0.3 else ""))
    return "\n".join(out), inp, exp


_HISTORY = [
    ["$ npm run build", "> app@1.4.0 build", "> vite build", "vite v5.4.2 building for production...",
     "✓ 412 modules transformed.", "dist/index.html   0.46 kB │ gzip:  0.30 kB", "✓ built in 3.21s"],
    ["commit 9c1e2f4 (HEAD -> main)", "Author: dev <dev@example.com>", "    fix: retry jitter", "",
     "commit 7a0b3d1", "Author: dev <dev@example.com>", "    chore: bump deps"],
    ["running 14 tests", "test parser::iso_week ... ok", "test parser::leap_day ... ok",
     "test result: ok. 14 passed; 0 failed; 0 ignored"],
    ["  src/app.py:12:5: F401 'os' imported but unused", "  src/app.py:48:1: E302 expected 2 blank lines",
     "Found 2 errors.", "[*] 2 fixable with the `--fix` option."],
]


def t_scrollback(rng: random.Random, text: str, inp: dict[str, Any], exp: dict[str, Any]) -> Result:
    """Unrelated output above what the case shows."""
    hist = rng.choice(_HISTORY)
    return "\n".join(hist + [""]) + "\n" + text, inp, exp


_STALE_SHELL = [
    ["dev@box:~/app$ pip uninstall leftpad", "Found existing installation: leftpad 1.0.0", "Uninstalling leftpad-1.0.0:",
     "  Would remove:", "    /home/dev/.venv/lib/python3.11/site-packages/leftpad/*", "Proceed (Y/n)? y",
     "  Successfully uninstalled leftpad-1.0.0"],
    ["dev@box:~/app$ sudo apt-get install ripgrep", "Need to get 1,338 kB of archives.",
     "Do you want to continue? [Y/n] y", "Setting up ripgrep (13.0.0-4) ...", "Processing triggers for man-db ..."],
    ["dev@box:~/app$ rm -i tmp/cache.json", "rm: remove regular file 'tmp/cache.json'? n", "dev@box:~/app$ ls tmp",
     "cache.json"],
]
"""Answered questions as a shell pane shows them (the command, the question, the answer, output);
:func:`t_stale_prompt` ends them with the shell's prompt back (those commands finished)."""

_STALE_TOOL = [
    ("pip uninstall leftpad", ["Found existing installation: leftpad 1.0.0", "Proceed (Y/n)? y",
                               "  Successfully uninstalled leftpad-1.0.0"]),
    ("npx create-vite@latest web", ["Need to install the following packages:", "create-vite@5.5.2",
                                    "Ok to proceed? (y) y", "Scaffolding project in /home/dev/app/web..."]),
]
"""Answered questions inside a tool's output: what an agent's transcript shows after it ran them."""


def _stale_block(rng: random.Random, agent: Any) -> list[str]:
    """An answered prompt as this kind of pane would really show it further up."""
    if agent == "aider":
        return ["Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y", "", "Running make test",
                "12 passed in 0.84s", ""]
    if agent in ("shell", "unknown", None) or not isinstance(agent, str):
        return rng.choice(_STALE_SHELL)
    cmd, out = rng.choice(_STALE_TOOL)
    if agent == "codex":
        return [f"• Ran {cmd}", *(f"  └ {x}" if i == 0 else f"    {x}" for i, x in enumerate(out)), ""]
    if agent == "claude":
        return [f"⏺ Bash({cmd})", *(f"  ⎿  {x}" if i == 0 else f"     {x}" for i, x in enumerate(out)), ""]
    return [f"$ {cmd}", *(f"  {x}" for x in out), ""]


def t_stale_prompt(rng: random.Random, text: str, inp: dict[str, Any], exp: dict[str, Any]) -> Result:
    """An answered prompt further up, with its output after it: history, not a live prompt. Only
    prompts this kind of pane shows (never another agent's prompt lines)."""
    agent = exp.get("agent") if isinstance(exp.get("agent"), str) else None
    block = _stale_block(rng, agent)
    shell = agent in ("shell", "unknown", None)
    filler = [*rng.choice(_HISTORY)[:4], "dev@box:~/app$"] if shell else []
    return "\n".join(block + filler + [""]) + "\n" + text, inp, exp


_SPINNERS = {
    "claude": ["✻ Pondering… (esc to interrupt · 8s · ↓ 102 tokens)", "✢ Simmering… (esc to interrupt · 41s)",
               "✶ Running tests… (ctrl+c to interrupt · 1m 2s · ↑ 1.1k tokens)"],
    "codex": ["• Working (7s • esc to interrupt)", "• Working (2m 11s • esc to interrupt)"],
    "gemini": ["⠼ Refactoring the parser (esc to cancel, 14s)", "⠧ Reading files (esc to cancel, 3s)"],
    "opencode": ["  ■■■■■⬝⬝⬝  esc interrupt"],
}


def t_busy_footer(rng: random.Random, text: str, inp: dict[str, Any], exp: dict[str, Any]) -> Result:
    """An idle screen with the agent's spinner above its input box: now it is working."""
    agent = exp.get("agent")
    if exp.get("state") != "idle" or not isinstance(agent, str) or agent not in _SPINNERS:
        return None
    if inp.get("run_state"):
        return None
    lines = text.split("\n")
    at = None
    for i in range(len(lines) - 1, -1, -1):
        s = lines[i].strip()
        if agent == "claude" and s.startswith("❯") and i > 0 and _RULE_LINE.match(lines[i - 1].strip()):
            at = i - 1
            break
        if agent == "codex" and s.startswith("› "):
            at = i
            break
        if agent == "gemini" and s.startswith("╭") and i + 1 < len(lines) and "Type your message" in lines[i + 1]:
            at = i
            break
        if agent == "opencode" and s.startswith("┃") and "Ask anything" in s:
            at = i - 1
            break
    if at is None:
        return None
    # A finished-turn line ("Worked for 42s") right above the box belongs to the previous turn.
    spinner = rng.choice(_SPINNERS[agent])
    lines[at:at] = [spinner, ""]
    new = {k: v for k, v in exp.items() if k not in ("decision", "state")}
    new.update({"state": "busy", "decision": "wait", "approves": None, "prompt_kind": None})
    return "\n".join(lines), inp, new


_PARAPHRASES = [
    ("Do you want to proceed?", ["Do you want to continue?", "Would you like to proceed?"]),
    ("Would you like to run the following command?", ["Do you want to run the following command?",
                                                       "Would you like to run this command?"]),
    ("Run shell command?", ["Run this shell command?", "Run the shell command?"]),
    ("Do you want to make this edit to", ["Do you want to apply this edit to"]),
    ("Do you want to continue? [Y/n]", ["Continue? [Y/n]", "Do you want to proceed? [Y/n]"]),
    ("Apply this change?", ["Apply these changes?"]),
]


def t_paraphrase(rng: random.Random, text: str, inp: dict[str, Any], exp: dict[str, Any]) -> Result:
    """The same question in other words (agents change wording between versions)."""
    hits = [(q, alts) for q, alts in _PARAPHRASES if q in text]
    if not hits:
        return None
    q, alts = rng.choice(hits)
    i = text.rfind(q)
    return text[:i] + rng.choice(alts) + text[i + len(q):], inp, exp


_AGENT_ASKS = re.compile(r"^⏺ Bash\(|would you like to run the following command|allow execution of|"
                         r"^\s*△ permission required|^run shell command\?", re.I | re.M)
_CMD_PATTERNS = [re.compile(r"^⏺ Bash\((?P<cmd>.+)\)\s*$", re.M),
                 # GitHub Copilot CLI: "$ Shell <what it is for>" over the command
                 re.compile(r"^\s*\$ Shell\b.*\n\s+(?P<cmd>\S.*?)\s*[┃│]?\s*$", re.M),
                 re.compile(r"^\s*\$ (?P<cmd>.+?)\s*$", re.M)]


def t_agent_style(rng: random.Random, text: str, inp: dict[str, Any], exp: dict[str, Any]) -> Result:
    """The same command approval drawn by another agent: benign ones stay answered (with that
    agent's keys), dangerous ones stay escalated."""
    agent = exp.get("agent")
    # A dangerous case without a stated kind qualifies only when an agent asks to run the command
    # (a shell's own question is dangerous for what its output says, not for the command line).
    command_approval = exp.get("prompt_kind") == "tool_permission" or (
        "prompt_kind" not in exp and exp.get("risk") == "dangerous" and _AGENT_ASKS.search(text) is not None)
    if exp.get("state") != "asking" or not command_approval or inp.get("run_state"):
        return None
    cmd = None
    for rx in _CMD_PATTERNS:
        found = list(rx.finditer(text))
        if found:  # the live dialog's: the last one (commands of earlier turns sit above it: Kilo Code)
            cmd = found[-1].group("cmd").strip()
            break
    if not cmd or "\n" in cmd:
        return None
    other = rng.choice([a for a in styles.AGENT_STYLES if a != agent])
    r = styles.permission_in_style(other, cmd, "Run the command", width=int(inp.get("width", 100)))
    new = dict(exp)
    new["agent"] = other
    new["prompt_kind"] = ["tool_permission", "yes_no"] if other == "aider" else "tool_permission"
    if exp.get("decision") == "answer" and exp.get("approves") is True:
        new["keys"] = [list(k) for k in r.approve_keys]
    elif "keys" in new:
        del new["keys"]
    return r.text, inp, new


TRANSFORMS: dict[str, Transform] = {
    "rewrap": t_rewrap,
    "ansi_noise": t_ansi_noise,
    "scrollback": t_scrollback,
    "stale_prompt": t_stale_prompt,
    "busy_footer": t_busy_footer,
    "paraphrase": t_paraphrase,
    "agent_style": t_agent_style,
}
COMBINABLE = ("rewrap", "ansi_noise", "scrollback", "stale_prompt")
"""Transforms that keep the expectation and can stack on any variant."""


# --------------------------------------------------------------------------- expansion


def case_hash(suite: Suite, case: ScreenCase) -> str:
    """The content of a golden case as expansion read it (its fields and its screen text)."""
    blob = json.dumps(case.model_dump(mode="json"), sort_keys=True, ensure_ascii=False) + "\x00" + \
        suite.screen_text(case)
    return hashlib.sha256(blob.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _variants_of(suite: Suite, case: ScreenCase, n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(f"paneward-expand:{seed}:{suite.name}:{case.id}")
    text = suite.screen_text(case)
    inp = case.input.model_dump(mode="json", exclude={"text", "file"}, exclude_defaults=True)
    inp.setdefault("width", case.input.width)
    exp = case.expected.model_dump(mode="json", include=case.expected.model_fields_set)
    applicable = []
    for name, fn in TRANSFORMS.items():
        probe = fn(random.Random(0), text, dict(inp), dict(exp))
        if probe is not None:
            applicable.append(name)
    plan: list[list[str]] = []
    singles = applicable[:]
    rng.shuffle(singles)
    for k in range(n):
        if k < len(singles):
            plan.append([singles[k]])
        else:
            first = rng.choice(applicable)
            extra = rng.choice([t for t in COMBINABLE if t != first])
            plan.append([first, extra])
    out = []
    seen: set[str] = set()
    origin_hash = case_hash(suite, case)
    for k, names in enumerate(plan):
        t, i2, e2 = text, dict(inp), dict(exp)
        ok = True
        for name in names:
            res = TRANSFORMS[name](rng, t, i2, e2)
            if res is None:
                ok = False
                break
            t, i2, e2 = res
        if not ok:
            continue
        tname = "+".join(names)
        vid = f"{case.id}~{tname}"
        if vid in seen:
            vid = f"{vid}.{k}"
        seen.add(vid)
        variant = {"id": vid, "kind": "screen", "origin": case.id, "origin_hash": origin_hash, "seed": seed,
                   "transform": tname,
                   "tags": [*case.tags, "synthetic", *(f"transform:{x}" for x in names)],
                   "severity": case.severity, "must_pass": case.must_pass,
                   "input": {**i2, "text": t}, "expected": e2}
        out.append(variant)
    return out


def expand_suite(suite: Suite, *, variants_per_case: int, seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, variant cases) for one golden suite. Pure: no IO beyond reading capture files."""
    if suite.expanded:
        raise SuiteError(f"{suite.path} is already an expanded suite", "expand the golden suite it came from")
    if variants_per_case < 1:
        raise SuiteError("--variants-per-case must be at least 1", "pass --variants-per-case 3")
    cases: list[dict[str, Any]] = []
    for case in suite.cases:
        if isinstance(case, ScreenCase):
            cases.extend(_variants_of(suite, case, variants_per_case, seed))
    header = {"suite": f"{suite.name}.s{seed}", "format_version": 1, "version": suite.version,
              "description": f"Synthetic variants of {suite.name} (seed {seed}, {variants_per_case} per case).",
              "kind": "screen", "origin_suite": suite.name, "seed": seed, "variants_per_case": variants_per_case,
              "defaults": {"tags": []}}
    header["origin_hash"] = suite.content_hash
    return header, cases


def render_jsonl(header: dict[str, Any], cases: list[dict[str, Any]]) -> str:
    dump = lambda o: json.dumps(o, sort_keys=True, ensure_ascii=False, separators=(",", ":"))  # noqa: E731
    return "".join(dump(x) + "\n" for x in [header, *cases])


def expanded_path(suite: Suite, seed: int, out_dir: Path | None = None) -> Path:
    base = out_dir or (suite.path.parent / "expanded")
    return base / f"{suite.name}.s{seed}.jsonl"


def write_expanded(suite: Suite, *, variants_per_case: int, seed: int, out_dir: Path | None = None) -> tuple[Path, int]:
    header, cases = expand_suite(suite, variants_per_case=variants_per_case, seed=seed)
    path = expanded_path(suite, seed, out_dir)
    if path.resolve() == suite.path.resolve():
        raise SuiteError(f"refusing to overwrite the golden suite {suite.path}", "choose another --out folder")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_jsonl(header, cases), encoding="utf-8")
    return path, len(cases)


def check_origins(expanded: Suite, golden: Suite) -> None:
    """Refuse an expanded suite whose origin cases changed (or vanished) since it was made."""
    current = {c.id: case_hash(golden, c) for c in golden.cases if isinstance(c, ScreenCase)}
    stale = sorted({c.origin for c in expanded.cases
                    if c.origin is not None and current.get(c.origin) != c.origin_hash})
    if stale:
        h = expanded.header
        more = f" (+{len(stale) - 3} more)" if len(stale) > 3 else ""
        raise SuiteError(f"{expanded.path}: expanded from {golden.name} cases that have changed since: "
                         f"{', '.join(stale[:3])}{more}",
                         f"regenerate it: supervisor eval expand --suite {golden.name} --variants-per-case "
                         f"{h.variants_per_case or 3} --seed {h.seed if h.seed is not None else 0}")
