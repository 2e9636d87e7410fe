"""`supervisor spec new|validate|approve|show|import`: write, check, approve and import workflow specs."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from supervisor.cli import console, echo
from supervisor.cli.output import print_json
from supervisor.errors import EXIT_CHECK_FAILED, UsageError
from supervisor.settings import user_name
from supervisor.workflow.spec import approve_spec_text, load_spec, new_spec_text


@click.group("spec")
def spec() -> None:
    """Workflow specs: the plan a supervised run is held to (steps, verifiers, acceptance)."""


@spec.command("new")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--name", default=None, help="The spec's name (default: the file name).")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
def new_cmd(path: Path, name: str | None, force: bool) -> None:
    """Write a draft spec to PATH to edit, validate and approve."""
    if path.exists() and not force:
        raise UsageError(f"{path} already exists", "pick another path or pass --force")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new_spec_text(name or path.stem, str(path)), encoding="utf-8")
    console.print(f"wrote draft spec {path}; edit it, then `supervisor spec validate {path}` and "
                  f"`supervisor spec approve {path} --by NAME`")


@spec.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--require-approved", is_flag=True, help="Also fail (exit 1) when a spec is a draft.")
@click.pass_context
def validate_cmd(ctx: click.Context, paths: tuple[Path, ...], require_approved: bool) -> None:
    """Check specs; errors name the file and line. Exit 2 on an invalid spec."""
    drafts = 0
    for p in paths:
        s = load_spec(p)
        status = "approved" if s.is_approved else ("changed since approval" if s.approval.status == "approved"
                                                   else "draft")
        drafts += status != "approved"
        console.print(f"{p}: ok ({len(s.steps)} steps, {status}, {s.content_hash})")
    if require_approved and drafts:
        ctx.exit(EXIT_CHECK_FAILED)


@spec.command("approve")
@click.argument("path", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--by", "by", default=None, help="Who approves (default: the current user).")
def approve_cmd(path: Path, by: str | None) -> None:
    """Mark PATH approved by someone, bound to its current content."""
    who = by or user_name("unknown")
    text = path.read_text(encoding="utf-8")
    new = approve_spec_text(text, who, str(path))
    path.write_text(new, encoding="utf-8")
    s = load_spec(path)
    console.print(f"approved {path} by {who} ({s.content_hash})")


@spec.command("show")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the validated spec as JSON.")
def show_cmd(path: Path, as_json: bool) -> None:
    """Print a validated spec with defaults filled in (verifier ids, finish policy)."""
    s = load_spec(path)
    data = s.model_dump(mode="json")
    data["content_hash"] = s.content_hash
    data["runnable"] = s.is_approved
    if as_json:
        print_json(data)
        return
    console.print(f"[bold]{s.name}[/] ({s.content_hash}, {'approved' if s.is_approved else 'draft'})")
    if s.goal:
        console.print(f"goal: {s.goal}")
    for i, step in enumerate(s.steps, 1):
        console.print(f"{i}. [bold]{step.id}[/] ({step.kind}) {step.objective}")
        for v in step.verify:
            console.print(f"     verify {v.id}: {v.type} " + _short(v.model_dump(exclude={'id', 'type', 'description'},
                                                                               exclude_defaults=True)))
        for b in step.branches:
            console.print(f"     branch {b.id} -> {b.next}")
    console.print(yaml.safe_dump({"acceptance": data["acceptance"], "finish_policy": data["finish_policy"]},
                                 sort_keys=False).rstrip())


def _short(d: dict[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())




@spec.command("import")
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the converted spec (default: SOURCE's name with .imported.yaml).")
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
def import_cmd(source: Path, output: Path | None, force: bool) -> None:
    """Convert a thin-supervisor spec (SOURCE) into a draft spec here, and say what changed."""
    from supervisor.errors import SpecError
    from supervisor.workflow.thin_import import import_thin_spec
    from supervisor.yamlio import read_text

    out = output or source.with_name(source.stem + ".imported.yaml")
    if out.resolve() == source.resolve():
        raise UsageError("the output would overwrite the thin-supervisor spec", "pass another path with -o")
    if out.exists() and not force:
        raise UsageError(f"{out} already exists", "pick another path with -o or pass --force")
    text = read_text(source, SpecError, "spec file", "give the path of a thin-supervisor spec YAML file")
    imported = import_thin_spec(text, str(source))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(imported.text, encoding="utf-8")
    echo(f"wrote draft spec {out} ({len(imported.spec.steps)} steps, {imported.spec.content_hash}); "
               f"{len(imported.changes)} changes:")
    for change in imported.changes:
        echo(f"  - {change}")
    echo(f"review it, then `supervisor spec approve {out} --by NAME`")
