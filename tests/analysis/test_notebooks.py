"""Every notebook runs top to bottom (nbclient, a real kernel) against a warehouse filled by
real supervised runs, shows at least one real image, and is stored clean (no outputs, a tagged
parameters cell, no logic of its own)."""

from __future__ import annotations

import ast
import base64
import contextlib
import io
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from tests.analysis.conftest import FilledHome
from tests.conftest import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
EXPECTED = {"friction.ipynb", "candidate-review.ipynb", "canary.ipynb", "run-timeline.ipynb", "evals.ipynb"}
LOGIC = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.For, ast.While, ast.comprehension)
"""What a notebook's cells must not contain: logic lives in ``supervisor.analysis``."""
FORBIDDEN_IMPORTS = {"matplotlib", "duckdb"}
"""Figures come from the package (and the kernel keeps its inline backend); SQL goes through it too."""


def parameters(name: str, home: FilledHome) -> dict[str, Any]:
    """Values injected after each notebook's parameters cell (as papermill does)."""
    return {
        "run-timeline.ipynb": {"run_id": home.run_ids["shop"][4:16]},  # a prefix: the run with a human's answer
        "candidate-review.ipynb": {"candidate": str(home.candidate_path)},
        "canary.ipynb": {"candidate": home.candidate.name, "every": "1 minute"},
    }.get(name, {})


def pngs(nb: Any) -> list[bytes]:
    return [base64.b64decode(o["data"]["image/png"]) for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if "image/png" in o.get("data", {})]


def varied(png: bytes) -> bool:
    """Whether an image's pixels are not all one colour."""
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    return any(lo != hi for lo, hi in img.getextrema())


def execute(path: Path, home: FilledHome, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, float]:
    nb = nbformat.read(path, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    injected = "\n".join(f"{k} = {v!r}" for k, v in parameters(path.name, home).items())
    if injected:
        cell = nbformat.v4.new_code_cell(injected, metadata={"tags": ["injected-parameters"]})
        nb.cells.insert(at + 1, cell)
    monkeypatch.setenv("SUPERVISOR_HOME", str(home.settings.home))
    monkeypatch.delenv("SUPERVISOR_WAREHOUSE", raising=False)
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    return nb, time.perf_counter() - t0


@contextlib.contextmanager
def _home_env(home: Path) -> Iterator[None]:
    """SUPERVISOR_HOME for the kernel a notebook client starts (it inherits this process's environment)."""
    saved = {k: os.environ.get(k) for k in ("SUPERVISOR_HOME", "SUPERVISOR_WAREHOUSE")}
    os.environ["SUPERVISOR_HOME"] = str(home)
    os.environ.pop("SUPERVISOR_WAREHOUSE", None)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def execute_in(path: Path, home: Path, params: dict[str, Any]) -> Any:
    """Run a notebook top to bottom against ``home``'s warehouse with ``params`` injected after its
    parameters cell (errors are kept in the outputs, for the caller to check)."""
    nb = nbformat.read(path, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    if params:
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell("\n".join(f"{k} = {v!r}" for k, v in params.items()),
                                                          metadata={"tags": ["injected-parameters"]}))
    with _home_env(home):
        NotebookClient(nb, timeout=180, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(REPO)}}).execute()
    return nb


def test_every_notebook_is_there() -> None:
    assert {p.name for p in NOTEBOOKS} >= EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_clean(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), "stored with outputs"
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "one cell tagged `parameters`"
    for c in code:
        for node in ast.walk(ast.parse(c.source)):
            assert not isinstance(node, LOGIC), f"logic in a notebook cell ({type(node).__name__}):\n{c.source}"
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
                assert not any(str(n).split(".")[0] in FORBIDDEN_IMPORTS for n in names), c.source


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes_and_shows_a_real_plot(path: Path, filled_home: FilledHome,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    nb, seconds = execute(path, filled_home, monkeypatch)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
    images = pngs(nb)
    assert images and any(varied(p) for p in images), f"{path.name} shows no image"
    print(f"{path.name}: executed in {seconds:.1f}s, {len(images)} images")


NOTHING_YET = {"canary.ipynb": "No candidate to show", "candidate-review.ipynb": "No candidate to show",
               "run-timeline.ipynb": "No run to show"}
"""What a notebook that needs something the empty warehouse lacks says instead of an exception."""


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_on_an_empty_warehouse_explains_and_draws_no_data_images(path: Path, tmp_path: Path) -> None:
    """A fresh home (no runs, no warehouse file yet): no error; what is missing is a short
    explanation with the command that creates it; every plot cell draws one image with real pixels
    (the explicit "no data" figure: each plot function draws it for an empty frame, see
    tests/analysis/test_reports.py)."""
    home = tmp_path / "fresh-home"
    home.mkdir()
    nb = execute_in(path, home, {})
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
    plots = [c for c in nb.cells if c.cell_type == "code" and "analysis.plot_" in c.source]
    for c in plots:
        images = [base64.b64decode(o["data"]["image/png"]) for o in c.get("outputs", [])
                  if "image/png" in o.get("data", {})]
        assert len(images) == 1 and varied(images[0]), c.source
    shown = "\n".join(str(o.get("data", {}).get("text/markdown", "")) + str(o.get("text", ""))
                      for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    if path.name in NOTHING_YET:
        assert NOTHING_YET[path.name] in shown and "make demo" in shown, shown[:3000]
    assert "datetime.datetime(" not in shown and "{'" not in shown, "no reprs of dicts or datetimes"
