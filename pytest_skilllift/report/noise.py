"""The noise floor, measured: A/A "lifts" where no skill differs.  Pure numpy (no I/O, no pytest).

qdrant/skills SCORING.md reads a lift against its within-week SE (stdev(dᵢ)/√n); that SE is a
formula.  An A/A comparison measures noise from data: two arms that differ in nothing but
sampling, scored and paired exactly like a real lift.  Its mean should be near zero.  How often
it clears the SE or t·SE bar is *not* a fixed share (not the 32% / 5% a CI would suggest): each
half averages half the reps and carries none of the prompt × skill interaction, so honest weeks
clear the SE anywhere from a few percent to about half the time, depending on how rep noise
compares with the spread of the per-prompt lifts.  The scorecard therefore reads an observed
rate beside the same rate in honest weeks simulated from this week
(:func:`simulated_reference`); the A/A is the floor below which a lift is indistinguishable
from rerunning the same arm, not a second estimate of the SE (docs/methodology-notes.md, "The
noise floor").

* :func:`split_half` — free, from any week with k ≥ 2 reps: per prompt, the no-skill arm's
  even reps against its odd reps (dᵢ = mean(even) − mean(odd), paired by prompt).
* :func:`exceed_rates` — how often an A/A lift exceeds a bar: over the 2ⁿ ways of choosing, per
  prompt, which half is "A" (sign flips of dᵢ; exact up to ``EXACT_MAX_PROMPTS`` prompts, a
  seeded Monte Carlo beyond), the share whose |mean| exceeds the bar.
* the explicit A/A week (``--skill-lift-aa``: a second no-skill arm, ``no-skill-b``) is paired
  like a lift with ``stats.paired_lift``; :func:`false_verdict_rate` counts the prompts the
  trajectory audit would have called helped or hurt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

#: Up to this many prompts every sign pattern is enumerated (2¹⁴ × n values).
EXACT_MAX_PROMPTS = 14
#: Sign patterns drawn beyond it, with a fixed seed (the scorecard is reproducible).
MC_DRAWS = 20000
MC_SEED = 20260808


@dataclass(frozen=True)
class SplitHalf:
    """The split-half A/A of one model's no-skill arm."""

    #: Per prompt present in both halves: mean(even reps) − mean(odd reps).
    d: np.ndarray
    aa_lift: float | None
    aa_se: float | None
    n_prompts: int


def split_half(rep_must: np.ndarray, rep_values: np.ndarray) -> SplitHalf:
    """Split-half A/A from one model's no-skill prompt×rep must coverage.

    ``rep_must`` is ``(P, R)`` (NaN = not scored), ``rep_values`` the rep number of each of the
    R slots.  Odd reps (1, 3, …) form one half, even reps (2, 4, …) the other; a prompt counts
    when both halves have a scored rep.  SE = stdev(dᵢ, ddof=1)/√n, like the lift's.
    """
    rep_values = np.asarray(rep_values)
    if rep_values.size == 0:  # nothing scored at all
        return SplitHalf(np.zeros(0), None, None, 0)
    rep_must = np.asarray(rep_must, float).reshape(-1, rep_values.size)
    odd = (rep_values % 2) == 1

    def half(mask: np.ndarray) -> np.ndarray:
        block = rep_must[:, mask]
        ok = ~np.isnan(block)
        n = ok.sum(axis=1)
        s = np.where(ok, block, 0.0).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, s / np.maximum(n, 1), np.nan)

    d = half(~odd) - half(odd)
    d = d[~np.isnan(d)]
    n = int(d.size)
    if n == 0:
        return SplitHalf(d, None, None, 0)
    se = float(d.std(ddof=1)) / math.sqrt(n) if n >= 2 else None
    return SplitHalf(d, float(d.mean()), se, n)


def sign_flip_means(d: np.ndarray, *, draws: int = MC_DRAWS, seed: int = MC_SEED
                    ) -> tuple[np.ndarray, bool]:
    """The mean of ±dᵢ under every sign pattern (exact for n ≤ ``EXACT_MAX_PROMPTS``) or under
    ``draws`` seeded random patterns.  Returns (means, exact)."""
    d = np.asarray(d, float)
    n = d.size
    if n == 0:
        return np.zeros(0), True
    if n <= EXACT_MAX_PROMPTS:
        patterns = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1
        return patterns @ d / n, True
    rng = np.random.default_rng(seed)
    means = np.empty(draws)
    values, counts = np.unique(d, return_counts=True)
    if values.size * 8 < n:
        # Few distinct dᵢ (halves of must coverage take few values): only how many of each
        # value's c copies keep their sign matters. Each copy gets one random bit, the bits
        # packed 64 to a word (a value's copies in its own words, the unused bits masked
        # off), so a pattern costs ~n/64 + K words instead of n draws: a 5,000-prompt week
        # takes milliseconds instead of 0.4 s per model. Same distribution: n fair coins.
        words = (counts + 63) // 64
        starts = np.concatenate(([0], np.cumsum(words)[:-1]))
        mask = np.full(int(words.sum()), np.iinfo(np.uint64).max, dtype=np.uint64)
        tail = counts - (words - 1) * 64  # bits used in each value's last word, 1..64
        mask[starts + words - 1] = np.where(
            tail == 64, np.iinfo(np.uint64).max,
            (np.uint64(1) << np.minimum(tail, 63).astype(np.uint64)) - np.uint64(1))
        base = float(counts @ values)
        for start in range(0, draws, 1024):
            k = min(1024, draws - start)
            bits = rng.integers(0, np.iinfo(np.uint64).max, size=(k, mask.size),
                                dtype=np.uint64, endpoint=True) & mask
            kept = np.add.reduceat(_popcount(bits), starts, axis=1)
            means[start:start + k] = (2.0 * (kept @ values) - base) / n
        return means, False
    for start in range(0, draws, 1024):  # chunked: memory stays at 1024 × n
        k = min(1024, draws - start)
        signs = rng.integers(0, 2, size=(k, n), dtype=np.int8) * 2 - 1
        means[start:start + k] = signs @ d / n
    return means, False


def _popcount(words: np.ndarray) -> np.ndarray:
    """Set bits per uint64 word (numpy ≥ 2 counts them natively; older numpy unpacks)."""
    if hasattr(np, "bitwise_count"):
        return cast("np.ndarray", np.bitwise_count(words).astype(np.int64))
    as_bits = np.unpackbits(words.view(np.uint8), axis=-1)
    return cast("np.ndarray", as_bits.reshape(*words.shape, 64).sum(axis=-1, dtype=np.int64))


def exceed_rates(d: np.ndarray, bars: dict[str, float | None]) -> tuple[dict[str, float | None],
                                                                         bool]:
    """Share of split choices whose |A/A mean| exceeds each bar (None for a missing bar).

    Returns (rates by bar name, exact)."""
    means, exact = sign_flip_means(d)
    out: dict[str, float | None] = {}
    for name, bar in bars.items():
        if bar is None or means.size == 0 or not math.isfinite(bar):
            out[name] = None
        else:
            out[name] = float(np.count_nonzero(np.abs(means) > bar + 1e-12)) / means.size
    return out, exact


def false_verdict_rate(d: np.ndarray, threshold: float) -> tuple[int, int]:
    """(prompts with |dᵢ| ≥ threshold, prompts): A/A prompts an impact verdict would call
    helped or hurt although nothing differed."""
    d = np.asarray(d, float)
    d = d[~np.isnan(d)]
    return int(np.count_nonzero(np.abs(d) >= threshold - 1e-12)), int(d.size)


# --------------------------------------------------------------------------- regression alarm

#: Ways of making two weeks with no real change from one week's rep-level scores.
AA_SPLIT, AA_PARAMETRIC, AA_PLUG_IN = "split", "parametric", "plug-in"


def _with_arms(x: np.ndarray) -> tuple[np.ndarray, bool]:
    """``(M, P, R)`` → ``(M, P, 1, R)`` (and whether it was), ``(M, P, C, R)`` unchanged."""
    x = np.asarray(x, float)
    return (x[:, :, None, :], True) if x.ndim == 3 else (x, False)


def aa_week_pairs(reps: np.ndarray, kind: str, rng: np.random.Generator, *,
                  size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One A/A pair of weeks from a week's rep-level scores ``(M, P, R)`` or ``(M, P, C, R)``
    (C arms, each resampled on its own).

    * ``split`` — per (model, prompt, arm) the reps are shuffled and halved (R' = R // 2):
      real answers, nothing but the rep drawn differs;
    * ``parametric`` — each prompt keeps its mean, each rep gets normal noise at the
      week's pooled within-prompt rep SD of its arm, clipped to [0, 1] (R' = R);
    * ``plug-in`` — each side draws ``size`` (default R) whole reps with replacement from the
      prompt's own observed reps in that arm (the harshest: a prompt whose two reps are 1.0
      and 0.0 flips between exactly those).
    """
    x, squeeze = _with_arms(reps)
    M, P, C, R = x.shape

    def out(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (a[:, :, 0], b[:, :, 0]) if squeeze else (a, b)

    if kind == AA_SPLIT:
        order = np.argsort(rng.random((M, P, C, R)), axis=-1)
        shuffled = np.take_along_axis(x, order, axis=-1)
        h = R // 2
        return out(shuffled[..., :h], shuffled[..., h:2 * h])
    if kind == AA_PLUG_IN:
        r = R if size is None else int(size)
        ok = ~np.isnan(x)
        n = np.maximum(ok.sum(axis=-1, keepdims=True), 1)
        packed = np.take_along_axis(x, np.argsort(~ok, axis=-1, kind="stable"), axis=-1)
        idx = (rng.random((2, M, P, C, r)) * n).astype(np.int64)
        return out(np.take_along_axis(packed, idx[0], axis=-1),
                   np.take_along_axis(packed, idx[1], axis=-1))
    if kind == AA_PARAMETRIC:
        ok = ~np.isnan(x)
        k = ok.sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            mu = np.where(k > 0, np.where(ok, x, 0).sum(axis=-1) / np.maximum(k, 1), np.nan)
        ss = np.where(ok, (x - np.nan_to_num(mu)[..., None]) ** 2, 0).sum(axis=(1, 3))
        df = np.maximum(k - 1, 0).sum(axis=1)
        sd = np.sqrt(np.where(df > 0, ss / np.maximum(df, 1), 0.0))[:, None, :, None]

        def side() -> np.ndarray:
            return np.clip(mu[..., None] + sd * rng.standard_normal((M, P, C, R)), 0.0, 1.0)

        return out(side(), side())
    raise ValueError(f"unknown A/A kind {kind!r}; use {AA_SPLIT}, {AA_PARAMETRIC} or "
                     f"{AA_PLUG_IN}")


def _alarm(a: np.ndarray, b: np.ndarray, weights: Sequence[float] | None,
           n_items: np.ndarray | None) -> Any:
    from pytest_skilllift.report import stats

    w = weights if weights is not None else (
        stats.LEVEL_WEIGHTS if a.ndim == 3 or a.shape[2] == 1 else stats.LIFT_WEIGHTS)
    return stats.regression_alarm(a, b, weights=w, n_items=n_items)


@dataclass(frozen=True)
class AlarmRate:
    """How often two weeks with no real change raise an alarm, by ``kind`` of A/A pair."""

    kind: str
    sims: int
    seed: int
    #: Share of pairs with any alarm of ``stats.regression_alarm`` (any regressed prompt or
    #: any week-level drop).
    alarm_rate: float
    #: Share of pairs where some prompt dropped by more than ``margin``: the old rule.
    margin_rule_rate: float
    margin: float


def aa_alarm_rate(reps: np.ndarray, *, kind: str, sims: int, seed: int,
                  margin: float = 0.10, weights: Sequence[float] | None = None,
                  n_items: np.ndarray | None = None, size: int | None = None) -> AlarmRate:
    """The regression alarm's false-alarm rate on ``sims`` seeded A/A pairs of one week
    (``reps`` ``(M, P, R)`` one arm, or ``(M, P, C, R)`` with ``weights`` over the arms; the
    default for two arms is the lift)."""
    rng = np.random.default_rng(seed)
    alarms = margin_hits = 0
    for _ in range(sims):
        a, b = aa_week_pairs(reps, kind, rng, size=size)
        alarm = _alarm(a, b, weights, n_items)
        alarms += alarm.alarm
        drop = np.array([t.diff for t in alarm.prompts])
        margin_hits += bool(np.nan_to_num(-drop, nan=0.0).max(initial=0.0) > margin)
    return AlarmRate(kind, sims, seed, alarms / sims if sims else 0.0,
                     margin_hits / sims if sims else 0.0, margin)


def alarm_power(reps: np.ndarray, *, at_least: float = 0.7,
                weights: Sequence[float] | None = None,
                n_items: np.ndarray | None = None) -> tuple[int, int]:
    """The regression alarm's power on one week against itself: each (model, prompt) whose
    with-skill mean (the last arm) is at least ``at_least`` in turn loses everything (every
    with-skill rep scored 0, a week whose musts all went missing); returns (times the alarm
    named that prompt, prompts tried)."""
    x = np.asarray(reps, float)
    last = (slice(None),) if x.ndim == 3 else (-1, slice(None))
    found = tried = 0
    for m in range(x.shape[0]):
        for p in range(x.shape[1]):
            if np.nanmean(x[(m, p, *last)]) >= at_least:
                dropped = x.copy()
                dropped[(m, p, *last)] = 0.0
                tried += 1
                found += bool(_alarm(x, dropped, weights, n_items).regressed[m, p])
    return found, tried


@dataclass(frozen=True)
class PlantPower:
    """How often a planted regression is found on resampled pairs of one week."""

    plant: str
    size: int  # reps per side
    sims: int
    #: Share of pairs with any alarm.
    alarm_rate: float
    #: Share of pairs where some model's week-level test rejected (the prompts then get α).
    week_rate: float
    #: Share of pairs where the alarm named a planted prompt.
    named_rate: float
    #: Of the pairs where no week-level test rejected / where one did: the share naming a
    #: planted prompt (the two cases of the α split; None when the case never happened).
    named_without_week: float | None
    named_with_week: float | None


def plant(b: np.ndarray, *, kind: str, rng: np.random.Generator, src_mean: np.ndarray,
          at_least: float = 0.7) -> tuple[np.ndarray, np.ndarray]:
    """Week ``b`` (``(M, P, C, R)``) with a regression planted in its with-skill arm (the
    last); returns (planted week, (M, P) mask of the prompts planted). ``kind``:
    ``zero-1`` / ``zero-3`` one / three random prompts at ≥ ``at_least`` with every
    with-skill rep 0 (musts all missing); ``drop-0.10`` … every prompt lowered by that
    much (clipped at 0); ``none`` nothing (the null beside the plants)."""
    out = b.copy()
    mask = np.zeros(b.shape[:2], bool)
    if kind == "none":
        pass
    elif kind.startswith("zero-"):
        cand = np.argwhere(src_mean >= at_least)
        pick = rng.choice(len(cand), size=min(int(kind[5:]), len(cand)), replace=False)
        for m, p in cand[pick]:
            out[m, p, -1] = 0.0
            mask[m, p] = True
    elif kind.startswith("drop-"):
        out[:, :, -1] = np.clip(out[:, :, -1] - float(kind[5:]), 0.0, 1.0)
        mask[:] = True
    else:
        raise ValueError(f"unknown plant {kind!r}")
    return out, mask


def plant_power(reps: np.ndarray, *, plant_kind: str, size: int, sims: int, seed: int,
                weights: Sequence[float] | None = None,
                n_items: np.ndarray | None = None) -> PlantPower:
    """The alarm's power against ``plant_kind`` on ``sims`` plug-in pairs of ``size`` reps
    per side drawn from one week (``(M, P, C, R)``, the last arm with-skill)."""
    x, _ = _with_arms(reps)
    rng = np.random.default_rng(seed)
    with np.errstate(invalid="ignore"):
        src = np.nanmean(x[:, :, -1], axis=-1)
    alarms = weeks = named = 0
    split: dict[bool, list[int]] = {False: [0, 0], True: [0, 0]}
    for _ in range(sims):
        a, b = aa_week_pairs(x, AA_PLUG_IN, rng, size=size)
        b, mask = plant(b, kind=plant_kind, rng=rng, src_mean=src)
        alarm = _alarm(a, b, weights, n_items)
        week = any(alarm.week_regressed)
        hit = bool((alarm.regressed & mask).any())
        alarms += alarm.alarm
        weeks += week
        named += hit
        split[week][0] += hit
        split[week][1] += 1

    def share(case: bool) -> float | None:
        return split[case][0] / split[case][1] if split[case][1] else None

    return PlantPower(plant_kind, size, sims, alarms / sims, weeks / sims, named / sims,
                      share(False), share(True))


# --------------------------------------------------------------------------- simulated reference

#: Honest weeks simulated per model, and sign patterns per simulated week (seeded).
REFERENCE_SIMS = 400
REFERENCE_FLIPS = 200
#: Rep values drawn per model at most (fewer simulated weeks for a large week), and at least
#: this many weeks; beyond this many prompts the sign flips' share is the normal tail.
REFERENCE_DRAWS = 250_000
REFERENCE_MIN_SIMS = 10
NORMAL_FLIPS_FROM = 50


@dataclass(frozen=True)
class SimulatedReference:
    """What the split-half A/A of an honest week like this one looks like."""

    se_rate: float | None  # share of split choices with |A/A| > the lift SE
    t_rate: float | None  # share with |A/A| > t·SE
    sims: int
    seed: int


def _pooled_sd(x: np.ndarray) -> float:
    ok = ~np.isnan(x)
    k = ok.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = np.where(k > 0, np.where(ok, x, 0).sum(axis=1) / np.maximum(k, 1), np.nan)
    ss = float(np.where(ok, (x - np.nan_to_num(mu)[:, None]) ** 2, 0).sum())
    df = int(np.maximum(k - 1, 0).sum())
    return math.sqrt(ss / df) if df else 0.0


def _shrunk(x: np.ndarray, noise_var: float) -> np.ndarray:
    """``x`` pulled toward its mean so that its variance loses ``noise_var`` (not below 0)."""
    v = float(x.var(ddof=1)) if x.size > 1 else 0.0
    if v <= 0:
        return x.copy()
    factor = math.sqrt(max(v - noise_var, 0.0) / v)
    return cast("np.ndarray", x.mean() + factor * (x - x.mean()))


def simulated_reference(rep_no: np.ndarray, rep_with: np.ndarray, rep_values: np.ndarray, *,
                        sims: int = REFERENCE_SIMS, flips: int = REFERENCE_FLIPS,
                        seed: int = MC_SEED) -> SimulatedReference:
    """The split-half exceed rates of honest weeks simulated under this week's own variance.

    Each simulated week keeps every prompt's two arm means (``rep_no``/``rep_with`` are
    ``(P, R)`` must coverage per rep, NaN = not scored; shrunk so their spread is the
    observed one less its rep-noise share), gives each rep normal noise at the arm's pooled
    within-prompt SD, clipped to [0, 1], with the week's rep numbers; its lift SE
    and t·SE are computed as the scorecard computes them, and its split-half A/A is
    compared with them over ``flips`` random choices of which half is A. Nothing in it is
    miscalibrated, so these are the rates an honest SE gives *for a week like this one*:
    they depend on how rep noise compares with the spread of the per-prompt lifts.
    """
    from pytest_skilllift.report import stats

    no, wi = np.asarray(rep_no, float), np.asarray(rep_with, float)
    both = ~np.isnan(no).all(axis=1) & ~np.isnan(wi).all(axis=1)
    no, wi = no[both], wi[both]
    n = int(no.shape[0])
    rep_values = np.asarray(rep_values)
    odd = (rep_values % 2) == 1
    if n < 2 or odd.all() or not odd.any():
        return SimulatedReference(None, None, 0, seed)
    rng = np.random.default_rng(seed)
    sd_no, sd_wi = _pooled_sd(no), _pooled_sd(wi)
    R = rep_values.size
    # The observed prompt means carry rep noise too: taken as the truth they would add it to
    # the simulated prompt spread. Shrink the no-skill means and the per-prompt lifts toward
    # their grand means so their spread is the observed one less the rep-noise share
    # (a method-of-moments estimate of the true spread).
    obs_no = np.nanmean(no, axis=1)
    obs_d = np.nanmean(wi, axis=1) - obs_no
    mu_no = _shrunk(obs_no, sd_no ** 2 / R)
    mu_wi = mu_no + _shrunk(obs_d, (sd_no ** 2 + sd_wi ** 2) / R)
    t = stats.t_quantile(n - 1)
    # A large week needs fewer simulated weeks for the same precision and costs more each:
    # keep the draws to about REFERENCE_DRAWS numbers (a summarize stays fast).
    sims = max(min(sims, REFERENCE_DRAWS // max(n * R, 1)), REFERENCE_MIN_SIMS)
    erfc = stats.scipy_special().erfc
    se_hits = t_hits = 0.0
    chunk = max(1, REFERENCE_DRAWS // (4 * n * R))  # weeks simulated at once (vectorised)
    for start in range(0, sims, chunk):
        k = min(chunk, sims - start)
        a = np.clip(mu_no[None, :, None] + sd_no * rng.standard_normal((k, n, R)), 0.0, 1.0)
        b = np.clip(mu_wi[None, :, None] + sd_wi * rng.standard_normal((k, n, R)), 0.0, 1.0)
        d = b.mean(axis=2) - a.mean(axis=2)
        se = d.std(axis=1, ddof=1) / math.sqrt(n)  # (k,)
        aa = a[:, :, ~odd].mean(axis=2) - a[:, :, odd].mean(axis=2)  # (k, n)
        if n > NORMAL_FLIPS_FROM:
            # mean of ±aaᵢ over fair signs: ≈ normal, variance Σaaᵢ²/n² (no draws needed)
            sd = np.sqrt((aa * aa).sum(axis=1)) / n
            ok = sd > 0
            z = np.where(ok, 1.0 / (np.where(ok, sd, 1.0) * math.sqrt(2.0)), 0.0)
            se_hits += float(np.where(ok, erfc(se * z), 0.0).sum())
            t_hits += float(np.where(ok, erfc(t * se * z), 0.0).sum())
            continue
        signs = rng.integers(0, 2, size=(k, flips, n), dtype=np.int8) * 2 - 1
        means = np.abs(np.einsum("kfn,kn->kf", signs, aa)) / n
        se_hits += float(np.count_nonzero(means > se[:, None] + 1e-12)) / flips
        t_hits += float(np.count_nonzero(means > t * se[:, None] + 1e-12)) / flips
    return SimulatedReference(se_hits / sims, t_hits / sims, sims, seed)
