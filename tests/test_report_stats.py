"""The scoring math of qdrant/skills SCORING.md (pure functions in report/stats.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from scipy import stats as sps

from pytest_skilllift.report import stats

NAN = float("nan")


def _agg(rows: Sequence[tuple[float, ...]], P: int = 1, M: int = 1) -> stats.Aggregates:
    """rows: (prompt, model, condition, rep, item_type, credit)."""
    a = np.array(rows, dtype=float)
    return stats.aggregate(a[:, 0].astype(int), a[:, 1].astype(int), a[:, 2].astype(int),
                           a[:, 3].astype(int), a[:, 4].astype(int), a[:, 5],
                           n_prompts=P, n_models=M)


def test_composite_clamps_and_weights() -> None:
    c = stats.composite(np.array([1.0, 0.5, 0.2, 0.5]), np.array([1.0, 1.0, NAN, 0.0]),
                        np.array([0.0, 1.0, 3.0, 0.0]))
    assert c.tolist() == pytest.approx([1.0, 0.35, 0.0, 0.5])


def test_prompt_rep_metrics_mean_over_reps_and_minmax() -> None:
    # rep 1: musts 1,0 → 0.5; bonus 1 → 1.0; avoid violated 1 → composite .5+.1-.25=.35
    # rep 2: musts 1,1 → 1.0; bonus 0; avoid clean → composite 1.0
    rows = [
        (0, 0, 0, 1, 0, 1), (0, 0, 0, 1, 0, 0), (0, 0, 0, 1, 1, 1), (0, 0, 0, 1, 2, 1),
        (0, 0, 0, 2, 0, 1), (0, 0, 0, 2, 0, 1), (0, 0, 0, 2, 1, 0), (0, 0, 0, 2, 2, 0),
    ]
    a = _agg(rows)
    assert a.must[0, 0, 0] == pytest.approx(0.75)
    assert a.must_min[0, 0, 0] == 0.5 and a.must_max[0, 0, 0] == 1.0
    assert a.bonus[0, 0, 0] == pytest.approx(0.5)
    assert a.avoid[0, 0, 0] == pytest.approx(0.5)
    assert a.composite[0, 0, 0] == pytest.approx((0.35 + 1.0) / 2)
    assert a.n_reps[0, 0, 0] == 2
    assert math.isnan(a.must[0, 0, 1])  # with-skill arm absent: NaN, not 0


def test_cell_is_flat_macro_mean_not_pooled() -> None:
    # prompt 0: 8 musts all met; prompt 1: 2 musts none met. Pooled would be 0.8; macro 0.5.
    rows = [(0, 0, 0, 1, 0, 1)] * 8 + [(1, 0, 0, 1, 0, 0)] * 2
    a = _agg(rows, P=2)
    assert a.cell_must[0, 0] == pytest.approx(0.5)
    assert a.cell_n[0, 0] == 2


def test_ungraded_items_are_excluded_not_zero() -> None:
    rows = [(0, 0, 0, 1, 0, 1), (0, 0, 0, 1, 0, NAN), (0, 0, 0, 1, 0, NAN)]
    a = _agg(rows)
    assert a.must[0, 0, 0] == 1.0


def test_prompt_rep_without_gradeable_must_is_unscored_and_counted() -> None:
    rows = [(0, 0, 0, 1, 0, 1), (0, 0, 0, 2, 0, NAN), (0, 0, 0, 2, 2, 1)]
    a = _agg(rows)
    assert a.must[0, 0, 0] == 1.0 and a.avoid[0, 0, 0] == 0.0  # rep 2 left out entirely
    assert a.n_unscored_reps == 1
    assert a.n_reps[0, 0, 0] == 1


def test_composite_scored_on_graded_items_when_all_bonus_ungraded() -> None:
    """The one rule (SCORING.md: an ungraded item is excluded, never zero): a rep whose bonus
    items were all ungraded keeps its composite, scored without a bonus term, and is counted
    (the old code left its composite missing, so it fell out of pass@k and the pass rate)."""
    rows = [(0, 0, 0, 1, 0, 1), (0, 0, 0, 1, 1, NAN), (0, 0, 0, 1, 2, 1)]
    a = _agg(rows)
    assert a.must[0, 0, 0] == 1.0
    assert a.composite[0, 0, 0] == pytest.approx(0.75)  # 1.0 − 0.25·1, no bonus term
    assert a.n_bonus_ungraded_reps == 1


def test_paired_lift_matches_scipy_and_pairs_only_common_prompts() -> None:
    no = np.array([0.2, 0.5, 0.4, 0.9, 0.1, NAN])
    wi = np.array([0.6, 0.5, 0.8, 1.0, 0.7, 0.9])  # last prompt unpaired: dropped
    lf = stats.paired_lift(no, wi)
    d = (wi - no)[:5]
    assert lf.n == 5 and lf.lift == pytest.approx(d.mean())
    assert lf.se == pytest.approx(d.std(ddof=1) / math.sqrt(5))
    ci = sps.ttest_rel(wi[:5], no[:5]).confidence_interval(0.95)
    assert (lf.ci_low, lf.ci_high) == pytest.approx((ci.low, ci.high))
    assert lf.ci_low is not None and lf.ci_high is not None
    assert lf.ci_low < 0 < lf.ci_high  # borderline: the t interval just includes zero
    assert lf.ci_excludes_zero is False and lf.low_sample is False


def test_paired_lift_small_n() -> None:
    assert stats.paired_lift(np.array([NAN]), np.array([1.0])).lift is None
    one = stats.paired_lift(np.array([0.5]), np.array([1.0]))
    assert one.lift == 0.5 and one.se is None and one.ci_excludes_zero is None
    four = stats.paired_lift(np.zeros(4), np.array([0.1, 0.2, 0.0, 0.3]))
    assert four.low_sample is True


def test_exact_t_quantile() -> None:
    assert stats.t_quantile(25) == pytest.approx(2.059539, abs=1e-6)
    assert stats.t_quantile(1) == pytest.approx(12.7062, abs=1e-4)


def test_bootstrap_is_seeded_and_sane() -> None:
    rng = np.random.default_rng(0)
    no = rng.random(40)
    wi = no + 0.2 + rng.normal(0, 0.1, 40)
    a = stats.paired_bootstrap(no, wi, n_boot=1000, seed=7)
    b = stats.paired_bootstrap(no, wi, n_boot=1000, seed=7)
    c = stats.paired_bootstrap(no, wi, n_boot=1000, seed=8)
    assert a == b and a != c
    assert a.low is not None and a.high is not None
    assert a.low < (wi - no).mean() < a.high and a.excludes_zero is True
    assert stats.paired_bootstrap(np.array([0.0]), np.array([1.0])).low is None


def test_wilson_interval_known_values() -> None:
    lo, hi = stats.wilson_interval(12, 104)
    assert (lo, hi) == pytest.approx((0.06725, 0.19092), abs=1e-5)
    lo, hi = stats.wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.27753, abs=1e-5)
    assert all(math.isnan(x) for x in stats.wilson_interval(0, 0))


def test_min_detectable_lift_has_80_percent_power() -> None:
    sd, n = 0.3, 26
    mdl = stats.min_detectable_lift(sd, n)
    assert mdl is not None
    assert stats._paired_t_power(mdl, sd, n, 0.05) == pytest.approx(0.80, abs=1e-6)
    # close to the textbook approximation (t_.975 + t_.80)·sd/√n
    approx = (sps.t.ppf(0.975, n - 1) + sps.t.ppf(0.8, n - 1)) * sd / math.sqrt(n)
    assert mdl == pytest.approx(approx, rel=0.03)
    assert stats.min_detectable_lift(None, 10) is None
    assert stats.min_detectable_lift(0.3, 1) is None


def test_prompts_needed_is_the_smallest_sufficient_n() -> None:
    n = stats.prompts_needed(0.3, 0.10)
    assert n is not None
    assert stats._paired_t_power(0.10, 0.3, n, 0.05) >= 0.8
    assert stats._paired_t_power(0.10, 0.3, n - 1, 0.05) < 0.8
    assert stats.prompts_needed(0.0) is None and stats.min_detectable_lift(0.0, 10) is None


def test_week_over_week_pending_until_four_runs() -> None:
    w = stats.week_over_week(0.3, 0.05, 26, [("w1", 0.2, 0.05), ("w2", 0.25, 0.06)])
    assert not w.ready and w.n_runs == 3
    assert stats.WOW_PENDING_TEXT == "Will be computed after four runs."


def test_week_over_week_threshold() -> None:
    prior = [("w1", 0.20, 0.05), ("w2", 0.40, 0.05), ("w3", 0.30, 0.04)]
    w = stats.week_over_week(0.45, 0.05, 26, prior)
    assert w.ready and w.prev_key == "w3" and w.delta == pytest.approx(0.15)
    se_d = math.sqrt(0.05**2 + 0.04**2)
    assert w.within == pytest.approx(stats.t_quantile(25) * se_d)
    assert w.between == pytest.approx(np.std([0.2, 0.4, 0.3], ddof=1))
    assert w.within is not None and w.between is not None and w.threshold is not None
    assert w.threshold == pytest.approx(max(w.within, w.between))
    assert w.actionable is (w.threshold < 0.15)


def test_cell_run_means_exclude_runs() -> None:
    cost = np.array([1.0, 3.0, 100.0, NAN, 2.0])
    model = np.array([0, 0, 0, 0, 0])
    cond = np.array([0, 0, 0, 0, 1])
    include = np.array([True, True, False, True, True])  # the 100.0 run is budget-capped
    mean, n = stats.cell_run_means(cost, model, cond, include, 1)
    assert mean.tolist() == [[2.0, 2.0]] and n.tolist() == [[2, 1]]


def test_duration_summary() -> None:
    d = stats.duration_summary(np.array([1000.0, 3000.0, NAN]))
    assert d == {"runs_timed": 2, "total_s": 4.0, "mean_s": 2.0, "median_s": 2.0, "max_s": 3.0}


def test_wilson_bounds_is_the_one_no_trials_rule() -> None:
    """Every rate with an interval (cells, triggering, judge-check, the lint report) bounds
    k/n through ``intervals.wilson_bounds``: None without trials, else ``wilson_interval``."""
    from pytest_skilllift.intervals import wilson_bounds, wilson_interval

    assert wilson_bounds(0, 0) is None
    assert wilson_bounds(3, 10) == wilson_interval(3, 10)
    lo, hi = wilson_bounds(10, 10) or (0.0, 0.0)
    assert 0.6 < lo < 1.0 and abs(hi - 1.0) < 1e-12
