"""Reading user-written YAML (policies, specs, suites) with errors that name the file and line.

One place turns a YAML syntax error or a pydantic validation error into a one-line
message ``FILE:LINE: field.path: what is wrong``, so every file the user writes gets the
same kind of error.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from supervisor.errors import InputError

# libyaml's parser when PyYAML was built with it (its wheels are): the same documents and marks,
# about six times faster than the pure-Python one on the large suite files.
try:
    from yaml import CSafeLoader as SafeLoader
except ImportError:  # a PyYAML built without libyaml
    from yaml import SafeLoader  # type: ignore[assignment]


def read_text(path: str | Path, error: type[InputError], what: str, fix: str) -> str:
    """The UTF-8 text of ``path``; a missing or unreadable file raises ``error`` naming ``what``."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise error(f"{what} {p} not found", fix) from exc
    except UnicodeDecodeError as exc:
        raise error(f"{what} {p} is not UTF-8 text", "save it as UTF-8") from exc
    except OSError as exc:
        raise error(f"cannot read {what} {p}: {exc.strerror}", "check the path and permissions") from exc


def parse_yaml(text: str, source: str, error: type[InputError]) -> tuple[Any, yaml.Node | None]:
    """Parse YAML text; return the data and the node tree (for line numbers)."""
    try:
        root = yaml.compose(text, Loader=SafeLoader)
        data = yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise yaml_error(exc, source, error) from exc
    return data, root


def yaml_error(exc: yaml.YAMLError, source: str, error: type[InputError]) -> InputError:
    """The one-line error for a YAML syntax error: ``SOURCE:LINE: not valid YAML: problem``."""
    mark = getattr(exc, "problem_mark", None)
    where = f"{source}:{mark.line + 1}" if mark is not None else source
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return error(f"{where}: not valid YAML: {problem}", "fix the YAML syntax at that line")


def line_of(root: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the deepest YAML node on the path ``loc`` (a pydantic error location;
    parts that are not keys, such as a union's tag, are skipped)."""
    node = root
    if node is None:
        return None
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            found = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part), None)
            if found is not None:
                node = found
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
    return int(node.start_mark.line) + 1


def format_validation(exc: ValidationError, root: yaml.Node | None, source: str, *,
                      skip_parts: Collection[str] = (), whole: str = "file", limit: int = 3) -> str:
    """``source:line: field: message`` for the first ``limit`` errors, joined on one line."""
    parts = []
    errors = exc.errors()
    for err in errors[:limit]:
        loc = tuple(err["loc"])
        line = line_of(root, loc)
        where = f"{source}:{line}" if line else source
        field = ".".join(str(x) for x in loc if not (isinstance(x, str) and x in skip_parts)) or whole
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {field}: {msg}")
    more = f" (+{len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(parts) + more
