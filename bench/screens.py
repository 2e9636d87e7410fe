"""Screen normalisation benchmark: seconds per input size for the inputs that used to be
quadratic (a long line rewritten by carriage returns: 1 MB took 6.6 s and 2 MB 23.9 s when
each CR copied the line) and the other paths (backspaces, SGR-heavy capture text, reverse
video, the terminal emulator). Linear code roughly doubles its time when the input doubles;
the last column prints that ratio.

    .venv/bin/python bench/screens.py [--max-mb 4]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from supervisor.screen import make_screen, normalize, render_stream  # noqa: E402


def _inputs(n: int) -> dict[str, tuple[Callable[[str], object], str]]:
    return {
        "CR rewrites of a long line": (normalize, "x" * (n // 2) + "\ry" * (n // 4)),
        "progress bar on one line": (normalize, ("progress 99%\r" * (n // 13 + 1))[:n]),
        "backspaces over a long line": (normalize, "x" * (n // 2) + "\b" * (n // 2)),
        "SGR-coloured capture rows": (normalize, ("\x1b[31mword\x1b[0m \x1b[2Cx\n" * (n // 20))),
        "reverse-video rows (make_screen)": (make_screen, ("a \x1b[7mb\x1b[27m c\n" * (n // 16))),
        "raw stream through the emulator": (lambda r: render_stream(r, width=200, height=50),
                                            ("\x1b[H" + "x" * (n // 2) + "\ry" * (n // 4))),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-mb", type=float, default=4.0)
    args = ap.parse_args()
    sizes = [0.5]
    while sizes[-1] * 2 <= args.max_mb:
        sizes.append(sizes[-1] * 2)
    print(f"{'input':36} " + " ".join(f"{s:>7g} MB" for s in sizes) + "   x per doubling")
    for name in _inputs(1):
        times: list[float] = []
        for mb in sizes:
            fn, raw = _inputs(int(mb * 1_000_000))[name]
            t0 = time.perf_counter()
            fn(raw)
            times.append(time.perf_counter() - t0)
        ratio = (times[-1] / times[0]) ** (1 / max(len(times) - 1, 1)) if times[0] > 0 else float("nan")
        print(f"{name:36} " + " ".join(f"{t:>8.2f}s" for t in times) + f"   {ratio:.2f}", flush=True)


if __name__ == "__main__":
    main()
