"""``skilllift compare --fail-on-regression``: a regression alarm with a known false-alarm rate.

A prompt counts as regressed only when its drop is beyond its own rep noise, with Holm's
correction over the week-level paired tests and every prompt's test. Measured by seeded
simulation on A/A pairs of the real week 20260808 and of the demo week (four reps), at a size
that keeps this file to a few seconds; the full size is benchmarks/bench_regression_alarm.py.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest

from pytest_skilllift.report import compare_weeks as cw
from pytest_skilllift.report import noise, stats
from pytest_skilllift.report.summarize import summarize_week

from .test_compare_weeks import edit_csv, musts_of, run

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REAL = FIXTURES / "data" / "qdrant-skills" / "weekly" / "20260808"
DEMO = FIXTURES / "demo-week-4reps" / "20261201"
SIMS = 200
SEED = 20260808


def rep_scores(week: Path) -> np.ndarray:
    """(M, P, R) with-skill rep composites of a week."""
    s = summarize_week(week, write=False, plots=False)
    assert s.aggregates is not None and not s.problems
    return np.moveaxis(s.aggregates.rep_composite[:, :, 1, :], 1, 0)


# ----------------------------------------------------------------------------- pure parts


def test_holm_and_benjamini_hochberg_by_hand() -> None:
    p = np.array([0.01, 0.04, np.nan, 0.03, 0.005])
    # Holm: sorted 0.005, 0.01, 0.03, 0.04 × 4, 3, 2, 1 → 0.02, 0.03, 0.06, 0.06 (monotone)
    assert stats.holm(p) == pytest.approx([0.03, 0.06, np.nan, 0.06, 0.02], nan_ok=True)
    # BH: 0.005·4/1, 0.01·4/2, 0.03·4/3, 0.04·4/4 → 0.02, 0.02, 0.04, 0.04
    assert stats.benjamini_hochberg(p) == pytest.approx([0.02, 0.04, np.nan, 0.04, 0.02],
                                                        nan_ok=True)
    assert np.isnan(stats.holm(np.array([np.nan]))).all()


def test_rep_noise_test_uses_the_prompts_own_reps_and_the_pooled_prior() -> None:
    before = np.array([[1.0, 1.0], [1.0, 0.0], [0.5, 0.5], [0.7, np.nan]])
    after = np.array([[0.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.1, np.nan]])
    t = stats.rep_noise_test(before, after, prior_df=8.0)
    # pooled rep variance: SS 0.5 + 0.5 over 4 df (prompts 0–2 have 2 df each, 3 has 0)
    assert t.rep_df == 6 and t.rep_var == pytest.approx(1.0 / 6)
    # prompt 0: own SS 0 → variance (6·(1/6) + 0) / (6 + 2) (prior df capped at the total)
    assert t.se[0] == pytest.approx(np.sqrt(1.0 / 8))
    from scipy import stats as sps

    assert t.df[0] == 8
    assert t.p_drop[0] == pytest.approx(sps.t.cdf(-1.0 / np.sqrt(1.0 / 8), 8))
    assert t.p_rise[0] == pytest.approx(1 - t.p_drop[0])
    assert t.diff[1] == 0 and t.p_drop[1] == pytest.approx(0.5)
    # one rep on each side: not tested, whatever it moved
    assert np.isnan(t.p_drop[3]) and np.isnan(t.diff[3])
    assert list(t.k_before) == [2, 2, 2, 1]


def test_no_rep_noise_at_all_calls_any_drop_a_regression() -> None:
    x = np.array([[[1.0, 1.0], [0.5, 0.5]]])
    y = x.copy()
    y[0, 1] = 0.25
    alarm = stats.regression_alarm(x, y)
    assert alarm.regressed.tolist() == [[False, True]] and alarm.alarm
    assert not stats.regression_alarm(x, x.copy()).alarm


# ----------------------------------------------------------------------------- measured


@pytest.mark.parametrize("week, kind", [(REAL, noise.AA_SPLIT), (REAL, noise.AA_PARAMETRIC),
                                        (DEMO, noise.AA_SPLIT), (DEMO, noise.AA_PARAMETRIC)])
def test_false_alarm_rate_on_aa_pairs_is_at_most_5_percent(week: Path, kind: str) -> None:
    rate = noise.aa_alarm_rate(rep_scores(week), kind=kind, sims=SIMS, seed=SEED)
    assert rate.alarm_rate <= 0.05
    if week == REAL:
        # the old per-prompt rule (any drop > 0.10) flags a prompt in nearly every A/A pair
        assert rate.margin_rule_rate >= 0.95


def test_the_simulation_is_seeded() -> None:
    x = rep_scores(REAL)
    one = noise.aa_alarm_rate(x, kind=noise.AA_PARAMETRIC, sims=50, seed=7)
    assert one == noise.aa_alarm_rate(x, kind=noise.AA_PARAMETRIC, sims=50, seed=7)


def _split_real_week(dst: Path) -> tuple[Path, Path]:
    """Week 20260808 as two weeks: rep 1 in one, rep 2 (relabelled 1) in the other."""
    out = []
    for rep, name in (("1", "20260801"), ("2", "20260808")):
        w = dst / name
        w.mkdir(parents=True)
        for f in ("manifest.csv", "scores.csv"):
            with (REAL / f).open(newline="") as fh:
                rows = [r for r in csv.DictReader(fh) if r["rep"] == rep]
            for r in rows:
                r["rep"] = "1"
            with (w / f).open("w", newline="") as fh:
                wr = csv.DictWriter(fh, fieldnames=list(rows[0]))
                wr.writeheader()
                wr.writerows(rows)
        out.append(w)
    return out[0], out[1]


def test_rep_one_against_rep_two_of_the_real_week_is_no_regression(tmp_path: Path) -> None:
    a, b = _split_real_week(tmp_path / "weekly")
    result = cw.compare(a, b)
    moved = [r for r in result["prompts"] if r["before"] is not None and r["after"] is not None
             and r["before"] - r["after"] > 0.10]
    assert len(moved) >= 9  # today's 0.10 margin flags these prompts
    assert all(r["change"] == cw.WITHIN_REP_NOISE for r in moved)  # one rep per side
    rc, text = run(str(a), str(b), "--fail-on-regression", "--margin", "0.10")
    assert rc == 0 and "no regression found" in text
    assert text.index("## Regression alarm") < text.index("## Per prompt")  # week test first


def test_a_real_regression_is_still_found_in_the_demo_week(tmp_path: Path) -> None:
    a, b = tmp_path / "weekly" / "20261124", tmp_path / "weekly" / "20261201"
    shutil.copytree(DEMO, a)
    shutil.copytree(DEMO, b)
    assert run(str(a), str(b), "--fail-on-regression")[0] == 0
    assert edit_csv(b / "scores.csv", musts_of("python-packaging-pyproject", "sonnet"),
                    {"verdict": "missing", "credit": "0.0", "contribution": "0.0"}) > 0
    result = cw.compare(a, b)
    reg = [(r["prompt"], r["model"], r["k_before"], r["k_after"]) for r in result["prompts"]
           if r["change"] == cw.REGRESSED]
    assert reg == [("python-packaging-pyproject", "sonnet", 4, 4)]
    assert run(str(a), str(b), "--fail-on-regression")[0] == 1


def test_a_real_regression_is_found_in_every_high_prompt_of_the_real_week() -> None:
    """Power, measured: zero one prompt's with-skill score (musts all missing, every rep)
    in turn; the alarm finds nearly every prompt that was at ≥ 0.7."""
    found, tried = noise.alarm_power(rep_scores(REAL))
    assert tried == 40 and found >= 0.85 * tried


# ----------------------------------------------------------------------------- one account


def test_the_rule_and_the_paired_test_are_reconciled_in_one_sentence() -> None:
    from pytest_skilllift.report.verdicts import PairedTest

    sig = PairedTest(26, -0.05, 0.02, 25, 2.06, -0.09, -0.01, 0.02)
    text = cw.movement_reading(26, 5, sig, clears=False)
    assert "the paired test finds a change (p = 0.02) that the don't-act rule calls noise" \
        in text and "ignores that the same prompts were measured twice" in text
    assert "conservative by design" in text
    flat = PairedTest(26, -0.01, 0.02, 25, 2.06, -0.05, 0.03, 0.6)
    assert cw.movement_reading(26, 5, flat, clears=False).startswith("both agree: within")
    assert cw.movement_reading(26, 5, sig, clears=True).startswith("both agree: the move")


def test_two_weeks_without_a_common_prompt_have_nothing_to_compare(tmp_path: Path) -> None:
    from .test_weekio import write_week

    a = write_week(tmp_path / "weekly" / "20260801", prompts=("p-a", "p-b"))
    b = write_week(tmp_path / "weekly" / "20260808", prompts=("p-x", "p-y"))
    result = cw.compare(a, b)
    assert result["models"]["sonnet"]["reading"] == (
        "nothing to compare: no prompt has a lift in both weeks")
    rc, text = run(str(a), str(b), "--fail-on-regression")
    assert rc == 0 and "| nothing to compare |" in text and "within noise" not in text


def test_empty_shapes_raise_no_alarm() -> None:
    for shape in ((0, 3, 2), (2, 0, 2), (1, 3, 1)):
        x = np.full(shape, np.nan)
        alarm = stats.regression_alarm(x, x)
        assert not alarm.alarm and alarm.drop_p_adj.shape == shape[:2]
