"""Pass rates and their Wilson intervals, the three states, the sign test, the paired test."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from pytest_skilllift.report import verdicts
from pytest_skilllift.report.stats import wilson_interval
from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.week import identity as ident

from .test_week_io import write_week

# --- statistics against known values and scipy -----------------------------------------------


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    # Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I,
    # method 3 (Wilson score, no continuity correction).
    (81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
])
def test_wilson_interval_matches_published_values(k: int, n: int, low: float,
                                                  high: float) -> None:
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=5e-5) and hi == pytest.approx(high, abs=5e-5)


def test_binomial_p_is_scipy_binomtest() -> None:
    for n in range(0, 41):
        for k in range(0, n + 1):
            expected = sps.binomtest(k, n, 0.5).pvalue if n else 1.0
            assert verdicts.binomial_two_sided_p(k, n) == pytest.approx(expected, rel=1e-9,
                                                                         abs=1e-15), (k, n)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_paired_test_is_scipy_ttest_rel(seed: int) -> None:
    rng = np.random.default_rng(seed)
    before = rng.uniform(0, 1, 30)
    after = before + rng.normal(0.05, 0.2, 30)
    before[[3, 17]] = np.nan  # prompts missing from one week are left out of the pairs
    after[9] = np.nan
    t = verdicts.paired_test(before, after)
    keep = ~np.isnan(before) & ~np.isnan(after)
    ref = sps.ttest_rel(after[keep], before[keep])
    ci = ref.confidence_interval(0.95)
    assert t.n == 27 and t.df == 26
    assert t.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert t.ci_low == pytest.approx(ci.low, rel=1e-9)
    assert t.ci_high == pytest.approx(ci.high, rel=1e-9)
    assert t.difference == pytest.approx(float(np.mean(after[keep] - before[keep])))


def test_paired_test_degenerate_cases() -> None:
    assert verdicts.paired_test(np.array([]), np.array([])).difference is None
    one = verdicts.paired_test(np.array([0.2]), np.array([0.5]))
    assert one.difference == pytest.approx(0.3) and one.se is None and one.p_value is None
    flat = verdicts.paired_test(np.array([0.2, 0.4]), np.array([0.2, 0.4]))
    assert flat.difference == 0 and flat.p_value is None  # no spread, no move: undefined


# --- the sign test and its verdict ---------------------------------------------------------------


def test_sign_test_counts_one_vote_per_prompt() -> None:
    no = np.array([0.0, 0.5, 1.0, 0.5, np.nan, 0.2, 0.4])
    with_ = np.array([1.0, 0.5, 0.5, 0.75, 1.0, 0.2 + 1e-12, 0.44])
    st = verdicts.sign_test(no, with_)
    # the NaN prompt is not a pair; a difference within the 0.05 epsilon is a tie (0.04 too)
    assert (st.n, st.wins, st.ties, st.losses, st.voting) == (6, 2, 3, 1, 3)
    # one-sided: P(X >= 2 | n=3) = (3 + 1) / 8
    assert st.p_value == pytest.approx(0.5)
    assert st.p_value == pytest.approx(sps.binomtest(2, 3, 0.5, alternative="greater").pvalue)
    # 6 eligible prompts (ties included, as Vally counts them) ≥ 5: the test runs
    assert st.verdict == "no change" and "p = 0.5" in st.reason
    assert st.to_json()["voting"] == 3 and st.to_json()["epsilon"] == 0.05


def test_one_sided_binomial_tail_by_hand() -> None:
    # P(X >= 5 | n=5) = 1/32; P(X >= 4 | n=5) = 6/32; P(X >= 8 | n=10) = 56/1024
    assert verdicts.binomial_one_sided_p(5, 5) == pytest.approx(1 / 32)
    assert verdicts.binomial_one_sided_p(4, 5) == pytest.approx(6 / 32)
    assert verdicts.binomial_one_sided_p(8, 10) == pytest.approx(56 / 1024)
    assert verdicts.binomial_one_sided_p(0, 10) == 1.0


@pytest.mark.parametrize(("n", "wins", "losses", "verdict", "why"), [
    (5, 5, 0, "helps", "p = 0.0312"),        # 1/32 <= 0.05, net 5 >= 1
    # 10 eligible prompts (6 tied) ≥ 5 (Vally counts ties): the test runs, P(X≥4|4) = 1/16
    (10, 4, 0, "no change", "p = 0.0625"),
    (4, 4, 0, "underpowered", "4 eligible prompt(s) < 5"),  # whatever the sign
    (10, 4, 1, "no change", "p = 0.188"),    # P(X>=4|5) = 6/32 > 0.05
    # the same rule for the losses: this tool's own, named so (Vally only reports it)
    (10, 0, 5, "hurts", "this tool's rule, not Vally's"),
    (6, 6, 0, "helps", "net 6 ≥ 20% of 6"),
    # 8 of 10 voting: p = 56/1024 = 0.0547 > 0.05 (two-sided would be 0.109)
    (10, 8, 2, "no change", "p = 0.0547"),
    # 100 prompts, 12 voting wins of 13: p ≈ 0.0017 but net 11 < 20 (20% of 100)
    (100, 12, 1, "no change", "net wins 11 < 20%"),
])
def test_vally_verdict_rules(n: int, wins: int, losses: int, verdict: str, why: str) -> None:
    got, reason = verdicts.sign_verdict(n, wins, losses)
    assert got == verdict and why in reason, reason


def test_the_verdict_docstrings_say_one_sided() -> None:
    assert "two-sided binomial p over the non-tied" not in (verdicts.__doc__ or "")
    assert "one-sided" in (verdicts.__doc__ or "")


def test_a_fired_dormancy_query_blocks_verdict_helps_and_is_named() -> None:
    from pytest_skilllift.report import gates
    from pytest_skilllift.week.tables import Week

    m = object.__new__(verdicts.WeekMeasures)
    m.data = {"models": {"sonnet": {"sign_test": {"verdict": "helps"}}},
              "triggers": {"sonnet": {"fam": {"false_triggers": [
                  {"query": "what is the weather", "runs": 1, "of": 3}]}}}}
    m._m, m._p, m.models, m.week, m.agg = {"sonnet": 0}, {"p": 0}, ["sonnet"], Week(
        Path("unused"), ["p"], ["sonnet"]), None
    assert m.value("verdict", "sonnet", None, None) == verdicts.HELPS_BLOCKED
    gs, _ = gates.load_gates(["verdict==helps"], gates.Scopes(("sonnet",), ("p",)))
    r = gates.evaluate(gs, m, gates.CoverageGuard(1, 1, 0.0)).results[0]
    assert not r.passed and 'fam: "what is the weather"' in r.note
    m.data["triggers"] = {}
    assert m.value("verdict", "sonnet", None, None) == "helps"


# --- three states and pass rates on a week -------------------------------------------------------


def three_state_week(root: Path, *, pass_threshold: float | None = None) -> Path:
    """sonnet, 3 prompts × 2 reps. with-skill: p-a r2 dropped (CLI exit 1: unscored), p-b r2
    never graded (judge failed: errored), p-c r2 one must ungraded (errored); the other three
    reps score 1.0. no-skill: p-a all missing (composite 0.0, a legitimate zero)."""
    week = write_week(
        root,
        met=lambda p, m, c, r, i: c == "with-skill" or (p != 0 and (i + r) % 2 == 0),
        run_override=lambda run: run.update(exit_code="1") if run["run_id"] == (
            "p-a-sonnet-with-skill-r2") else None,
        skip_scores=lambda run: run["run_id"] == "p-b-sonnet-with-skill-r2")
    path = week / "scores.csv"
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    target = next(r for r in rows if (r["prompt"], r["condition"], r["rep"], r["item_type"]) == (
        "p-c", "with-skill", "2", "must"))
    target.update(verdict="", credit="", contribution="", evidence_quote="")
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    if pass_threshold is not None:
        from .test_week_identity import make

        ident.write_week_record(week, ident.WeekRecord(identity=make(),
                                                       pass_threshold=pass_threshold))
    return week


def test_three_states_pass_rates_and_wilson(tmp_path: Path) -> None:
    week = three_state_week(tmp_path / "w")
    s = summarize_week(week, write=True, plots=False)
    cells = {c["condition"]: c for c in s.data["cells"]}
    ws = cells["with-skill"]
    # 4 scored reps pass — p-c r2, one must item ungraded, is scored on its graded items (the
    # one rule); the dropped run is unscored, the judge failure (no graded must) is errored:
    # absences, out of the denominator, never a pass
    assert (ws["pass_passed"], ws["pass_scored"], ws["pass_errored"],
            ws["pass_unscored"]) == (4, 4, 1, 1)
    assert ws["pass_rate"] == 1.0
    assert (ws["pass_rate_ci_low"], ws["pass_rate_ci_high"]) == pytest.approx(
        wilson_interval(4, 4))
    ns = cells["no-skill"]
    # no-skill composites: p-a 0.0 and 0.0 (legitimate zeros: scored, failed), p-b/p-c r1
    # 1/3 + 0.1 − 0.25 and r2 2/3: none reaches 0.7
    assert (ns["pass_passed"], ns["pass_scored"], ns["pass_errored"]) == (0, 6, 0)
    assert ns["pass_rate"] == 0.0 and ns["pass_rate_ci_low"] == pytest.approx(0.0, abs=1e-12)
    assert ns["pass_rate_ci_high"] == pytest.approx(wilson_interval(0, 6)[1])
    assert s.data["pass_threshold"] == 0.7
    cov = s.data["coverage"]
    assert cov["errored_prompt_reps"] == 1 and cov["partly_graded_prompt_reps"] == 1
    # the partly graded p-c r2 is in every statistic; what left them is named: the dropped
    # run's rows (prompt×rep) and the judge-failed run, which has no row (a dropped run)
    assert cov["dropped_prompt_reps"] == [
        {"prompt": "p-a", "model": "sonnet", "condition": "with-skill", "rep": 2}]
    assert {d["run_id"] for d in cov["dropped"]} == {"p-a-sonnet-with-skill-r2",
                                                      "p-b-sonnet-with-skill-r2"}
    on_disk = json.loads((week / "scorecard.json").read_text())
    assert on_disk["cells"][1]["pass_rate_ci_high"] is not None
    md = (week / "scorecard.md").read_text()
    assert "### Pass rate (composite ≥ 0.70)" in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| sonnet | with-skill | 1.00 ["))
    lo, hi = wilson_interval(4, 4)
    assert f"1.00 [{lo:.2f}–{hi:.2f}]" in row and "| 4 of 4 " in row
    assert "### One vote per prompt — the sign test" in md


def test_pass_threshold_comes_from_week_json(tmp_path: Path) -> None:
    week = three_state_week(tmp_path / "w", pass_threshold=0.6)
    s = summarize_week(week, write=False, plots=False)
    ns = next(c for c in s.data["cells"] if c["condition"] == "no-skill")
    assert s.data["pass_threshold"] == 0.6
    assert ns["pass_passed"] == 2  # p-b and p-c r2 (composite 2/3) now pass


def test_unreadable_week_json_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    week = write_week(tmp_path / "w")
    (week / "week.json").write_text("{broken")
    s = summarize_week(week, write=False, plots=False)
    assert s.data["pass_threshold"] == 0.7
    assert any("week.json" in p and "default pass threshold 0.7" in p for p in s.problems)


def test_sign_test_in_scorecard_json(reference_data: Path) -> None:
    s = summarize_week(reference_data / "qdrant-skills" / "weekly" / "20260808", write=False,
                       plots=False)
    st = s.data["models"]["haiku"]["sign_test"]
    assert (st["n_prompts"], st["wins"], st["ties"], st["losses"]) == (26, 19, 5, 2)
    # one-sided over the 21 voting prompts: P(X >= 19) = (1 + 21 + 210) / 2^21
    assert st["voting"] == 21
    assert st["p_value"] == pytest.approx(232 / 2 ** 21)
    assert st["p_value"] == pytest.approx(
        sps.binomtest(19, 21, 0.5, alternative="greater").pvalue)
    assert st["verdict"] == "helps"  # 21 voting ≥ 5, net 17 ≥ 20% of 26 = 5.2
