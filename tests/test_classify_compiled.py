"""supervisor/classify.py may run compiled by mypyc (setup.py). An editable install builds the
extension next to the source, where a stale one would silently shadow an edited classify.py:
`make test` reinstalls when classify.py changes, and this test catches a run that skipped that."""

from __future__ import annotations

from pathlib import Path

import supervisor.classify as C


def test_compiled_classify_is_not_older_than_its_source() -> None:
    loaded = Path(C.__file__ or "")
    if loaded.suffix == ".py":
        return  # pure Python (no mypyc, or PANEWARD_PURE_PYTHON=1): nothing can be stale
    source = loaded.parent / "classify.py"
    if not source.exists():
        return  # a wheel install without the source beside it
    assert loaded.stat().st_mtime >= source.stat().st_mtime, (
        f"{loaded.name} is older than classify.py: the compiled module shadows your edits; "
        "run `make install` (or `.venv/bin/pip install -e .`) to rebuild it"
    )
