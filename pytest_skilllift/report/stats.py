"""The scoring math of qdrant/skills SCORING.md as pure numpy/scipy functions (no I/O, no pytest).

Levels (Aggregation): item → prompt×rep (three metrics + composite) → prompt (mean over
reps, min–max kept as the stability signal) → cell (flat macro mean over prompts).

Everything is dense: a week is an array of shape ``(P, M, C, R)`` at the prompt×rep level
(prompts × models × conditions × rep slots) filled by ``np.bincount``, and ``(P, M, C)``
at the prompt level (C conditions: the lift's two unless more arms run), with NaN meaning
"not scored".  That keeps a million-item week to a handful of vectorised passes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from pytest_skilllift.intervals import EPS, bootstrap_resamples

# Re-exported for the sections (``stats.scipy_special()``); their home is ``intervals``.
from pytest_skilllift.intervals import scipy_special as scipy_special
from pytest_skilllift.intervals import wilson_interval as wilson_interval

#: composite = clamp(must + BONUS_WEIGHT·bonus − AVOID_PENALTY·avoid, 0, 1)  (Scoring Math)
BONUS_WEIGHT = 0.10
AVOID_PENALTY = 0.25
#: Below this many paired prompts the scorecard warns that the SE is unreliable.
LOW_SAMPLE_PROMPTS = 5
#: Runs of history (including the current one) before a week-over-week delta is shown.
WOW_MIN_RUNS = 4
#: The methodology's placeholder, verbatim.
WOW_PENDING_TEXT = "Will be computed after four runs."
MUST, BONUS, AVOID = 0, 1, 2
NO, WITH = 0, 1


def composite(must: np.ndarray, bonus: np.ndarray, avoid: np.ndarray) -> np.ndarray:
    """clamp(must + 0.10·bonus − 0.25·avoid, 0, 1); NaN where ``must`` is NaN.

    A NaN ``bonus`` (the rubric has no bonus items) contributes 0, as in the reference.
    """
    raw = must + BONUS_WEIGHT * np.nan_to_num(bonus, nan=0.0) - AVOID_PENALTY * avoid
    return cast("np.ndarray", np.clip(raw, 0.0, 1.0))


@dataclass(frozen=True)
class Aggregates:
    """All quality levels of one week.  Shapes: reps ``(P, M, C, R)``, prompts ``(P, M, C)``,
    cells ``(M, C)`` with C conditions (2 unless more arms are asked for).  NaN = not
    scored."""

    rep_must: np.ndarray
    rep_bonus: np.ndarray
    rep_avoid: np.ndarray
    rep_composite: np.ndarray
    must: np.ndarray
    bonus: np.ndarray
    avoid: np.ndarray
    composite: np.ndarray
    must_min: np.ndarray
    must_max: np.ndarray
    composite_min: np.ndarray
    composite_max: np.ndarray
    n_reps: np.ndarray  # scored reps per prompt (P, M, C)
    cell_must: np.ndarray
    cell_bonus: np.ndarray
    cell_avoid: np.ndarray
    cell_composite: np.ndarray
    cell_n: np.ndarray  # prompts with a score in the cell (M, C)
    #: prompt×rep that had items but no gradeable must: unscored, counted.
    n_unscored_reps: int
    #: prompt×rep whose bonus items were all ungraded: its composite is scored on its graded
    #: items (no bonus term, as a rubric without bonus items), counted.
    n_bonus_ungraded_reps: int
    rep_values: np.ndarray  # the rep number of each rep slot (R,)


def _mean_last(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NaN-ignoring mean over the last axis, and the count of non-NaN values."""
    ok = ~np.isnan(a)
    n = ok.sum(axis=-1)
    s = np.where(ok, a, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, s / np.maximum(n, 1), np.nan), n


def aggregate(
    prompt: np.ndarray,
    model: np.ndarray,
    condition: np.ndarray,
    rep: np.ndarray,
    item_type: np.ndarray,
    credit: np.ndarray,
    *,
    n_prompts: int,
    n_models: int,
    n_conditions: int = 2,
) -> Aggregates:
    """Aggregate item credits to prompt×rep, prompt and cell levels.

    Codes are indices (-1 = unusable row, ignored); ``condition`` 0 = no-skill,
    1 = with-skill, further arms up to ``n_conditions`` − 1 (``model.ARMS``; rows of a
    condition beyond it are ignored); ``item_type`` 0 must, 1 bonus, 2 avoid; ``credit`` is
    1.0/0.0 per graded item and NaN for an ungraded one (excluded, never counted as zero).
    """
    P, M, C = max(n_prompts, 0), max(n_models, 0), max(n_conditions, 2)
    ok = ((prompt >= 0) & (model >= 0) & (condition >= 0) & (condition < C) & (rep >= 0)
          & (item_type >= 0))
    rep_ok = rep[ok]
    if rep_ok.size and rep_ok.max() < 4096:
        # Reps are small integers: use them as slots directly (no sort needed).
        present = np.bincount(rep_ok, minlength=int(rep_ok.max()) + 1) > 0
        rep_values = np.flatnonzero(present)
        slot_of = np.cumsum(present) - 1
        rslot = np.full(rep.shape, -1, np.int64)
        rslot[ok] = slot_of[rep_ok]
    else:
        rep_values, inv = np.unique(rep_ok, return_inverse=True)
        rslot = np.full(rep.shape, -1, np.int64)
        rslot[ok] = inv
    R = max(int(rep_values.size), 1)
    G = P * M * C * R
    flat = ((prompt.astype(np.int64) * M + model) * C + condition) * R + rslot
    graded = ok & ~np.isnan(credit)

    def per_type(t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        present_t = ok & (item_type == t)
        g = graded & (item_type == t)
        total = np.bincount(flat[present_t], minlength=G)
        n = np.bincount(flat[g], minlength=G)
        s = np.bincount(flat[g], weights=credit[g], minlength=G)
        return total, n, s

    _m_tot, m_n, m_s = per_type(MUST)
    b_tot, b_n, b_s = per_type(BONUS)
    _a_tot, _a_n, a_s = per_type(AVOID)
    exists = np.bincount(flat[ok], minlength=G) > 0
    scored = m_n > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        r_must = np.where(scored, m_s / np.maximum(m_n, 1), np.nan)
        r_bonus = np.where(scored & (b_n > 0), b_s / np.maximum(b_n, 1), np.nan)
    r_avoid = np.where(scored, a_s, np.nan)
    # The one rule for an ungraded item (qdrant/skills SCORING.md: excluded, never counted as
    # zero): a prompt×rep is scored on its graded items, the composite too — bonus items that
    # were all ungraded add no bonus term — and only one without a graded must item is dropped.
    r_comp = composite(r_must, r_bonus, r_avoid)
    bonus_ungraded = scored & (b_tot > 0) & (b_n == 0)

    shape = (P, M, C, R)
    r_must, r_bonus, r_avoid, r_comp = (x.reshape(shape) for x in (r_must, r_bonus, r_avoid,
                                                                   r_comp))
    must, n_reps = _mean_last(r_must)
    bonus, _ = _mean_last(r_bonus)
    avoid, _ = _mean_last(r_avoid)
    comp, _ = _mean_last(r_comp)
    cell_must, cell_n = _mean_last(np.moveaxis(must, 0, -1))
    cell_bonus, _ = _mean_last(np.moveaxis(bonus, 0, -1))
    cell_avoid, _ = _mean_last(np.moveaxis(avoid, 0, -1))
    cell_comp, _ = _mean_last(np.moveaxis(comp, 0, -1))
    return Aggregates(
        rep_must=r_must, rep_bonus=r_bonus, rep_avoid=r_avoid, rep_composite=r_comp,
        must=must, bonus=bonus, avoid=avoid, composite=comp,
        # fmin/fmax ignore NaN and return NaN for an all-NaN slice, without warnings.
        must_min=np.fmin.reduce(r_must, axis=-1), must_max=np.fmax.reduce(r_must, axis=-1),
        composite_min=np.fmin.reduce(r_comp, axis=-1),
        composite_max=np.fmax.reduce(r_comp, axis=-1),
        n_reps=n_reps,
        cell_must=cell_must, cell_bonus=cell_bonus, cell_avoid=cell_avoid,
        cell_composite=cell_comp, cell_n=cell_n,
        n_unscored_reps=int(np.count_nonzero(exists & ~scored)),
        n_bonus_ungraded_reps=int(np.count_nonzero(bonus_ungraded)),
        rep_values=rep_values,
    )


# --------------------------------------------------------------------------- lift


@dataclass(frozen=True)
class Lift:
    """Paired per-prompt lift of one metric for one model."""

    n: int
    lift: float | None
    sd: float | None
    se: float | None
    df: int | None
    t_crit: float | None
    ci_low: float | None
    ci_high: float | None
    #: Whether the 95% t interval excludes zero; None when n < 2 or not estimable.
    ci_excludes_zero: bool | None
    low_sample: bool
    #: False when every per-prompt difference is equal (SD 0): an SE of 0 from a handful of
    #: prompts is not zero uncertainty, so the t interval is not estimable (None) and a gate
    #: on it fails closed.
    estimable: bool = True


def t_quantile(df: int, level: float = 0.95) -> float:
    """Exact two-sided Student-t multiplier (e.g. 2.0595 for df=25 at 95%)."""
    return float(scipy_special().stdtrit(df, 0.5 + level / 2.0))


def paired_lift(no: np.ndarray, with_: np.ndarray, *, level: float = 0.95) -> Lift:
    """Lift = mean(dᵢ), dᵢ = with − no over prompts present (non-NaN) in both arms.

    SE = stdev(d)/√n with the sample stdev (ddof=1); the CI uses the exact t quantile
    with n−1 degrees of freedom (the reference uses a conservative lookup table). When every
    dᵢ is equal the SE is 0 but the uncertainty is not: the interval is not estimable
    (``estimable`` False, CI None) rather than [lift, lift].
    """
    d = np.asarray(with_, float) - np.asarray(no, float)
    d = d[~np.isnan(d)]
    n = int(d.size)
    low = n < LOW_SAMPLE_PROMPTS
    if n == 0:
        return Lift(0, None, None, None, None, None, None, None, None, True)
    lift = float(d.mean())
    if n == 1:
        return Lift(1, lift, None, None, None, None, None, None, None, True)
    sd = float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    t = t_quantile(n - 1, level)
    if not sd > 0:
        return Lift(n, lift, sd, se, n - 1, t, None, None, None, low, estimable=False)
    lo, hi = lift - t * se, lift + t * se
    return Lift(n, lift, sd, se, n - 1, t, lo, hi, bool(lo > 0 or hi < 0), low)


def paired_mean_delta(no: np.ndarray, with_: np.ndarray) -> float | None:
    """Mean of (with − no) over prompts present in both arms (Δbonus, Δavoid, Δcomposite)."""
    d = np.asarray(with_, float) - np.asarray(no, float)
    d = d[~np.isnan(d)]
    return float(d.mean()) if d.size else None


@dataclass(frozen=True)
class Bootstrap:
    """Percentile bootstrap CI of the mean paired lift, resampling prompts."""

    low: float | None
    high: float | None
    excludes_zero: bool | None
    n_boot: int
    seed: int
    #: Monte Carlo standard error of the endpoints (:func:`bootstrap_mc_se`).
    mc_se: float | None = None


def paired_bootstrap(
    no: np.ndarray, with_: np.ndarray, *, n_boot: int = 2000, seed: int = 20260808,
    level: float = 0.95, chunk: int = 256,
) -> Bootstrap:
    """Seeded, reproducible paired bootstrap over prompts (resamples whole prompts, so the
    pairing is kept); percentile interval of the mean lift.

    Resampling n prompts with replacement only matters through how often each distinct dᵢ
    is drawn, so the draw is done as multinomial counts over the K distinct values of d
    (same distribution, O(n_boot·K) instead of O(n_boot·n); must-coverage lifts take few
    distinct values, so a 5,000-prompt week costs milliseconds).  With many distinct values
    it draws prompt indices directly.  Chunked so memory stays at ``chunk × max(K, n)``.
    """
    d = np.asarray(with_, float) - np.asarray(no, float)
    d = d[~np.isnan(d)]
    n = d.size
    if n < 2:
        return Bootstrap(None, None, None, n_boot, seed)
    values, counts = np.unique(d, return_counts=True)
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    few_values = values.size * 8 < n  # multinomial draws cost ~K each, index draws ~n
    for start in range(0, n_boot, chunk):
        k = min(chunk, n_boot - start)
        if few_values:
            draws = rng.multinomial(n, counts / n, size=k)
            means[start:start + k] = draws @ values / n
        else:
            means[start:start + k] = bootstrap_resamples(
                d, rng, k, dtype=np.int32 if n < 2**31 else np.int64).mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return Bootstrap(float(lo), float(hi), bool(lo > 0 or hi < 0), n_boot, seed,
                     bootstrap_mc_se(means, level))


def _paired_t_power(delta: float, sd: float, n: int, alpha: float) -> float:
    """Power of the two-sided paired t-test (noncentral t)."""
    df = n - 1
    tc = float(scipy_special().stdtrit(df, 1 - alpha / 2))
    nc = delta * math.sqrt(n) / sd
    if nc > 40:  # far in the tail: scipy's nct returns NaN there, and power is ~1
        return 1.0
    p = float(1.0 - scipy_special().nctdtr(df, nc, tc) + scipy_special().nctdtr(df, nc, -tc))
    return 1.0 if math.isnan(p) else p


def min_detectable_lift(
    sd: float | None, n: int, *, power: float = 0.80, alpha: float = 0.05
) -> float | None:
    """Smallest true lift a paired t-test at this n and noise detects with ``power``
    (two-sided ``alpha``).  Exact via the noncentral t; None when n < 2 or sd is 0/unknown."""
    if sd is None or n < 2 or not math.isfinite(sd) or sd == 0:
        # sd = 0 (every prompt moved by exactly the same amount): the t-test is degenerate
        # and "detectable" has no meaning; say n/a rather than a reassuring 0.
        return None

    def f(delta: float) -> float:
        return _paired_t_power(delta, sd, n, alpha) - power

    # Bracket around the usual (t_α/2 + t_power)·sd/√n approximation.
    sp = scipy_special()
    approx = (sp.stdtrit(n - 1, 1 - alpha / 2) + sp.stdtrit(n - 1, power)) * sd / math.sqrt(n)
    hi = 2.0 * approx
    while f(hi) < 0:
        hi *= 2.0
    # Power rises monotonically with delta: bisection to 1e-9 (≈ 35 steps).
    lo = 0.0
    while hi - lo > 1e-9:
        mid = (lo + hi) / 2.0
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    return float(hi)


def prompts_needed(
    sd: float | None, lift: float = 0.10, *, power: float = 0.80, alpha: float = 0.05,
    max_n: int = 10_000_000,
) -> int | None:
    """Prompts needed for a paired t-test to detect ``lift`` with ``power`` at this noise."""
    if sd is None or not math.isfinite(sd) or lift <= 0 or sd == 0:
        return None  # no spread: no power calculation to make (see min_detectable_lift)
    z = float(scipy_special().ndtri(1 - alpha / 2) + scipy_special().ndtri(power))
    n = max(2, math.ceil((z * sd / lift) ** 2) - 2)  # normal approx, t needs a bit more
    while n < max_n and _paired_t_power(lift, sd, n, alpha) < power:
        n += 1 if n < 1000 else max(1, n // 1000)
    return n


# --------------------------------------------------------------------------- runs


def cell_run_means(
    values: np.ndarray, model: np.ndarray, condition: np.ndarray, include: np.ndarray,
    n_models: int, n_conditions: int = 2,
) -> tuple[np.ndarray, np.ndarray]:
    """Per (model, condition) mean of a per-run value over included runs with a value.

    Returns (means (M, C) NaN when empty, counts (M, C)), C = ``n_conditions``.  Used for
    mean cost/turns, which exclude errored and budget-capped runs (their cost is a
    truncated floor).
    """
    C = max(n_conditions, 2)
    ok = include & ~np.isnan(values) & (model >= 0) & (condition >= 0) & (condition < C)
    key = model[ok].astype(np.int64) * C + condition[ok]
    n = np.bincount(key, minlength=n_models * C).reshape(n_models, C)
    s = np.bincount(key, weights=values[ok], minlength=n_models * C).reshape(n_models, C)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, s / np.maximum(n, 1), np.nan), n


def prompt_run_means(
    values: np.ndarray, prompt: np.ndarray, model: np.ndarray, condition: np.ndarray,
    include: np.ndarray, n_prompts: int, n_models: int, n_conditions: int = 2,
) -> np.ndarray:
    """Per (prompt, model, condition) mean of a per-run value over included runs with a
    value, NaN when there is none: the per-prompt level a paired Δcost / Δturns is built on."""
    C = max(n_conditions, 2)
    ok = (include & ~np.isnan(values) & (prompt >= 0) & (model >= 0) & (condition >= 0)
          & (condition < C))
    key = (prompt[ok].astype(np.int64) * n_models + model[ok]) * C + condition[ok]
    size = n_prompts * n_models * C
    n = np.bincount(key, minlength=size)
    s = np.bincount(key, weights=values[ok], minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, s / np.maximum(n, 1), np.nan).reshape(n_prompts, n_models, C)


def activation_counts(
    prompt: np.ndarray, activation: np.ndarray, reached: np.ndarray, fetched: np.ndarray,
    include: np.ndarray, n_prompts: int, n_sources: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per prompt: counts by activation source (P, n_sources+1, last = unknown),
    runs (P), reached_leaf runs (P), site-fetching runs (P)."""
    ok = include & (prompt >= 0)
    p = prompt[ok].astype(np.int64)
    a = activation[ok].astype(np.int64)
    a = np.where(a < 0, n_sources, a)
    counts = np.bincount(p * (n_sources + 1) + a, minlength=n_prompts * (n_sources + 1))
    runs = np.bincount(p, minlength=n_prompts)
    leaf = np.bincount(p, weights=(reached[ok] == 1), minlength=n_prompts).astype(np.int64)
    fetch = np.bincount(p, weights=(fetched[ok] == 1), minlength=n_prompts).astype(np.int64)
    return counts.reshape(n_prompts, n_sources + 1), runs, leaf, fetch


# --------------------------------------------------------------------------- history


@dataclass(frozen=True)
class WeekOverWeek:
    """The week-over-week delta of one model's lift and its don't-act threshold."""

    n_runs: int
    ready: bool  # False until WOW_MIN_RUNS runs of history exist (text: WOW_PENDING_TEXT)
    prev_key: str | None = None
    prev_lift: float | None = None
    delta: float | None = None
    se_delta: float | None = None
    within: float | None = None  # t·SE_Δ
    between: float | None = None  # sample σ of prior weekly lifts
    threshold: float | None = None  # max(within, between)
    actionable: bool | None = None  # |Δ| > threshold


def week_over_week(
    now_lift: float | None, now_se: float | None, now_n: int,
    prior: Sequence[tuple[str, float | None, float | None]], *, min_runs: int = WOW_MIN_RUNS,
    level: float = 0.95,
) -> WeekOverWeek:
    """Δ vs the previous run, threshold max(t·SE_Δ, between-week σ).

    ``prior`` are the earlier runs, oldest first, as (run_key, lift, se).  SE_Δ =
    √(SE_now² + SE_prev²); t uses this week's n−1 df; σ is the sample stdev (ddof=1)
    of the prior weekly lifts.  Until ``min_runs`` runs exist (this one included) the
    delta is not computed: the methodology reads "Will be computed after four runs.".
    """
    n_runs = len(prior) + 1
    if n_runs < min_runs or not prior:
        return WeekOverWeek(n_runs=n_runs, ready=False)
    prev_key, prev_lift, prev_se = prior[-1]
    delta = None if now_lift is None or prev_lift is None else now_lift - prev_lift
    se_delta = within = None
    if now_se is not None and prev_se is not None:
        se_delta = math.sqrt(now_se**2 + prev_se**2)
        t = t_quantile(now_n - 1, level) if now_n >= 2 else float(scipy_special().ndtri(0.975))
        within = t * se_delta
    lifts = [x for _, x, _ in prior if x is not None and math.isfinite(x)]
    between = float(np.std(lifts, ddof=1)) if len(lifts) >= 2 else None
    cands = [x for x in (within, between) if x is not None]
    threshold = max(cands) if cands else None
    actionable = None if delta is None or threshold is None else abs(delta) > threshold
    return WeekOverWeek(n_runs, True, prev_key, prev_lift, delta, se_delta, within, between,
                        threshold, actionable)


def duration_summary(duration_ms: np.ndarray) -> dict[str, float | int | None]:
    """Σ, mean, median, max of per-run durations (seconds) over runs that have one."""
    d = duration_ms[~np.isnan(duration_ms)] / 1000.0
    if d.size == 0:
        return {"runs_timed": 0, "total_s": None, "mean_s": None, "median_s": None,
                "max_s": None}
    return {"runs_timed": int(d.size), "total_s": float(d.sum()), "mean_s": float(d.mean()),
            "median_s": float(np.median(d)), "max_s": float(d.max())}


# --------------------------------------------------------------------------- regressions

#: Prior degrees of freedom of the moderated per-prompt rep variance: the week's pooled rep
#: variance counts as this many reps' worth of evidence beside the prompt's own (Smyth 2004,
#: the limma moderated t; a small fixed prior, of the order limma estimates on real data).
REP_PRIOR_DF = 8.0
#: Family-wise error rate of ``skilllift compare --fail-on-regression``: split between the
#: week-level tests and the prompts (:func:`regression_alarm`).
REGRESSION_ALPHA = 0.05
#: Must items per rep assumed by the variance floor when a caller does not know them (one:
#: the Bernoulli bound, the widest floor).
DEFAULT_ITEMS = 1
#: What an alarm watches: the per-prompt must lift (with − no-skill, the default) or the
#: with-skill level (composite; qdrant/skills SCORING.md keeps it for trends and ranking).
WATCH_LIFT, WATCH_LEVEL = "lift", "level"
#: Arm weights of the watched quantity: lift = with − no; level = the arm itself.
LIFT_WEIGHTS = (-1.0, 1.0)
LEVEL_WEIGHTS = (1.0,)


def _ranked(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What a multiple-comparison adjustment starts from: the p-values as floats, the output
    (all NaN), and the indices of the non-NaN ones in ascending order (ties stable)."""
    p = np.asarray(p, float)
    ok = np.flatnonzero(~np.isnan(p))
    return p, np.full(p.shape, np.nan), ok[np.argsort(p[ok], kind="stable")]


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979); NaN entries stay NaN and are not
    counted in the family. Rejecting adjusted p ≤ α controls the family-wise error rate."""
    p, out, order = _ranked(p)
    m = order.size
    if m == 0:
        return out
    adj = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adj, 1.0)
    return out


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (false discovery rate); NaN entries stay NaN."""
    p, out, order = _ranked(p)
    m = order.size
    if m == 0:
        return out
    adj = p[order] * m / np.arange(1, m + 1)
    out[order] = np.minimum(np.minimum.accumulate(adj[::-1])[::-1], 1.0)
    return out


@dataclass(frozen=True)
class RepNoiseTest:
    """Per prompt, whether ``after`` moved from ``before`` beyond the prompt's rep noise.

    Arrays are ``(P,)``; NaN where the prompt cannot be tested (a side without a scored rep,
    or one rep on each side: its own reps cannot show its noise)."""

    diff: np.ndarray  # Δ of the watched quantity (lift or level), after − before
    se: np.ndarray  # SE of Δ: moderated rep variance, never below the binomial floor
    df: np.ndarray  # prior df + the prompt's own
    p_drop: np.ndarray  # one-sided p of a drop
    p_rise: np.ndarray  # one-sided p of a rise
    k_before: np.ndarray  # scored reps per prompt (the fewest over the watched arms)
    k_after: np.ndarray
    rep_var: float | None  # the pooled within-prompt rep variance (the prior; last arm)
    rep_df: int  # its degrees of freedom
    floored: np.ndarray  # (P,) bool: the binomial floor set the SE of some arm


def _reps_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Over the last axis: non-NaN count, mean (NaN when empty), sum of squared deviations."""
    ok = ~np.isnan(x)
    k = ok.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(k > 0, np.where(ok, x, 0.0).sum(axis=-1) / np.maximum(k, 1), np.nan)
    ss = np.where(ok, (x - np.nan_to_num(mean)[..., None]) ** 2, 0.0).sum(axis=-1)
    return k, mean, ss


def change_test(before: np.ndarray, after: np.ndarray, *, weights: Sequence[float],
                n_items: np.ndarray | None = None,
                prior_df: float = REP_PRIOR_DF) -> RepNoiseTest:
    """A moderated two-sample t test per prompt of Δ = Σ_c w_c·(mean after_c − mean before_c)
    on rep-level scores ``(P, C, R)`` in [0, 1] (NaN = not scored); ``weights`` (C,) make the
    watched quantity: (−1, +1) the lift (with − no-skill), (1,) a level.

    Per arm, the prompt's rep variance (its within-week deviations, both weeks pooled) is
    shrunk toward the variance pooled over all prompts with ``prior_df`` degrees of freedom
    (Smyth 2004) and **never below the binomial variance of its item credits**,
    m(1 − m)/n, m the arm's mean over both weeks' reps at its Jeffreys estimate
    ((x + ½)/(n_reps·n + 1): never 0 or 1; n = ``n_items`` must items per rep,
    :data:`DEFAULT_ITEMS` when not given): reps that agree by chance are not noiseless, so a
    single flipped item of a prompt whose reps all agree is never p = 0, and two reps of a
    bimodal prompt (1.0 and 0.0) that land alike on each side are not read as a move
    without it (the floor was chosen by the false-alarm rate on resampled real weeks:
    docs/methodology-notes.md). SE = √Σ_c w_c²·var_c
    (1/k_before + 1/k_after); df = prior df + the smallest own df of the watched arms. A
    prompt with one rep on each side (in any watched arm) is not tested (NaN).
    """
    a = np.asarray(before, float)
    b = np.asarray(after, float)
    w = np.asarray(weights, float)
    if a.ndim == 2:
        a, b = a[:, None, :], b[:, None, :]
    P, C = a.shape[0], a.shape[1]
    if w.size != C:
        raise ValueError(f"{w.size} weights for {C} arms")
    items = (np.full(P, float(DEFAULT_ITEMS)) if n_items is None
             else np.maximum(np.asarray(n_items, float).reshape(P), 1.0))
    ka, ma, ssa = _reps_moments(a)  # (P, C)
    kb, mb, ssb = _reps_moments(b)
    own_df = np.maximum(ka - 1, 0) + np.maximum(kb - 1, 0)
    ss = ssa + ssb
    total_df = own_df.sum(axis=0)  # (C,)
    with np.errstate(invalid="ignore", divide="ignore"):
        prior = np.where(total_df > 0, ss.sum(axis=0) / np.maximum(total_df, 1), 0.0)
    d0 = np.minimum(prior_df, total_df.astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (d0 * prior + ss) / (d0 + own_df)
        # The binomial variance at the Jeffreys estimate (Beta(½, ½): (x + ½)/(n + 1), never
        # 0 or 1) of the arm's mean over both weeks' reps: the variance the reps would have
        # if nothing changed, which is what the test must hold against.
        n = items[:, None] * (ka + kb)
        pooled = (np.nan_to_num(ma) * ka + np.nan_to_num(mb) * kb) / np.maximum(ka + kb, 1)
        m = (pooled * n + 0.5) / (n + 1.0)
        floor = m * (1.0 - m) / items[:, None]
    floored_arm = ~(var >= floor)
    var = np.where(floored_arm, floor, var)
    watched = w != 0
    inv_k = 1.0 / np.maximum(ka, 1) + 1.0 / np.maximum(kb, 1)
    se = np.sqrt((w * w * var * inv_k)[:, watched].sum(axis=1))
    diff = ((mb - ma) * w)[:, watched].sum(axis=1)
    testable = ((ka >= 1) & (kb >= 1) & (own_df >= 1))[:, watched].all(axis=1)
    if not watched.any():
        raise ValueError("no arm has a nonzero weight")
    df = d0[watched].min() + own_df[:, watched].min(axis=1)
    p_drop = np.full(P, np.nan)
    p_rise = np.full(P, np.nan)
    pos = testable & (se > 0)
    if pos.any():
        t = diff[pos] / se[pos]
        stdtr = scipy_special().stdtr
        p_drop[pos] = stdtr(df[pos], t)
        p_rise[pos] = stdtr(df[pos], -t)
    nan = ~testable
    last = int(np.flatnonzero(watched)[-1])
    rep_var = float(prior[last]) if total_df[last] else None
    return RepNoiseTest(np.where(nan, np.nan, diff), np.where(nan, np.nan, se),
                        np.where(nan, np.nan, df), p_drop, p_rise,
                        ka[:, watched].min(axis=1), kb[:, watched].min(axis=1),
                        rep_var, int(total_df[last]),
                        floored_arm[:, watched].any(axis=1) & testable)


def rep_noise_test(before: np.ndarray, after: np.ndarray, *, n_items: np.ndarray | None = None,
                   prior_df: float = REP_PRIOR_DF) -> RepNoiseTest:
    """:func:`change_test` of one level (``(P, R)`` rep scores of one arm)."""
    return change_test(before, after, weights=LEVEL_WEIGHTS, n_items=n_items,
                       prior_df=prior_df)


def paired_drop_p(before: np.ndarray, after: np.ndarray, *,
                  rep_se: np.ndarray | None = None) -> tuple[int, float | None, float | None]:
    """The week-level paired test: (n prompts in both, mean Δ, one-sided p of a drop) over
    prompt-level values (reps averaged); p None below two prompts.

    The SE is stdev(Δ)/√n, never below the rep noise alone, √Σ rep_se²/n (``rep_se``: each
    prompt's SE of Δ from its reps, :func:`change_test`): prompts that all moved alike are
    not a move without noise. Without ``rep_se`` and without spread, p is None (cannot
    tell), never 0."""
    d = np.asarray(after, float) - np.asarray(before, float)
    ok = ~np.isnan(d)
    rse = None if rep_se is None else np.asarray(rep_se, float)
    d = d[ok]
    n = int(d.size)
    if n < 2:
        return n, (float(d.mean()) if n else None), None
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    if rse is not None and not se > 0:
        r = rse[ok]
        r = r[~np.isnan(r)]
        if r.size:
            se = max(se, math.sqrt(float((r * r).sum())) / n)
    if not se > 0:
        return n, mean, None
    return n, mean, float(scipy_special().stdtr(n - 1, mean / se))


@dataclass(frozen=True)
class RegressionAlarm:
    """The regression decision of two weeks over models × prompts (rep-level scores)."""

    week_n: list[int]  # per model: prompts in both weeks
    week_delta: list[float | None]  # per model: mean Δ of the prompt values
    week_p: list[float | None]  # per model: one-sided p of a drop (paired t)
    week_p_adj: list[float | None]  # Bonferroni over the models, at the week-level share
    prompts: list[RepNoiseTest]  # per model
    drop_p_adj: np.ndarray  # (M, P) Holm-adjusted p of a drop, at the prompts' share
    rise_p_adj: np.ndarray  # (M, P) the same for a rise (its own family)
    alpha: float
    method: str
    #: What is watched (:data:`WATCH_LIFT` or :data:`WATCH_LEVEL`).
    watches: str = WATCH_LEVEL
    #: α of the week-level tests (all models) and α the prompts were tested at.
    alpha_week: float = 0.0
    alpha_prompts: float = 0.0

    @property
    def regressed(self) -> np.ndarray:
        """(M, P): prompts whose drop survives the correction."""
        return cast("np.ndarray", np.nan_to_num(self.drop_p_adj, nan=2.0) <= self.alpha)

    @property
    def improved(self) -> np.ndarray:
        """(M, P): prompts whose rise survives the correction."""
        return cast("np.ndarray", np.nan_to_num(self.rise_p_adj, nan=2.0) <= self.alpha)

    @property
    def week_regressed(self) -> list[bool]:
        """Per model: whether the week's pooled drop survives the correction."""
        return [p is not None and p <= self.alpha for p in self.week_p_adj]

    @property
    def alarm(self) -> bool:
        """Any model's week-level drop or any prompt's drop beyond its rep noise."""
        return bool(self.regressed.any() or any(self.week_regressed))


def regression_alarm(before: np.ndarray, after: np.ndarray, *,
                     weights: Sequence[float] = LEVEL_WEIGHTS,
                     n_items: np.ndarray | None = None,
                     alpha: float = REGRESSION_ALPHA,
                     prior_df: float = REP_PRIOR_DF,
                     watches: str | None = None) -> RegressionAlarm:
    """Regressions between two weeks from rep-level scores ``(M, P, C, R)`` (or ``(M, P, R)``
    for one arm; NaN = unscored), the watched quantity made by ``weights`` (:data:`LIFT_WEIGHTS`
    over no-skill and with-skill: the per-prompt lift; :data:`LEVEL_WEIGHTS`: one arm).

    α is **split** between the two kinds of test so that neither drowns the other (a
    graphical multiple test, Bretz et al. 2009, Stat. Med. 28): the week-level paired tests
    (one per model, over the prompts' Δ) share α/2, Bonferroni over the models; the
    per-prompt tests (:func:`change_test`) are one Holm family at α/2, and each model whose
    week-level test rejects passes its share on to them (with every week-level test
    rejecting, the prompts are tested at the full α). The family-wise error rate stays α;
    more reps only sharpen each test, so they never cost power, whatever the number of
    prompts (one family of week *and* prompt tests let 52 prompt tests drown the week-level
    one). Rises are decided the same way in their own family (they never fail a run).
    ``n_items`` (P,) are the must items per rep of each prompt (the variance floor's n).
    """
    before, after = np.asarray(before, float), np.asarray(after, float)
    if before.ndim == 3:
        before, after = before[:, :, None, :], after[:, :, None, :]
    M, P = before.shape[0], before.shape[1]
    w = tuple(float(x) for x in weights)
    tests = [change_test(before[m], after[m], weights=w, n_items=n_items, prior_df=prior_df)
             for m in range(M)]
    wk = []
    for m in range(M):
        sel = np.asarray(w) != 0
        va = (_reps_moments(before[m])[1][:, sel] * np.asarray(w)[sel]).sum(axis=1)
        vb = (_reps_moments(after[m])[1][:, sel] * np.asarray(w)[sel]).sum(axis=1)
        wk.append(paired_drop_p(va, vb, rep_se=tests[m].se))
    week_p = np.array([np.nan if p is None else p for _, _, p in wk], float)
    n_week = int(np.count_nonzero(~np.isnan(week_p)))
    alpha_week = alpha / 2.0
    week_adj = [None if math.isnan(x) else float(min(1.0, x * 2.0 * n_week)) for x in week_p]
    rejected = sum(1 for x in week_adj if x is not None and x <= alpha)
    # an empty week-level family (fewer than two prompts) passes its share on, too
    alpha_prompts = alpha if n_week == 0 else alpha / 2.0 + alpha_week * rejected / n_week
    drop = np.array([t.p_drop for t in tests]).reshape(M, P)
    scale = alpha / alpha_prompts
    drop_adj = np.minimum(holm(drop.ravel()) * scale, 1.0).reshape(drop.shape)
    rise = np.array([t.p_rise for t in tests]).reshape(M, P)
    rise_adj = holm(rise.ravel()).reshape(rise.shape)
    kind = watches or (WATCH_LIFT if len(w) == 2 and w[0] < 0 < w[1] else WATCH_LEVEL)
    return RegressionAlarm(
        week_n=[n for n, _, _ in wk], week_delta=[d for _, d, _ in wk],
        week_p=[p for _, _, p in wk], week_p_adj=week_adj, prompts=tests,
        drop_p_adj=drop_adj, rise_p_adj=rise_adj, alpha=alpha,
        method=f"split α = {alpha:g}: the week-level paired tests at α/2 (Bonferroni over "
               f"the models), the per-prompt moderated t tests (prior df {prior_df:g}, "
               "binomial variance floor) in one Holm family at α/2 plus the share of each "
               "week-level test that rejected",
        watches=kind, alpha_week=alpha_week, alpha_prompts=alpha_prompts)


# --------------------------------------------------------------------------- cluster bootstrap

#: Resamples and seed of the cluster bootstrap (fixed: the scorecard is reproducible).
CLUSTER_BOOT_N = 2000
CLUSTER_BOOT_SEED = 20260808


def cluster_bootstrap_rate(
    k: np.ndarray, n: np.ndarray, *, n_boot: int = CLUSTER_BOOT_N,
    seed: int = CLUSTER_BOOT_SEED, level: float = 0.95, chunk: int = 256,
) -> tuple[float | None, float | None]:
    """Percentile interval of a pooled rate Σk/Σn that resamples whole clusters (prompts).

    ``k`` and ``n`` are per cluster (successes and trials, e.g. passed and scored prompt×reps
    of each prompt). Reps of one prompt are correlated, so the Wilson interval, which counts
    every trial as independent, is too narrow when they agree; resampling prompts with
    replacement keeps each prompt's reps together (Field & Welsh 2007, the cluster
    bootstrap). A cluster with n = 0 is still drawn (it is part of the design, e.g. a query
    that never fired, for a precision); (None, None) below two clusters or without a
    trial. Seeded: the same counts give the same interval.
    """
    k = np.asarray(k, float)
    n = np.asarray(n, float)
    g = int(n.size)
    if g < 2 or n.sum() <= 0:
        return None, None
    # Only how often each distinct (k, n) is drawn matters: multinomial counts over the K
    # distinct pairs are the same distribution as drawing g clusters, at O(K) per resample
    # (a 5,000-prompt week with 5 reps has at most 36 distinct pairs).
    if np.all(k == np.round(k)) and np.all(n == np.round(n)) and k.min() >= 0:
        span = int(k.max()) + 1  # integer counts: one int64 key per pair, a 1-D unique
        keys, counts = np.unique(n.astype(np.int64) * span + k.astype(np.int64),
                                 return_counts=True)
        k, n = (keys % span).astype(float), (keys // span).astype(float)
    else:
        pairs, counts = np.unique(np.stack([k, n], axis=1), axis=0, return_counts=True)
        k, n = pairs[:, 0], pairs[:, 1]
    rng = np.random.default_rng(seed)
    rates = np.empty(n_boot)
    p = counts / g
    for start in range(0, n_boot, chunk):
        m = min(chunk, n_boot - start)
        w = rng.multinomial(g, p, size=m).astype(float)  # how often each pair is drawn
        den = w @ n
        with np.errstate(invalid="ignore", divide="ignore"):
            # a resample of clusters without a trial has no rate: left out of the quantiles
            rates[start:start + m] = np.where(den > 0, (w @ k) / np.where(den > 0, den, 1),
                                              np.nan)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.nanquantile(rates, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def bootstrap_mc_se(means: np.ndarray, level: float = 0.95) -> float | None:
    """Monte Carlo standard error of a percentile-bootstrap endpoint from its B resamples:
    √(p(1−p)/B) / f(q_p), the density at the quantile taken as the normal one with the
    resamples' SD (Efron & Tibshirani 1993, ch. 19; Hall 1992). None for fewer than 2."""
    means = np.asarray(means, float)
    b = means.size
    if b < 2:
        return None
    p = (1.0 - level) / 2.0
    z = float(scipy_special().ndtri(1.0 - p))
    density = math.exp(-z * z / 2.0) / math.sqrt(2.0 * math.pi)
    return float(means.std(ddof=1) * math.sqrt(p * (1.0 - p) / b) / density)


#: The last printed digit's step is at least this many Monte Carlo SEs: two seeds' endpoints
#: differ by |X − X'| with mean 2σ/√π ≈ 1.13σ, so one endpoint's rounding changes with
#: probability ≈ 1.13σ/step and an interval's (two endpoints) ≈ 2.26σ/step; ≤ 10% needs a
#: step ≥ 22.6σ.
REPRODUCIBLE_STEPS = 22.6


def digits_for(mc_se: float | None, *, most: int = 3) -> int:
    """Decimals a Monte Carlo interval can carry: those that at least 90% of reprints with
    another seed reproduce (the last digit's step at least :data:`REPRODUCIBLE_STEPS` times
    its MC standard error; measured in tests/test_report_cluster_intervals.py)."""
    if mc_se is None or not math.isfinite(mc_se) or mc_se <= 0:
        return most
    return max(0, min(most, math.floor(-math.log10(REPRODUCIBLE_STEPS * mc_se))))


@dataclass(frozen=True)
class PassK:
    """pass@k and pass^k per (prompt, model, condition) at one fixed k for the week.

    With n scored reps of which c pass, the estimators are Chen et al.'s (2021, "Evaluating
    Large Language Models Trained on Code", the unbiased pass@k): pass@k = 1 − C(n−c, k)/C(n, k)
    — the chance that some of k reps drawn without replacement passes — and its counterpart
    pass^k = C(c, k)/C(n, k) — the chance that all k pass. ``flaky`` is 1.0 when the reps
    disagree. A prompt with fewer than k scored reps (an errored or unscored rep) has none of
    the three (NaN) and is ``short``: it is listed, never given a smaller k. ``n`` holds the
    scored reps."""

    at_k: np.ndarray
    hat_k: np.ndarray
    flaky: np.ndarray
    k: np.ndarray  # scored reps n per (prompt, model, condition)
    k_fixed: int = 0  # the week's k
    short: np.ndarray | None = None  # (…) bool: scored, but fewer than k reps


def pass_k(rep_composite: np.ndarray, threshold: float, *, k: int | None = None,
           eps: float = EPS) -> PassK:
    """pass@k / pass^k / flakiness of ``rep_composite`` (…, R), NaN = an unscored rep, at
    ``k`` (default R, the week's rep slots: its planned reps)."""
    comp = np.asarray(rep_composite, float)
    scored = ~np.isnan(comp)
    passed = scored & (np.nan_to_num(comp, nan=-np.inf) >= threshold - eps)
    n = scored.sum(axis=-1)
    c = passed.sum(axis=-1)
    kk = int(comp.shape[-1] if k is None else k)
    if kk < 1:
        raise ValueError(f"pass@k needs k ≥ 1, got {kk}")
    ok = n >= kk
    comb = scipy_special().comb
    with np.errstate(invalid="ignore", divide="ignore"):
        total = comb(n, kk)
        at_k = np.where(ok, 1.0 - comb(n - c, kk) / np.where(ok, total, 1.0), np.nan)
        hat_k = np.where(ok, comb(c, kk) / np.where(ok, total, 1.0), np.nan)
    flaky = np.where(ok, ((c > 0) & (c < n)).astype(float), np.nan)
    return PassK(at_k, hat_k, flaky, n, kk, (n > 0) & ~ok)


def nan_mean(values: np.ndarray) -> float | None:
    """Mean over the finite values, None when there are none."""
    v = np.asarray(values, float)
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else None


def must_items(prompt: np.ndarray, model: np.ndarray, condition: np.ndarray, rep: np.ndarray,
               item_type: np.ndarray, n_prompts: int) -> np.ndarray:
    """Must items per rep of each prompt ``(n_prompts,)``: the most any of its runs has
    (0 for a prompt without one); the ``n`` of the regression alarm's binomial floor."""
    ok = (prompt >= 0) & (model >= 0) & (condition >= 0) & (rep >= 0) & (item_type == 0)
    out = np.zeros(max(n_prompts, 0))
    if not ok.any():
        return out
    keys = np.stack([prompt[ok], model[ok], condition[ok], rep[ok]], axis=1).astype(np.int64)
    runs, counts = np.unique(keys, axis=0, return_counts=True)
    np.maximum.at(out, runs[:, 0], counts.astype(float))
    return out


def cluster_rate_interval(k: np.ndarray, n: np.ndarray, *, level: float = 0.95
                          ) -> tuple[float | None, float | None]:
    """A pooled rate Σk/Σn's exact binomial interval at the effective sample size of clustered
    data
    (``k``, ``n`` per cluster: passed and scored reps of each prompt).

    Reps of one prompt are correlated, so Σn trials carry the information of
    Σn / deff independent ones, deff = 1 + (m̄ − 1)·ρ the design effect with m̄ the mean
    cluster size and ρ the intra-cluster correlation, estimated by one-way ANOVA and clipped to
    [0, 1]; where ρ cannot be estimated (every trial alike, e.g. 52 of 52 passing) it is taken
    as 1 — the prompts are the unit (Korn & Graubard 1998, "Confidence intervals for
    proportions with small expected number of positive counts estimated from survey data",
    Survey Methodology 24: the Clopper–Pearson interval at the effective sample size,
    x = p̂·n_eff successes). Unlike the cluster bootstrap's percentile interval it never
    collapses to a point at 0 or 1: at 52 of 52 passing reps of 26 prompts it is the
    interval of 26 of 26, [0.868, 1]. Its coverage is measured in
    benchmarks/bench_pass_rate_interval.py. (None, None) without a trial.
    """
    k = np.asarray(k, float)
    n = np.asarray(n, float)
    keep = n > 0
    k, n = k[keep], n[keep]
    g = int(n.size)
    total = float(n.sum())
    if g == 0 or total <= 0:
        return None, None
    p = float(k.sum()) / total
    m_bar = total / g
    rho = 1.0
    if g >= 2 and total > g:
        pi = k / n
        msb = float((n * (pi - p) ** 2).sum()) / (g - 1)
        msw = float((k - k * k / n).sum()) / (total - g)
        n0 = (total - float((n * n).sum()) / total) / (g - 1)
        den = msb + (n0 - 1.0) * msw
        if den > 0:
            rho = min(1.0, max(0.0, (msb - msw) / den))
    deff = 1.0 + (m_bar - 1.0) * rho
    n_eff = total / deff
    x = p * n_eff
    a = (1.0 - level) / 2.0
    inv = scipy_special().betaincinv
    lo = 0.0 if x <= 0 else float(inv(x, n_eff - x + 1.0, a))
    hi = 1.0 if x >= n_eff else float(inv(x + 1.0, n_eff - x, 1.0 - a))
    return lo, hi
