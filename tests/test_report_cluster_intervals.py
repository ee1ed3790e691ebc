"""Intervals that respect clustering: beside each Wilson interval, one that resamples whole
prompts (or queries), seeded; gates on ``*_ci_low`` read the cluster-aware bound; the paired
bootstrap prints the digits its Monte Carlo error supports; a lift's interval and its minimum
detectable lift never print past their range."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_skilllift.report import gates, stats
from pytest_skilllift.report.sections import custom_checks, lift, triggering
from pytest_skilllift.report.summarize import Summary, summarize_week
from pytest_skilllift.report.verdicts import WeekMeasures
from pytest_skilllift.week.checks import COLUMNS
from pytest_skilllift.week.files import CUSTOM_CHECKS_CSV

REAL = Path(__file__).resolve().parent / "fixtures" / "data" / "qdrant-skills" / "weekly" \
    / "20260808"


@pytest.fixture(scope="module")
def real() -> Summary:
    return summarize_week(REAL, write=False, plots=False)


def width(pair: Any) -> float:
    lo, hi = pair
    return float(hi - lo)


# ----------------------------------------------------------------------------- pure


def test_cluster_bootstrap_is_seeded_and_wider_when_reps_agree() -> None:
    # 30 prompts × 2 reps that always agree: 60 trials, but only 30 independent answers
    k = np.array([2] * 12 + [0] * 18)
    n = np.full(30, 2)
    a = stats.cluster_bootstrap_rate(k, n)
    assert a == stats.cluster_bootstrap_rate(k, n)  # seeded
    rich_n = 1 + np.arange(60) % 7  # unequal clusters: the ratio takes many values
    rich_k = (np.arange(60) * 5) % (rich_n + 1)
    assert (stats.cluster_bootstrap_rate(rich_k, rich_n, seed=1)
            != stats.cluster_bootstrap_rate(rich_k, rich_n, seed=2))
    assert a[0] is not None and a[1] is not None and a[0] < 0.4 < a[1]
    wilson = stats.wilson_interval(24, 60)
    assert width(a) > 1.25 * width(wilson)  # the Wilson interval is too narrow here
    # independent reps (one trial per cluster): about Wilson's width
    one = stats.cluster_bootstrap_rate(np.array([1] * 24 + [0] * 36), np.ones(60))
    assert width(one) == pytest.approx(width(wilson), rel=0.15)
    assert stats.cluster_bootstrap_rate(np.array([1]), np.array([2])) == (None, None)


def test_the_gated_pass_rate_bound_does_not_collapse_at_the_ceiling() -> None:
    """52 of 52 passing reps of 26 prompts: the prompt bootstrap said [1.000, 1.000] (so a
    gate ``pass_rate_ci_low>=0.999`` passed); the prompt-clustered interval counts the 26
    prompts as the unit: Clopper–Pearson for 26 of 26."""
    k, n = np.full(26, 2), np.full(26, 2)
    assert stats.cluster_bootstrap_rate(k, n) == (1.0, 1.0)
    lo, hi = stats.cluster_rate_interval(k, n)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 26))  # 0.868
    assert lo is not None and lo < stats.wilson_interval(52, 52)[0] < 0.999  # Wilson: 0.931
    # independent reps (every prompt's two reps disagree as often as chance): ρ ≈ 0, the
    # effective sample size is every rep, about Wilson's width
    kk = np.array([2] * 9 + [1] * 12 + [0] * 5)
    lo2, hi2 = stats.cluster_rate_interval(kk, n)
    assert lo2 is not None and hi2 is not None and lo2 < 30 / 52 < hi2
    assert width((lo2, hi2)) == pytest.approx(width(stats.wilson_interval(30, 52)), rel=0.2)
    # reps that always agree: 26 answers, not 52
    agree = np.array([2] * 13 + [0] * 13)
    assert width(stats.cluster_rate_interval(agree, n)) > 1.3 * width(
        stats.wilson_interval(26, 52))
    assert stats.cluster_rate_interval(np.zeros(0), np.zeros(0)) == (None, None)


def test_a_pass_rate_gate_fails_at_the_ceiling_it_cannot_show(tmp_path: Path) -> None:
    from .test_week_io import write_week

    week = write_week(tmp_path / "w", prompts=tuple(f"p{i}" for i in range(26)),
                      reps=2, met=lambda *_: True)
    s = summarize_week(week, write=False, plots=False)
    measures = WeekMeasures(s.week, s.aggregates, 0.7, card=s.data)
    gs, _ = gates.load_gates(["sonnet.with-skill.pass_rate_ci_low>=0.999"],
                             gates.Scopes(tuple(s.week.models), tuple(s.week.prompts)))
    r = gates.evaluate(gs, measures, gates.CoverageGuard(1, 1, 0.0)).results[0]
    assert r.measured == pytest.approx(0.868, abs=1e-3) and not r.passed


def test_bootstrap_mc_error_matches_seed_to_seed_spread(real: Summary) -> None:
    agg = real.aggregates
    assert agg is not None
    lows = [low for s in range(40) if (low := stats.paired_bootstrap(
        agg.must[:, 1, 0], agg.must[:, 1, 1], seed=s).low) is not None]
    assert len(lows) == 40
    mc = real.bootstraps["haiku"].mc_se
    assert mc is not None
    assert float(np.std(lows, ddof=1)) == pytest.approx(mc, rel=0.4)
    # ≈ 0.004: the second decimal changes in half the reprints or more (measured below)
    assert stats.digits_for(mc) == 1
    assert stats.digits_for(0.00004) == 3 and stats.digits_for(0.0004) == 2
    assert stats.digits_for(None) == 3


def test_printed_bootstrap_digits_are_reproduced_by_90_percent_of_seeds(real: Summary) -> None:
    """Reprinted with 60 other seeds, the interval at the printed digits is the same in at
    least 90% of them, for both models (at two digits: 58% and 7% on this week)."""
    agg = real.aggregates
    assert agg is not None
    for mi, label in enumerate(real.week.models):
        per = real.data["bootstrap"]["per_model"][label]
        d = per["digits"]
        assert per["low"] is not None and per["high"] is not None
        shown = (round(per["low"], d), round(per["high"], d))
        same = sum((round(b.low, d), round(b.high, d)) == shown
                   for b in (stats.paired_bootstrap(agg.must[:, mi, 0], agg.must[:, mi, 1],
                                                    seed=s) for s in range(60))
                   if b.low is not None and b.high is not None)
        assert same >= 0.9 * 60, (label, d, same)
        two = sum((round(b.low, 2), round(b.high, 2)) == (round(per["low"], 2),
                                                          round(per["high"], 2))
                  for b in (stats.paired_bootstrap(agg.must[:, mi, 0], agg.must[:, mi, 1],
                                                   seed=s) for s in range(60))
                  if b.low is not None and b.high is not None)
        assert two < 0.9 * 60  # the old rule's two digits were not reproducible


# ----------------------------------------------------------------------------- scorecard


def test_pass_rates_carry_a_prompt_bootstrap_and_the_gate_reads_it(real: Summary) -> None:
    cell = next(c for c in real.data["cells"]
                if (c["model"], c["condition"]) == ("haiku", "with-skill"))
    lo, hi = cell["pass_rate_cluster95"]
    assert lo is not None and hi is not None and cell["pass_rate"] is not None
    assert lo <= cell["pass_rate"] <= hi
    assert width((lo, hi)) > width((cell["pass_rate_ci_low"], cell["pass_rate_ci_high"]))
    assert "95% prompt-clustered (gated)" in real.markdown
    measures = WeekMeasures(real.week, real.aggregates, 0.7, card=real.data)
    gs, _ = gates.load_gates(["haiku.with-skill.pass_rate_ci_low>=0.5"],
                             gates.Scopes(tuple(real.week.models), tuple(real.week.prompts)))
    r = gates.evaluate(gs, measures, gates.CoverageGuard(1, 1, 0.0)).results[0]
    assert r.measured == pytest.approx(lo) and r.measured != cell["pass_rate_ci_low"]
    assert "prompt-clustered" in gates.METRICS["pass_rate_ci_low"].description


def test_trigger_miss_rate_gets_a_prompt_bootstrap(real: Summary) -> None:
    s = real.data["activation_summary"]
    lo, hi = s["trigger_miss_rate_cluster95"]
    assert lo is not None and hi is not None
    assert lo <= s["trigger_misses"] / s["with_skill_runs"] <= hi
    # misses cluster in a few prompts: the honest interval is wider than Wilson's
    assert width((lo, hi)) > width(s["trigger_miss_rate_wilson95"])
    assert "; resampling prompts " in real.markdown


def test_custom_check_rates_get_a_prompt_bootstrap(tmp_path: Path) -> None:
    rows = []
    for p in range(8):
        for rep in (1, 2):
            for cond in ("no-skill", "with-skill"):
                ok = (cond == "with-skill" and p < 6) or (cond == "no-skill" and p < 2)
                rows.append({"test": "check_x", "prompt": f"p{p}", "skill_family": "f",
                             "model": "sonnet", "condition": cond, "rep": str(rep),
                             "run_id": f"p{p}-{cond}-r{rep}",
                             "outcome": "passed" if ok else "failed", "reason": ""})
    with (tmp_path / CUSTOM_CHECKS_CSV).open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows(rows)
    data = custom_checks.from_week_dir(tmp_path, ["sonnet"])
    with_ = next(c for c in data["custom_checks"] if c["condition"] == "with-skill")
    lo, hi = with_["pass_rate_cluster95"]
    assert lo is not None and hi is not None and lo < 0.75 < hi
    assert width((lo, hi)) > width((with_["pass_rate_ci_low"], with_["pass_rate_ci_high"]))
    assert "]p |" in "\n".join(custom_checks.render(data))


def test_trigger_recall_and_precision_get_a_query_bootstrap() -> None:
    rows = []
    for q in range(10):
        for rep in (1, 2, 3):
            should = q < 6
            fired = (q < 4) if should else (q == 9)
            rows.append({"run_status": "ok", "should_trigger": "1" if should else "0",
                         "triggered": "1" if fired else "0", "family": "f",
                         "query_index": str(q), "run_id": f"q{q}r{rep}", "model": "sonnet"})
    m = triggering._family_numbers(rows)
    assert m["recall"] == pytest.approx(12 / 18) and m["precision"] == pytest.approx(12 / 15)
    assert width(m["recall_cluster95"]) > width(m["recall_wilson95"])
    lo, hi = m["precision_cluster95"]
    assert lo is not None and hi is not None and lo <= 0.8 <= hi


# ----------------------------------------------------------------------------- ranges


def test_the_real_weeks_bootstrap_prints_one_decimal(real: Summary) -> None:
    b = real.data["bootstrap"]["per_model"]["sonnet"]
    assert b["digits"] == 1 and b["mc_se"] is not None
    lo, hi = real.data["models"]["sonnet"]["bootstrap_low"], \
        real.data["models"]["sonnet"]["bootstrap_high"]
    assert f"[{lo:+.1f}, {hi:+.1f}]" in real.markdown
    assert f"[{lo:+.2f}, {hi:+.2f}]" not in real.markdown
    assert "Printed to the digits that at least 90% of reprints with another seed" \
        in real.markdown
    per_model = real.data["bootstrap"]["per_model"]
    ses = [se for v in per_model.values() if (se := v["mc_se"]) is not None]
    assert len(ses) == len(per_model)
    mc = max(ses)
    assert f"Monte Carlo SE of the endpoints: {mc:.4f}" in real.markdown


def test_a_lift_interval_and_mdl_never_print_past_their_range(real: Summary) -> None:
    card: Any = {k: v for k, v in real.data.items()}
    card["models"] = {k: dict(v) for k, v in real.data["models"].items()}
    m = card["models"]["haiku"]
    m.update(ci_low=0.2, ci_high=1.35, min_detectable_lift=1.4, n_prompts=3)
    text = "\n".join(lift.render(card))
    assert "[+0.200, +1.000]*" in text and "+1.350" in text  # clipped, as computed in a note
    assert "clipped to [−1, 1], the range a lift can take" in text
    assert "not detectable with 3 prompts" in text and "1.400" not in text
    assert "(clipped to [−1, 1])" in text  # the sign-test table's t interval too


# ----------------------------------------------------------------------------- noise floor


def _week(rng: np.random.Generator, lift_sd: float, rep_sd: float, n: int = 200,
          reps: int = 2) -> tuple[np.ndarray, np.ndarray]:
    lift_i = 0.1 + lift_sd * rng.standard_normal(n)
    no = 0.45 + rep_sd * rng.standard_normal((n, reps))
    wi = 0.45 + lift_i[:, None] + rep_sd * rng.standard_normal((n, reps))
    return no, wi


def test_the_noise_floor_reference_follows_rep_noise_against_lift_spread() -> None:
    from pytest_skilllift.report import noise

    rng = np.random.default_rng(3)
    reps = np.array([1, 2])
    # rep noise only: |A/A| / SE ~ |N(0, 2)|, so ≈ 48% clear SE and ≈ 14% clear t·SE
    no, wi = _week(rng, 0.0, 0.05)
    pure = noise.simulated_reference(no, wi, reps, sims=100)
    assert pure.se_rate is not None and pure.t_rate is not None
    assert 0.40 <= pure.se_rate <= 0.56 and 0.09 <= pure.t_rate <= 0.20
    # prompts' lifts spread far more than reps vary: an honest SE is rarely cleared
    no, wi = _week(rng, 0.15, 0.02)
    spread = noise.simulated_reference(no, wi, reps, sims=100)
    assert spread.se_rate is not None and spread.se_rate < 0.15
    assert spread.t_rate is not None and spread.t_rate < 0.001
    assert spread == noise.simulated_reference(no, wi, reps, sims=100)  # seeded


def test_the_noise_floor_section_drops_the_fixed_rule_of_thumb(real: Summary) -> None:
    nf = real.data["noise_floor"]["sonnet"]
    assert nf["reference_sims"] == 400
    assert nf["reference_se_rate"] is not None and nf["reference_t_rate"] is not None
    assert "about 32%" not in real.markdown and "about 5% exceed" not in real.markdown
    assert "(honest: " in real.markdown and "no fixed rule of thumb" in real.markdown


def test_each_models_trigger_miss_rate_gets_a_prompt_bootstrap(real: Summary) -> None:
    for label in ("sonnet", "haiku"):
        m = real.data["models"][label]
        lo, hi = m["trigger_miss_rate_cluster95"]
        rate = m["trigger_miss_rate"]
        assert lo is not None and hi is not None and rate is not None and lo <= rate <= hi


def test_a_zero_spread_t_interval_is_not_estimable_and_its_gate_fails_closed(
        tmp_path: Path) -> None:
    """Three prompts whose version differences are all 0 gave CI [0, 0] and passed
    ``version_lift_ci_low>-0.05``: an SE of 0 from three prompts is not zero uncertainty."""
    lf = stats.paired_lift(np.array([0.5, 0.7, 1.0]), np.array([0.5, 0.7, 1.0]))
    assert lf.se == 0 and not lf.estimable
    assert (lf.ci_low, lf.ci_high, lf.ci_excludes_zero) == (None, None, None)
    from .test_report_versions import MUSTS, REF, version_week

    saved = MUSTS[REF]
    MUSTS[REF] = MUSTS["with-skill"]  # every prompt alike in both versions
    try:
        week = version_week(tmp_path / "w")
    finally:
        MUSTS[REF] = saved
    s = summarize_week(week, write=False, plots=False)
    assert s.data["versions"] is not None
    v = s.data["versions"]["models"]["sonnet"]
    assert v["version_lift"] == 0 and v["version_lift_se"] == 0 and v["ci_low"] is None
    measures = WeekMeasures(s.week, s.aggregates, 0.7, card=s.data)
    gs, _ = gates.load_gates(["version_lift_ci_low>-0.05"],
                             gates.Scopes(tuple(s.week.models), tuple(s.week.prompts)))
    r = gates.evaluate(gs, measures, gates.CoverageGuard(1, 1, 0.0)).results[0]
    assert not r.passed and r.note.startswith("not estimable")


def test_reached_leaf_gets_the_prompt_clustered_interval(real: Summary) -> None:
    """53 of 104 runs reached the leaf: Wilson [0.415, 0.604] counts every rep as
    independent; resampling whole prompts is wider."""
    s = real.data["activation_summary"]
    assert (s["reached_leaf_runs"], s["with_skill_runs"]) == (53, 104)
    lo, hi = s["reached_leaf_rate_cluster95"]
    assert lo is not None and hi is not None and lo < 53 / 104 < hi
    assert width((lo, hi)) > 1.2 * width(s["reached_leaf_rate_wilson95"])
    assert (f"reached leaf in 53 of 104 runs (95% Wilson 0.415–0.604; resampling prompts "
            f"{lo:.3f}–{hi:.3f})") in real.markdown
