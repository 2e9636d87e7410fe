"""The statistics the workbench reports, each with its uncertainty, in one place.

- :func:`wilson_interval`: a 95% interval for a proportion (pass rates, win rates);
- :func:`sign_test_p`: exact two-sided sign test over wins and losses (ties excluded);
- :func:`origin_cluster` and :func:`cluster_outcomes`: pairs that come from one origin case
  (its synthetic variants, its captures at other widths) are one observation, not many: a
  golden case expanded 30 times is one cluster, so an overfit fix to one case cannot look like
  thirty independent wins;
- :func:`cluster_bootstrap_interval`: a paired cluster bootstrap of the mean net score per
  cluster (seeded), the interval reported beside the sign test;
- :func:`mann_whitney_u`: the two-sided Mann-Whitney U test (normal approximation with a tie
  correction, exact for small samples without ties), used by limited-rollout analysis.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from itertools import combinations

Z95 = 1.959963984540054


def wilson_interval(wins: int, n: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval for a proportion ``wins / n`` (``(0, 1)`` when n is 0)."""
    if n <= 0:
        return (0.0, 1.0)
    p = wins / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, center - half), min(1.0, center + half))


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test: P(a split at least this uneven | no difference). Ties excluded."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


# --------------------------------------------------------------------------- clusters

_WIDTH = re.compile(r"\.w\d+$")
_SEED = re.compile(r"\.s\d+$")


def origin_cluster(suite: str, case_id: str, origin: str | None = None) -> str:
    """The origin case a pair belongs to: the golden suite (``claude.s7`` -> ``claude``) and the
    case id without transform (``~rewrap+ansi_noise``) or width (``.w120``) suffixes."""
    base = (origin or case_id).split("~", 1)[0]
    return f"{_SEED.sub('', suite.removeprefix('expanded/'))}/{_WIDTH.sub('', base)}"


def cluster_outcomes(pairs: Iterable[tuple[str, int]]) -> dict[str, int]:
    """Net score per cluster from (cluster, +1 win / -1 loss / 0 tie) pairs."""
    out: dict[str, int] = defaultdict(int)
    for cluster, score in pairs:
        out[cluster] += score
    return dict(out)


def cluster_bootstrap_interval(net: Sequence[float], *, seed: int, rounds: int = 2000,
                               level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the mean per-cluster net score (wins minus losses, each cluster's
    sum scaled to [-1, 1]) under a paired bootstrap that resamples whole clusters. The draws are
    made in one vectorised, seeded sample (a gate's 2,000 rounds over 2,000 clusters took over ten
    seconds of CPU drawn one by one in Python)."""
    if not net:
        return (0.0, 0.0)
    import hashlib

    import polars as pl

    n = len(net)
    stream = int.from_bytes(hashlib.sha256(f"paneward-bootstrap:{seed}".encode()).digest()[:8], "big")
    draws = pl.Series("v", [float(x) for x in net], dtype=pl.Float64).sample(
        n * rounds, with_replacement=True, seed=stream)
    means = sorted(pl.DataFrame({"v": draws}).with_row_index("i").group_by(pl.col("i") // n)
                   .agg(pl.col("v").mean())["v"].to_list())
    lo = means[int((1 - level) / 2 * rounds)]
    hi = means[min(rounds - 1, int((1 + level) / 2 * rounds))]
    return (lo, hi)


# --------------------------------------------------------------------------- Mann-Whitney U


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Mid-ranks (1-based) and the sizes of tied groups."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        mid = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = mid
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """(U of ``x``, two-sided p-value) for "x and y come from the same distribution". Exact for
    small samples without ties (every split enumerated); otherwise the normal approximation with
    a tie correction and a continuity correction."""
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        return (0.0, 1.0)
    ranks, ties = _ranks([*x, *y])
    r1 = sum(ranks[:n1])
    u1 = r1 - n1 * (n1 + 1) / 2
    mean = n1 * n2 / 2
    if not ties and math.comb(n1 + n2, n1) <= 20_000:
        total = n1 + n2
        count_le = count_ge = 0
        splits = 0
        for pick in combinations(range(1, total + 1), n1):
            u = sum(pick) - n1 * (n1 + 1) / 2
            splits += 1
            count_le += u <= u1
            count_ge += u >= u1
        return (u1, min(1.0, 2 * min(count_le, count_ge) / splits))
    n = n1 + n2
    tie_term = sum(t ** 3 - t for t in ties) / (n * (n - 1)) if n > 1 else 0.0
    var = n1 * n2 / 12 * ((n + 1) - tie_term)
    if var <= 0:
        return (u1, 1.0)
    z = (abs(u1 - mean) - 0.5) / math.sqrt(var)
    p = math.erfc(max(0.0, z) / math.sqrt(2))
    return (u1, min(1.0, p))
