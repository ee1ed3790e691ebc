"""Intervals and agreement, the one home of each formula (pure: no I/O, no pytest, no numpy).

* :func:`wilson_interval` — a proportion's Wilson score interval (the scorecard's trigger and
  activation rates, the judge-check rates, the lint report's Monte Carlo rates);
  :func:`wilson_bounds` the same, None when there are no trials;
* :func:`newcombe_interval` — a difference of two proportions (Newcombe's hybrid score method,
  built on two Wilson intervals; the custom checks' lift);
* :func:`cohen_kappa` / :func:`kappa` — Cohen's kappa of two raters (the judge against
  people in ``skilllift judge-check``, judges against each other in ``skilllift score``);
* :func:`krippendorff_alpha` — Krippendorff's alpha (nominal) of several raters with missing
  values (a panel of judges over rubric items);
* :func:`bootstrap_resamples` — the nonparametric bootstrap's draw (Efron 1979): resamples
  of the data's rows with replacement, which every percentile bootstrap here takes (the
  paired lift's over prompts, the static analysis' quality, token and Elo bounds).

**Kappa's undefined case, decided once.** ``(p_o − p_e) / (1 − p_e)`` has no value when there
is nothing to rate or when the chance agreement ``p_e`` is 1 — both raters gave one and the
same category to every item, so agreement cannot tell skill from chance. Both are ``None``
(reported as "n/a", never as 1 or 0), with ``p_e`` counted as 1 within :data:`KAPPA_EPS`.
The statistic each bootstrap computes stays with it (``report.stats`` for the paired lift and
the prompt-cluster rate, which also draw multinomial counts when few distinct values make that
cheaper; ``lint.depth_stats`` for the quality and Elo bounds); the draw is this one.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from types import ModuleType

    import numpy as np
    import numpy.typing as npt

#: Two scores are equal within this: composites are sums of tenths, coverages ratios of small
#: integers (0.1 + 0.7 is 0.7999999999999999; float noise must not flip a verdict or a gate).
EPS = 1e-9
#: Chance agreement this close to 1 counts as 1 (kappa undefined): float noise, not data.
KAPPA_EPS = 1e-12


def scipy_special() -> ModuleType:
    """scipy.special, imported on first use.

    scipy.special, not scipy.stats: the same distribution functions (stdtrit = t quantile,
    ndtri = normal quantile, nctdtr = noncentral t CDF) at a third of the import time.  Still
    ≈ 0.25 s of CPU, so it is not imported with this module: not by whoever only needs the
    aggregation, and a pytest session imports it while its runs go (``summarize.warm_imports``).
    """
    from scipy import special

    return cast("ModuleType", special)


def wilson_interval(k: int, n: int, *, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion k/n; (nan, nan) when n == 0."""
    if n <= 0:
        return (math.nan, math.nan)
    z = float(scipy_special().ndtri(0.5 + level / 2.0))
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def wilson_bounds(k: int, n: int) -> tuple[float, float] | None:
    """:func:`wilson_interval` at 95 %, or None when there is nothing to bound (n = 0): the
    one "no trials, no interval" rule every rate with an interval follows."""
    return wilson_interval(k, n) if n > 0 else None


def newcombe_interval(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float]:
    """95% interval of p2 − p1 (Newcombe's hybrid score method); (nan, nan) if n1 or n2 is 0."""
    if n1 <= 0 or n2 <= 0:
        return (math.nan, math.nan)
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1)
    l2, u2 = wilson_interval(k2, n2)
    d = p2 - p1
    return (d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2),
            d + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2))


def kappa(observed: float, expected: float) -> float | None:
    """Cohen's kappa from the observed and the chance agreement; None when undefined
    (chance agreement 1, see the module docstring)."""
    if expected >= 1.0 - KAPPA_EPS:
        return None
    return (observed - expected) / (1.0 - expected)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters' categories over the same items.

    ``(p_o − p_e) / (1 − p_e)``; None when undefined (no items, or both raters used one and
    the same category for everything, so chance agreement is already 1).
    """
    if len(a) != len(b):
        raise ValueError(f"kappa needs paired ratings; got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return None
    po = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    cats = set(a) | set(b)
    pe = sum((list(a).count(c) / n) * (list(b).count(c) / n) for c in cats)
    return kappa(po, pe)


def krippendorff_alpha(units: Sequence[Sequence[Hashable]]) -> float | None:
    """Krippendorff's alpha, nominal, of several raters over units (Krippendorff 2011,
    "Computing Krippendorff's Alpha-Reliability").

    ``units[u]`` holds the values the raters gave unit ``u`` (a rater with no value is simply
    absent); units with fewer than two values are not pairable and left out. From the
    coincidences ``o_ck = Σ_u (pairs (c, k) in u) / (m_u − 1)``:
    ``α = 1 − (n − 1) · Σ_{c≠k} o_ck / Σ_{c≠k} n_c · n_k``. None when undefined (no pairable
    unit, or every value the same category: no disagreement is expected by chance)."""
    from collections import Counter

    disagree = 0.0
    totals: Counter[Hashable] = Counter()
    for values in units:
        m = len(values)
        if m < 2:
            continue
        counts = Counter(values)
        # Ordered pairs of different values within the unit: m² − Σ count², weighted 1/(m−1).
        disagree += (m * m - sum(c * c for c in counts.values())) / (m - 1)
        totals.update(counts)
    n = sum(totals.values())
    expected = n * n - sum(c * c for c in totals.values())  # Σ_{c≠k} n_c · n_k
    if n < 2 or expected <= 0:
        return None
    return 1.0 - (n - 1) * disagree / expected


def bootstrap_resamples(data: np.ndarray, rng: np.random.Generator, n_resamples: int, *,
                        dtype: npt.DTypeLike | None = None) -> np.ndarray:
    """``n_resamples`` bootstrap resamples of ``data`` (a numpy array; resampled along its
    first axis): shape ``(n_resamples, len(data), …)``, each row drawn with replacement, one
    ``rng.integers`` draw (so a seeded ``numpy.random.Generator`` gives the same resamples
    every time). ``dtype`` is the indices' integer type (numpy's default int64 when None;
    int32 halves a large draw's memory)."""
    n = len(data)
    size = (n_resamples, n)
    idx = (rng.integers(0, n, size=size) if dtype is None
           else rng.integers(0, n, size=size, dtype=dtype))
    return data[idx]
