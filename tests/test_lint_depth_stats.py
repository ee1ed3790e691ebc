"""The model layers' statistics against hand-computed values (pure functions, no I/O)."""

from __future__ import annotations

import math

import pytest

from pytest_skilllift.intervals import cohen_kappa
from pytest_skilllift.lint.depth_stats import (
    band,
    bootstrap_ci,
    clopper_pearson,
    coefficient_of_variation,
    efficiency_norm,
    elo_bootstrap_ci,
    elo_expected,
    elo_replay,
    elo_update,
    f1_score,
    mc_score,
    t_interval,
    token_summary,
)


def test_f1_over_ten_predictions() -> None:
    # 5 should: 4 predicted; 5 should-not: 1 predicted -> TP 4, FN 1, FP 1.
    preds = [(True, True)] * 4 + [(True, False)] + [(False, True)] + [(False, False)] * 4
    precision, recall, f1 = f1_score(preds)
    assert precision == pytest.approx(0.8) and recall == pytest.approx(0.8)
    assert f1 == pytest.approx(0.8)
    # Nothing predicted to trigger: precision undefined, F1 0 (not an error, not NaN).
    assert f1_score([(True, False)] * 5 + [(False, False)] * 5) == (None, 0.0, 0.0)


def test_bands_follow_the_anchors() -> None:
    assert [band(x) for x in (0.0, 0.19, 0.2, 0.39, 0.4, 0.6, 0.79, 0.8, 1.0)] == [
        0, 0, 1, 1, 2, 3, 3, 4, 4]


def test_cohen_kappa_by_hand() -> None:
    # po = 3/4; marginals a: 1/4 each of 4,3,2,1; b: 4 1/4, 3 1/4, 2 1/2
    # pe = 1/16 + 1/16 + 1/8 = 1/4; kappa = (3/4 - 1/4) / (3/4) = 2/3
    assert cohen_kappa([4, 3, 2, 1], [4, 3, 2, 2]) == pytest.approx(2 / 3)
    assert cohen_kappa([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert cohen_kappa([3, 3, 3, 3], [3, 3, 3, 3]) is None  # chance agreement is 1
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError):
        cohen_kappa([1], [1, 2])


def test_clopper_pearson_closed_forms() -> None:
    # k = 0: upper = 1 - (alpha/2)^(1/n); k = n: lower = (alpha/2)^(1/n).
    lo, hi = clopper_pearson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10), abs=1e-9)
    lo, hi = clopper_pearson(10, 10)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 10), abs=1e-9)
    # k = 1, n = 4: lower solves P(X >= 1) = 0.025 -> 1 - (1 - p)^4 = 0.025.
    lo, hi = clopper_pearson(1, 4)
    assert lo == pytest.approx(1 - 0.975 ** 0.25, abs=1e-9)
    # upper solves P(X <= 1) = 0.025 for Bin(4, p)
    assert (1 - hi) ** 4 + 4 * hi * (1 - hi) ** 3 == pytest.approx(0.025, abs=1e-9)
    assert all(math.isnan(x) for x in clopper_pearson(0, 0))


def test_mc_score_formula_and_renormalisation() -> None:
    # 0.40*0.8 + 0.30*(1-0.25) + 0.20*(1-0.1) + 0.10*(1-2000/8000)
    score, dropped = mc_score(0.8, 0.25, 0.1, efficiency_norm(2000))
    assert score == pytest.approx(0.32 + 0.225 + 0.18 + 0.075) and dropped == []
    # CV above 1 is capped at 1 (consistency 0).
    assert mc_score(1.0, 3.0, 0.0, 1.0)[0] == pytest.approx(0.4 + 0 + 0.2 + 0.1)
    # No tokens measured: the other weights renormalised, and named.
    score, dropped = mc_score(0.5, 0.0, 0.0, None)
    assert dropped == ["efficiency_norm"]
    assert score == pytest.approx((0.4 * 0.5 + 0.3 + 0.2) / 0.9)
    assert mc_score(None, None, None, None) == (None, [
        "activation_rate", "consistency", "reliability", "efficiency_norm"])
    assert efficiency_norm(9000) == 0.0


def test_cv_and_intervals() -> None:
    assert coefficient_of_variation([0.5, 1.0]) == pytest.approx(0.25 / 0.75)
    assert coefficient_of_variation([0.7]) is None
    assert coefficient_of_variation([0.0, 0.0]) is None
    ci = bootstrap_ci([0.2, 0.4, 0.6, 0.8], seed=1)
    assert ci is not None and 0.2 <= ci[0] < 0.5 < ci[1] <= 0.8
    assert bootstrap_ci([0.2, 0.4, 0.6, 0.8], seed=1) == ci  # seeded: reproducible
    assert bootstrap_ci([0.5]) is None
    # t interval of (0.6, 0.8): mean 0.7, sd 0.1414, t(1) = 12.706 -> clipped to [0, 1]
    assert t_interval([0.6, 0.8]) == (0.0, 1.0)
    lo, hi = t_interval([0.6, 0.7, 0.8]) or (0, 0)
    assert (lo + hi) / 2 == pytest.approx(0.7) and hi - lo == pytest.approx(
        2 * 4.302652729911275 * 0.1 / math.sqrt(3), rel=1e-6)
    assert t_interval([0.5]) is None


def test_token_summary() -> None:
    s = token_summary([1000, 2000, 3000, 4000, 40000])
    assert s is not None
    assert s.median == 3000 and s.q1 == 2000 and s.q3 == 4000 and s.iqr == 2000
    assert s.outliers == 1  # 40000 > 4000 + 1.5 * 2000
    assert s.efficiency_norm == pytest.approx(1 - 3000 / 8000)
    assert s.efficiency_ci is not None and s.efficiency_ci[0] <= s.efficiency_norm
    assert token_summary([]) is None


def test_elo_updates_by_hand() -> None:
    assert elo_expected(1500, 1500) == 0.5
    assert elo_expected(1600, 1500) == pytest.approx(1 / (1 + 10 ** (-100 / 400)))
    a, b = elo_update(1500, 1500, 1.0)
    assert (a, b) == (1516.0, 1484.0)
    a, b = elo_update(1500, 1500, 0.5)
    assert (a, b) == (1500.0, 1500.0)
    # draw, loss, win against three fresh 1500 opponents, in order
    r = 1500.0
    r += 32 * (0.5 - 0.5)
    r += 32 * (0.0 - 1 / (1 + 10 ** ((1500 - r) / 400)))
    r += 32 * (1.0 - 1 / (1 + 10 ** ((1500 - r) / 400)))
    assert elo_replay([("x", 0.5), ("y", 0.0), ("z", 1.0)]) == pytest.approx(r)
    # the same opponent met twice keeps its updated rating
    twice = elo_replay([("x", 1.0), ("x", 1.0)])
    e2 = 1 / (1 + 10 ** ((1484 - 1516) / 400))
    assert twice == pytest.approx(1516 + 32 * (1 - e2))


def test_elo_bootstrap_interval() -> None:
    matches = [("a", 1.0), ("b", 1.0), ("c", 0.5), ("d", 0.0), ("e", 1.0)]
    ci = elo_bootstrap_ci(matches, seed=3)
    assert ci is not None and ci[0] < elo_replay(matches) < ci[1]
    assert elo_bootstrap_ci(matches, seed=3) == ci
    assert ci[0] >= 1500 - 32 * 5 and ci[1] <= 1500 + 32 * 5  # 5 matches move at most 5K
    assert elo_bootstrap_ci([("a", 1.0)]) is None
