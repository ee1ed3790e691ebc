"""The Version comparison section, pass@k / pass^k, the with-skill@REF arm in the tables and
the config, against hand-computed values (no CLI)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pytest_skilllift.config import SettingsError, parse_conditions
from pytest_skilllift.model import arm_code, arm_of, arm_ref
from pytest_skilllift.report import gates, stats
from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.report.verdicts import WeekMeasures
from pytest_skilllift.run.engine import make_run_id
from pytest_skilllift.week.tables import load_week
from tests.test_week_io import edit_csv, write_week

REF = "with-skill@v1"

# must items met (of 3) by arm and prompt; bonus met in both skill arms, never in no-skill
MUSTS = {"with-skill": (3, 3, 3), REF: (2, 3, 1), "no-skill": (0, 0, 0)}


def version_week(root: Path) -> Path:
    def met(p: int, m: str, c: str, r: int, i: int) -> bool:
        return i < MUSTS[c][p] if i < 3 else c != "no-skill"

    def skill_runs(run: dict[str, str]) -> None:
        if run["condition"] == REF:  # installed like with-skill
            run.update(skill_available="1", skill_activation="skill_tool", skills_sha="0ld0000")

    return write_week(root, conditions=("no-skill", "with-skill", REF), met=met,
                      run_override=skill_runs)


def test_arm_names_parse_and_code() -> None:
    assert arm_ref("with-skill@HEAD~1") == "HEAD~1" and arm_ref("with-skill") is None
    assert arm_of("with-skill@v1.2") == "with-skill@REF" and arm_of("with-all") == "with-all"
    assert arm_code("with-skill@abc") == 4 and arm_code("nope") == -1
    assert parse_conditions("with-skill@HEAD~1,no-skill,with-skill") == (
        "no-skill", "with-skill", "with-skill@HEAD~1")
    for bad, why in (("no-skill,with-skill@", "needs a REF"),
                     ("no-skill,with-skill@a::b", "needs a REF"),
                     ("no-skill,with-skill@a,with-skill@b", "one with-skill@REF arm"),
                     ("with-skill@a", "needs no-skill"),
                     ("no-skill,with-skil", "unknown arm")):
        with pytest.raises(SettingsError, match=why):
            parse_conditions(bad)
    # a directory REF's '/' never reaches a directory name
    assert make_run_id("p", "haiku", "with-skill@old/skills", 1, "w") == (
        "p-haiku-with-skill@old_skills-r1-w")


def test_pass_k_by_hand() -> None:
    comp = np.array([[0.8, 0.6], [0.9, 0.75], [0.1, np.nan], [np.nan, np.nan]])
    pk = stats.pass_k(comp, 0.7)
    np.testing.assert_array_equal(pk.k, [2, 2, 1, 0])
    assert pk.k_fixed == 2 and pk.short is not None
    # the third prompt has one scored rep of k = 2: short, not scored at k = 1
    np.testing.assert_array_equal(pk.short, [False, False, True, False])
    np.testing.assert_array_equal(pk.at_k, [1.0, 1.0, np.nan, np.nan])
    np.testing.assert_array_equal(pk.hat_k, [0.0, 1.0, np.nan, np.nan])
    np.testing.assert_array_equal(pk.flaky, [1.0, 0.0, np.nan, np.nan])
    assert stats.nan_mean(pk.at_k) == pytest.approx(1.0)
    assert stats.nan_mean(np.array([np.nan])) is None


def test_pass_k_is_chen_et_al_at_one_fixed_k() -> None:
    """n = 4 scored reps, c = 2 passing, k = 2: pass@2 = 1 − C(2, 2)/C(4, 2) = 5/6 and
    pass^2 = C(2, 2)/C(4, 2) = 1/6 (not 1 and 0, the k = n reading)."""
    comp = np.array([[0.9, 0.9, 0.1, 0.1]])
    pk = stats.pass_k(comp, 0.7, k=2)
    assert pk.at_k[0] == pytest.approx(5 / 6) and pk.hat_k[0] == pytest.approx(1 / 6)
    with pytest.raises(ValueError, match="k ≥ 1"):
        stats.pass_k(comp, 0.7, k=0)


def test_an_errored_rep_makes_a_prompt_short_not_a_smaller_k() -> None:
    """Two prompts whose second rep failed and then errored (NaN): scored at k = 1 they lifted
    pass^k (the reps left all pass) while the table said k = 2; now they are short."""
    comp = np.array([[0.9, 0.9], [0.9, 0.2], [0.9, np.nan], [0.8, np.nan]])
    pk = stats.pass_k(comp, 0.7)
    assert stats.nan_mean(pk.hat_k) == pytest.approx(0.5)  # 1 of the 2 with k reps
    assert pk.short is not None and pk.short.tolist() == [False, False, True, True]


def test_version_comparison_by_hand(tmp_path: Path) -> None:
    week = version_week(tmp_path / "w")
    s = summarize_week(week, write=True, plots=False)
    assert not s.problems, s.problems
    v = s.data["versions"]
    assert v is not None and v["arm"] == REF and v["ref"] == "v1"
    m = v["models"]["sonnet"]
    # per-prompt must differences now − v1: 1/3, 0, 2/3
    assert m["must_with"] == pytest.approx(1.0) and m["must_ref"] == pytest.approx(2 / 3)
    assert m["version_lift"] == pytest.approx(1 / 3)
    se = (1 / 3) / math.sqrt(3)  # sd of (1/3, 0, 2/3) is 1/3
    assert m["version_lift_se"] == pytest.approx(se)
    assert m["ci_low"] == pytest.approx(1 / 3 - 4.302652729911275 * se)
    assert m["ci_excludes_zero"] is False and m["n_prompts"] == 3
    # two prompts vote (win), one ties: underpowered
    st = m["sign_test"]
    assert (st["wins"], st["ties"], st["losses"], st["verdict"]) == (2, 1, 0, "underpowered")
    # composite = must + 0.1·bonus (clamped): now 1.0 each; v1 0.767, 1.0, 0.433
    # compare's rule: the two reps of each arm agree, but that is not zero noise: the
    # binomial floor of 3 must items over 2 reps keeps both moves within rep noise
    assert m["prompts"] == {"improved": 0, "regressed": 0, "within rep noise": 2,
                            "unchanged": 1, "unscored": 0}
    by_prompt = {r["prompt"]: r for r in v["prompts"]}
    assert by_prompt["p-c"]["ref"] == pytest.approx(1 / 3 + 0.1)
    assert by_prompt["p-b"]["change"] == "unchanged"
    assert m["cost_delta"] == pytest.approx(0.02) and m["turns_delta"] == pytest.approx(2.0)
    assert m["lift_with"] == pytest.approx(1.0) and m["lift_ref"] == pytest.approx(2 / 3)
    # the arm in the other sections, by its name
    assert {c["condition"] for c in s.data["cells"]} == {"no-skill", "with-skill", REF}
    pass_k = s.data["pass_k"]
    assert pass_k is not None
    assert pass_k["models"]["sonnet"][REF] == {
        "pass_at_k": pytest.approx(2 / 3), "pass_hat_k": pytest.approx(2 / 3),
        "flakiness": 0.0, "n_prompts": 3, "k_max": 2, "k": 2, "short_prompts": []}
    # per prompt (p-a, p-b, p-c): composites 0.767, 1.0, 0.433 in both reps
    assert pass_k["prompts"] == ["p-a", "p-b", "p-c"]
    assert pass_k["per_prompt"]["sonnet"][REF] == {
        "k": [2, 2, 2], "passed": [2, 2, 0], "pass_at_k": [True, True, False],
        "pass_hat_k": [True, True, False]}
    assert not s.data["provenance"]["mismatches"]  # another commit by design, not a change
    md = (week / "scorecard.md").read_text()
    assert "## Version comparison (with-skill − with-skill@v1)" in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| sonnet | 0.667 → 1.000 "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2:7] == ["+0.333 ± 0.192", "no", "2 / 1 / 0 → **underpowered**",
                          "0 / 0 / 2 / 1 / 0", "+0.0200 ± 0.0000 (≠ 0: not estimable)"]
    assert "## Reliability over reps: pass@k, pass^k, flakiness" in md
    # gates read the same numbers
    measures = WeekMeasures(s.week, s.aggregates, 0.7, card=s.data)
    assert measures.value("version_lift", "sonnet", None, None) == pytest.approx(1 / 3)
    assert measures.value("version_lift", "sonnet", None, "p-c") == pytest.approx(2 / 3)
    assert measures.value("version_lift_ci_low", "sonnet", None, None) == pytest.approx(
        m["ci_low"])
    assert measures.value("pass_hat_k", "sonnet", REF, None) == pytest.approx(2 / 3)
    assert measures.value("flakiness", "sonnet", "with-skill", None) == 0.0
    scopes = gates.Scopes(models=("sonnet",), prompts=("p-a", "p-b", "p-c"),
                          conditions=("no-skill", "with-skill", REF))
    loaded, _ = gates.load_gates(["version_lift_ci_low>-0.05", "version_lift>0.3",
                                  "with-skill.pass_at_k>=1", f"{REF}.pass_hat_k>=0.7",
                                  f"sonnet.{REF}.p-c.pass_at_k>=1"], scopes)
    report = gates.evaluate(loaded, measures, gates.CoverageGuard(1, 1, 0.5))
    assert [r.passed for r in report.results] == [False, True, True, False, False]
    assert report.results[3].scope == f"sonnet.{REF}" and report.results[3].measured == (
        pytest.approx(2 / 3))
    with pytest.raises(gates.GateError, match="compares the two conditions"):
        gates.load_gates([f"{REF}.version_lift>0"], scopes)
    # skilllift gate on the finished week knows the arm as a scope
    from pytest_skilllift.cli.main import main as skilllift

    assert skilllift(["gate", str(week), "--gate", f"{REF}.pass_hat_k>=0.6"]) == 0


def test_a_week_without_the_arm_has_no_section_and_no_version_lift(tmp_path: Path) -> None:
    s = summarize_week(write_week(tmp_path / "w"), write=False, plots=False)
    assert s.data["versions"] is None
    measures = WeekMeasures(s.week, s.aggregates, 0.7, card=s.data)
    assert measures.value("version_lift", "sonnet", None, None) is None  # never a pass


def test_a_second_ref_in_one_week_is_named_and_excluded(tmp_path: Path) -> None:
    week = version_week(tmp_path / "w")

    def rename(rows: list[list[str]]) -> None:
        col = rows[0].index("condition")
        for row in rows[1:]:
            if row[col] == REF and row[rows[0].index("prompt")] == "p-c":
                row[col] = "with-skill@v2"

    edit_csv(week / "scores.csv", rename)
    loaded = load_week(week)
    assert loaded.ref_condition == REF
    problem = next(p for p in loaded.problems if "with-skill@v2" in str(p))
    assert "a week holds one with-skill@REF arm" in str(problem)


def test_compare_knows_the_arm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_skilllift.cli.main import main as skilllift
    from pytest_skilllift.report.compare_weeks import compare

    a = version_week(tmp_path / "a")
    MUSTS[REF] = (2, 3, 3)  # week b: the earlier revision's p-c answer is better
    try:
        b = version_week(tmp_path / "b")
    finally:
        MUSTS[REF] = (2, 3, 1)
    default = compare(a, b)
    assert default["arm"] == "with-skill"
    assert {r["change"] for r in default["prompts"]} == {"unchanged"}  # with-skill alike
    ref = compare(a, b, arm="with-skill@REF")
    assert {r["prompt"]: r["change"] for r in ref["prompts"]} == {
        "p-a": "unchanged", "p-b": "unchanged", "p-c": "within rep noise"}
    assert ref["arms"] == {str(a): REF, str(b): REF}
    assert skilllift(["compare", str(a), str(b), "--arm", "with-skill@v1"]) == 0
    text = capsys.readouterr().out
    assert "## Per prompt (must lift, with-skill@v1 − no-skill" in text
    assert "0 improved, 0 regressed, 1 within rep noise" in text
    assert skilllift(["compare", str(a), str(b), "--arm", "with-some"]) == 2
    assert "--arm 'with-some': use with-skill" in capsys.readouterr().err


@pytest.mark.parametrize(("nodeid", "condition"), [
    ("evals/p.json::haiku::with-skill@HEAD~1::r1::must-1", "with-skill@HEAD~1"),
    ("evals/p.json::haiku::with-all::r2::must-1", "with-all"),
    ("evals/p.json::eval-1::haiku::no-skill-b::r1::bonus-1", "no-skill-b"),
    ("evals/p.json::haiku::with-skill::r1::invoked", "with-skill"),
])
def test_the_progress_line_counts_every_arms_runs_under_xdist(nodeid: str,
                                                             condition: str) -> None:
    from pytest_skilllift.plugin.progress_hooks import _RUBRIC_ID

    match = _RUBRIC_ID.fullmatch(nodeid)
    assert match is not None and match["condition"] == condition and match["label"] == "haiku"


def test_version_deltas_carry_their_paired_se_and_reused_ref_runs_are_named(
        tmp_path: Path) -> None:
    """Δcost and Δturns get the lift's paired SE (here every prompt's Δ is equal: not
    estimable); REF runs copied from another week are said to be reused."""
    from .test_week_io import write_week

    def runs(run: dict[str, str]) -> None:
        if run["condition"] == REF:
            run.update(skill_available="1", skill_activation="skill_tool", skills_sha="0ld0000")
        if run["prompt"] == "p-b" and run["condition"] == "with-skill":
            run.update(total_cost_usd="0.09", num_turns="9")

    week = write_week(tmp_path / "w", conditions=("no-skill", "with-skill", REF),
                      run_override=runs, manifest_extra={
                          "baseline_from": lambda r: "20260801" if r["condition"] == REF else ""})
    s = summarize_week(week, write=True, plots=False)
    v = s.data["versions"]
    assert v is not None and v["reused_ref_runs"] == 6 and v["reused_from"] == ["20260801"]
    m = v["models"]["sonnet"]
    cost = m["cost_delta_paired"]
    assert cost["n_prompts"] == 3 and cost["mean"] == pytest.approx((0.02 + 0.06 + 0.02) / 3)
    diffs = np.array([0.02, 0.06, 0.02])
    assert cost["se"] == pytest.approx(diffs.std(ddof=1) / math.sqrt(3))
    md = (week / "scorecard.md").read_text()
    assert "**6 `with-skill@v1` run(s) reused** from `20260801`" in md
    assert f"± {cost['se']:.4f} (≠ 0: no)" in md


def test_an_ungraded_item_is_one_rule_everywhere_counted_and_named(tmp_path: Path) -> None:
    """One rule for an item the judge left ungraded (qdrant/skills SCORING.md: excluded,
    never zero): its prompt×rep is scored on its graded items in every statistic — the must
    means, the composite, the pass rate, pass@k, pass^k, flakiness and the version
    comparison's per-prompt table — and only a prompt×rep without a graded must item is
    dropped, counted and named. The old code scored such a rep on its graded items in the
    means but dropped it from the pass-based statistics and the per-prompt table (a 3-prompt
    week listed 2 there), and a rep whose bonus items were all ungraded had no composite."""
    from .test_report_compare_weeks import edit_csv

    week = version_week(tmp_path / "w")

    def first_must(cond: str) -> Callable[[dict[str, str]], bool]:
        seen: set[str] = set()

        def pick(r: dict[str, str]) -> bool:
            key = r["rep"]
            hit = (r["prompt"], r["condition"], r["item_type"]) == ("p-a", cond, "must") \
                and key not in seen
            if hit:
                seen.add(key)
            return hit
        return pick

    ungraded = {"verdict": "", "credit": "", "contribution": ""}
    for cond in ("with-skill", REF, "no-skill"):
        assert edit_csv(week / "scores.csv", first_must(cond), ungraded) == 2
    # p-c with-skill r1: its bonus item ungraded — scored without a bonus term
    assert edit_csv(week / "scores.csv", lambda r: (r["prompt"], r["condition"], r["rep"],
                                                    r["item_type"]) == (
        "p-c", "with-skill", "1", "bonus"), ungraded) == 1
    # p-b no-skill r1: every must item ungraded — the one prompt×rep the rule drops
    assert edit_csv(week / "scores.csv", lambda r: (r["prompt"], r["condition"], r["rep"],
                                                    r["item_type"]) == (
        "p-b", "no-skill", "1", "must"), ungraded) == 3
    s = summarize_week(week, write=True, plots=False)
    v = s.data["versions"]
    assert v is not None
    m = v["models"]["sonnet"]
    # every prompt is in the per-prompt table: p-a on its two graded musts per rep
    assert m["prompts"]["unscored"] == 0 and sum(m["prompts"].values()) == 3
    by_prompt = {r["prompt"]: r for r in v["prompts"]}
    # v1 p-a: musts 0 and 1 met, 0 ungraded → 1/2 + 0.1 bonus; now 2/2 + 0.1 → clamped 1
    assert by_prompt["p-a"]["ref"] == pytest.approx(0.6)
    assert by_prompt["p-a"]["current"] == pytest.approx(1.0)
    # the composite follows the must mean: the same rep, the same graded items
    assert s.aggregates is not None
    assert s.aggregates.must[0, 0, arm_code(REF)] == pytest.approx(0.5)
    assert s.aggregates.composite[2, 0, arm_code("with-skill")] == pytest.approx(1.0)
    assert s.data["pass_k"] is not None
    pk = s.data["pass_k"]["models"]["sonnet"]
    for cond in ("with-skill", REF):
        assert pk[cond]["short_prompts"] == [] and pk[cond]["n_prompts"] == 3
    # pass@k: only the dropped p-b no-skill rep makes a prompt short, and it is listed
    assert pk["no-skill"]["short_prompts"] == ["p-b"] and pk["no-skill"]["n_prompts"] == 2
    cells = {c["condition"]: c for c in s.data["cells"]}
    assert (cells["with-skill"]["pass_scored"], cells["with-skill"]["pass_errored"]) == (6, 0)
    assert (cells["no-skill"]["pass_scored"], cells["no-skill"]["pass_errored"]) == (5, 1)
    cov = s.data["coverage"]
    # p-a × 3 arms × 2 reps, and p-c with-skill r1 (its bonus item)
    assert cov["partly_graded_prompt_reps"] == 7 and cov["bonus_ungraded_prompt_reps"] == 1
    assert cov["errored_prompt_reps"] == 1
    assert cov["dropped_prompt_reps"] == [
        {"prompt": "p-b", "model": "sonnet", "condition": "no-skill", "rep": 1}]
    md = (week / "scorecard.md").read_text()
    assert "prompt×rep scored on their graded items (the judge left an item ungraded): **7**" \
        in md
    assert "prompt×rep left out of every statistic (no graded must item): **1** — " \
        "p-b · sonnet · no-skill · r1" in md
    assert "Short prompts (fewer than k scored reps" in md
