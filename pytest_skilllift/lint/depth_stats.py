"""The statistics of PluginEval's model layers, as pure functions (no I/O, no pytest).

PluginEval's methodology ("Statistical Methods", "Layer 3 — Monte Carlo", "Elo Ranking"):

* triggering accuracy of the judge = F1 over its ten imagined prompts;
* Cohen's kappa between judges;
* Wilson score interval on activation rates (``pytest_skilllift.report.stats``);
* bootstrap resampling (1000x) for output-quality intervals;
* Clopper–Pearson exact interval on the failure rate;
* ``mc_score = 0.40 × activation_rate + 0.30 × (1 − min(1, CV)) + 0.20 × (1 − failure_rate)
  + 0.10 × efficiency_norm`` with ``efficiency_norm = max(0, 1 − median_tokens / 8000)``;
* Elo from 1500 with K = 32, ``E = 1 / (1 + 10^((R_b − R_a) / 400))``, and a 500-sample
  bootstrap 95 % interval over the matches.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from pytest_skilllift.intervals import EPS, bootstrap_resamples

#: Upper bounds of the anchored rubric bands (F 0–0.19, 0.20–0.39, 0.40–0.59, 0.60–0.79,
#: 0.80–1.00): a score's band is the first bound it stays under.
BAND_BOUNDS: tuple[float, ...] = (0.20, 0.40, 0.60, 0.80)
MC_WEIGHTS: dict[str, float] = {
    "activation_rate": 0.40,
    "consistency": 0.30,  # 1 − min(1, CV)
    "reliability": 0.20,  # 1 − failure_rate
    "efficiency_norm": 0.10,
}
TOKEN_CAP = 8000.0
ELO_START = 1500.0
ELO_K = 32.0
ELO_BOOTSTRAP = 500
QUALITY_BOOTSTRAP = 1000
LEVEL = 0.95


def f1_score(predictions: Sequence[tuple[bool, bool]]) -> tuple[float | None, float | None, float]:
    """``(precision, recall, F1)`` of ``(should_trigger, would_trigger)`` pairs.

    F1 = 2·TP / (2·TP + FP + FN), which stays defined when nothing is predicted to trigger
    (then F1 = 0). Precision is None when nothing is predicted, recall when nothing should.
    """
    tp = sum(1 for s, w in predictions if s and w)
    fp = sum(1 for s, w in predictions if not s and w)
    fn = sum(1 for s, w in predictions if s and not w)
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    denom = 2 * tp + fp + fn
    return precision, recall, (2 * tp / denom if denom else 0.0)


def band(score: float) -> int:
    """Anchored-rubric band of a [0, 1] score: 0 (0–0.19) … 4 (0.80–1.00)."""
    for i, bound in enumerate(BAND_BOUNDS):
        if score < bound - EPS:
            return i
    return len(BAND_BOUNDS)


def clopper_pearson(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Clopper–Pearson exact interval for k successes in n trials; (nan, nan) when n == 0."""
    if n <= 0:
        return (math.nan, math.nan)
    alpha = 1.0 - level
    lo = 0.0 if k == 0 else float(special.betaincinv(k, n - k + 1, alpha / 2))
    hi = 1.0 if k == n else float(special.betaincinv(k + 1, n - k, 1 - alpha / 2))
    return (lo, hi)


def bootstrap_ci(
    values: Sequence[float],
    stat: Callable[[np.ndarray], np.ndarray] | None = None,
    *,
    n_resamples: int = QUALITY_BOOTSTRAP,
    level: float = LEVEL,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of ``stat`` (default: the mean) over ``values``.

    ``stat`` takes a ``(n_resamples, n)`` array and returns one value per row. Seeded, so a
    report is reproducible. None for fewer than two values (nothing to resample).
    """
    arr = np.asarray(values, dtype=float)
    if arr.size < 2:
        return None
    rng = np.random.default_rng(seed)
    samples = bootstrap_resamples(arr, rng, n_resamples)
    out = samples.mean(axis=1) if stat is None else stat(samples)
    tail = (1.0 - level) / 2 * 100
    lo, hi = np.percentile(out, [tail, 100 - tail])
    return (float(lo), float(hi))


def t_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float] | None:
    """Student-t interval of the mean (for a few judges' scores); None for n < 2."""
    n = len(values)
    if n < 2:
        return None
    mean = statistics.fmean(values)
    sd = statistics.stdev(values)
    t = float(special.stdtrit(n - 1, 0.5 + level / 2))
    half = t * sd / math.sqrt(n)
    return (max(0.0, mean - half), min(1.0, mean + half))


def coefficient_of_variation(values: Sequence[float]) -> float | None:
    """Population SD / mean; None for fewer than two values or a zero mean."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if mean <= 0:
        return None
    return statistics.pstdev(values) / mean


@dataclass(frozen=True)
class TokenSummary:
    """Token use of the runs: median, quartiles, IQR, outliers (> Q3 + 1.5 IQR)."""

    n: int
    median: float
    q1: float
    q3: float
    iqr: float
    outliers: int
    efficiency_norm: float  # max(0, 1 − median / 8000)
    efficiency_ci: tuple[float, float] | None


def token_summary(tokens: Sequence[int], seed: int = 0) -> TokenSummary | None:
    """Summary of per-run token counts; None when there are none."""
    if not tokens:
        return None
    arr = np.asarray(tokens, dtype=float)
    q1, median, q3 = (float(x) for x in np.percentile(arr, [25, 50, 75]))
    iqr = q3 - q1
    outliers = int(np.sum(arr > q3 + 1.5 * iqr))
    ci = bootstrap_ci(tokens, lambda s: np.median(s, axis=1), seed=seed)
    eff_ci = None if ci is None else (efficiency_norm(ci[1]), efficiency_norm(ci[0]))
    return TokenSummary(len(tokens), median, q1, q3, iqr, outliers, efficiency_norm(median),
                        eff_ci)


def efficiency_norm(median_tokens: float) -> float:
    """``max(0, 1 − median_tokens / 8000)``."""
    return max(0.0, 1.0 - median_tokens / TOKEN_CAP)


def mc_score(
    activation_rate: float | None,
    cv: float | None,
    failure_rate: float | None,
    efficiency: float | None,
) -> tuple[float | None, list[str]]:
    """The Layer 3 composite and the components it had to leave out.

    With every component measured this is the methodology's formula exactly. A component
    that could not be measured (no tokens recorded, fewer than two judged answers for a CV)
    is left out and the remaining weights renormalised — the same rule the methodology
    applies to blends — and named in the second value. None when nothing was measured.
    """
    parts = {
        "activation_rate": activation_rate,
        "consistency": None if cv is None else 1.0 - min(1.0, cv),
        "reliability": None if failure_rate is None else 1.0 - failure_rate,
        "efficiency_norm": efficiency,
    }
    num = den = 0.0
    dropped: list[str] = []
    for key, value in parts.items():
        if value is None:
            dropped.append(key)
            continue
        num += MC_WEIGHTS[key] * value
        den += MC_WEIGHTS[key]
    if den == 0:
        return None, dropped
    return num / den, dropped


# ---------------------------------------------------------------------------------------------
# Elo


def elo_expected(ra: float, rb: float) -> float:
    """``E(A vs B) = 1 / (1 + 10^((R_b − R_a) / 400))``."""
    return 1.0 / (1.0 + float(10.0 ** ((rb - ra) / 400.0)))


def elo_update(ra: float, rb: float, actual: float, k: float = ELO_K) -> tuple[float, float]:
    """Both ratings after one match; ``actual`` is A's score (1 win, 0.5 draw, 0 loss)."""
    ea = elo_expected(ra, rb)
    delta = k * (actual - ea)
    return ra + delta, rb - delta


def elo_replay(
    matches: Sequence[tuple[str, float]],
    *,
    start: float = ELO_START,
    k: float = ELO_K,
    opponents: dict[str, float] | None = None,
) -> float:
    """The skill's rating after playing ``matches`` in order.

    Each match is ``(opponent_id, actual)`` from the skill's side. Every rating starts at
    ``start`` (opponents too, unless ``opponents`` gives theirs) and both sides are updated.
    """
    rating = start
    others = dict(opponents or {})
    for opp, actual in matches:
        r_opp = others.get(opp, start)
        rating, others[opp] = elo_update(rating, r_opp, actual, k)
    return rating


def elo_bootstrap_ci(
    matches: Sequence[tuple[str, float]],
    *,
    n_resamples: int = ELO_BOOTSTRAP,
    level: float = LEVEL,
    seed: int = 0,
    start: float = ELO_START,
    k: float = ELO_K,
) -> tuple[float, float] | None:
    """Percentile interval of the final rating over matches resampled with replacement."""
    if len(matches) < 2:
        return None
    rng = np.random.default_rng(seed)
    order = np.arange(len(matches))
    finals = []
    for _ in range(n_resamples):
        picks = bootstrap_resamples(order, rng, 1)[0]
        finals.append(elo_replay([matches[i] for i in picks], start=start, k=k))
    tail = (1.0 - level) / 2 * 100
    lo, hi = np.percentile(finals, [tail, 100 - tail])
    return (float(lo), float(hi))
