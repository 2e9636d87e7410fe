"""Compile supervisor/classify.py with mypyc (about 1.6x faster: bench/classify.py) when we can.

Everything else is in pyproject.toml. The pure-Python module is always installed too, and is what
runs when mypyc is missing, when PANEWARD_PURE_PYTHON is set, or when compiling fails for any
reason: the install never fails because of mypyc. Editable installs build the extension in place
(supervisor/classify*.so) and a stale one would shadow an edited classify.py, so `make` reinstalls
when classify.py changes and tests/test_classify_compiled.py fails on a compiled module older than
its source.
"""

from __future__ import annotations

import glob
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

COMPILED = ["supervisor/classify.py"]


def _warn(msg: str) -> None:
    print(f"paneward: {msg}; using pure-Python supervisor/classify.py", file=sys.stderr)


def _remove_built() -> None:
    """Drop extensions an earlier editable install built in place: they would shadow the .py."""
    here = os.path.dirname(os.path.abspath(__file__))
    for path in COMPILED:
        stem = os.path.join(here, os.path.splitext(path)[0])
        for built in glob.glob(stem + ".*.so") + glob.glob(stem + "__mypyc.*.so"):
            os.remove(built)


def _ext_modules() -> list:
    if os.environ.get("PANEWARD_PURE_PYTHON"):
        _remove_built()
        return []
    try:
        from mypyc.build import mypycify
    except Exception:
        _warn("mypyc is not importable")
        _remove_built()
        return []
    try:
        return mypycify(COMPILED, opt_level="3")
    except BaseException as exc:  # mypy type errors exit via SystemExit
        _warn(f"mypyc could not compile ({exc!r})")
        _remove_built()
        return []


class OptionalBuildExt(build_ext):
    """Builds the mypyc extensions, or none of them: a partial build would break the import."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            _warn(f"building the mypyc extension failed ({exc!r})")
            _remove_built()
            self.extensions = []

    def get_outputs(self) -> list[str]:
        return [p for p in super().get_outputs() if os.path.exists(p)] if self.extensions else []


setup(ext_modules=_ext_modules(), cmdclass={"build_ext": OptionalBuildExt})
