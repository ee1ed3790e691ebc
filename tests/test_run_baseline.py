"""Baseline reuse (``run/baseline.py``) with the engine's fakes: what is reused, what is
generated and why, and that a reused run costs no agent or judge call."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.model import RunSpec
from pytest_skilllift.run.baseline import (
    BaselineError,
    BaselinePlan,
    BaselineSource,
    check_source,
    describe_change,
    plan_reuse,
)
from pytest_skilllift.run.engine import WeekRun, make_run_id
from pytest_skilllift.week.files import GRADES_FILE, JUDGE_COST_FILE, STDOUT_FILE
from pytest_skilllift.week.ledger import Ledger
from tests.test_run_engine import Canned, CountingGrader, FakeRunner, engine, spec

INPUTS: dict[str, Any] = {"model_id": "claude-sonnet-x", "prompt_text": "h1", "rubric": "h2",
                          "allowed_tools": ["Bash", "Skill"], "cli_version": "2.1.332",
                          "judge_model": "opus-x"}


def test_describe_change_names_each_input_in_words() -> None:
    after = {**INPUTS, "cli_version": "2.1.400", "rubric": "h3", "max_turns": 8}
    assert describe_change(INPUTS, after) == (
        "rubric edited; CLI version '2.1.332' → '2.1.400'; max turns (none) → 8")
    assert describe_change(INPUTS, dict(INPUTS)) == ""
    # the judge mask decides the baseline's grade; named in the option's words
    assert describe_change({**INPUTS, "judge_mask": False}, {**INPUTS, "judge_mask": True}) == (
        "judge arm-leak mask 'off' → 'on'")


def test_plan_reuses_only_unchanged_pairs_and_says_why_not(tmp_path: Path) -> None:
    src = tmp_path / "20260801"

    def previous(prompt: str, model: str) -> dict[str, Any]:
        if prompt == "new":
            raise KeyError(f"prompt {prompt!r} is not in this identity")
        return {**INPUTS, "judge_model": "opus-y"} if prompt == "judged" else dict(INPUTS)

    plan = plan_reuse(src, [("same", "sonnet"), ("judged", "sonnet"), ("new", "sonnet")],
                      lambda p, m: dict(INPUTS), previous)
    assert {k: (d.reuse, d.reason) for k, d in plan.decisions.items()} == {
        ("same", "sonnet"): (True, ""),
        ("judged", "sonnet"): (False, "judge model 'opus-y' → 'opus-x'"),
        ("new", "sonnet"): (False, "not in 20260801: prompt 'new' is not in this identity"),
    }
    unknown = plan_reuse(src, [("same", "sonnet")], lambda p, m: dict(INPUTS), None,
                         unknown="20260801 has no week.json")
    assert unknown.decisions[("same", "sonnet")].reason == "20260801 has no week.json"
    plan.save(tmp_path)
    again = BaselinePlan.load(tmp_path)
    assert again is not None and again.decisions == plan.decisions and again.source == src


def test_the_source_must_be_another_week_with_runs(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="no such directory"):
        check_source(tmp_path / "nope", tmp_path / "w")
    (tmp_path / "w").mkdir()
    with pytest.raises(BaselineError, match="this week's own directory"):
        check_source(tmp_path / "w", tmp_path / "w")
    with pytest.raises(BaselineError, match="holds no runs"):
        check_source(tmp_path / "w", tmp_path / "other")


def source_week(root: Path, **canned: Any) -> Path:
    """Week 20260801: the no-skill and with-skill runs of prompt p, reps 1 and 2."""
    src = root / "weekly" / "20260801"
    runner, grader = FakeRunner([Canned(**canned)]), CountingGrader()
    e = engine(src, runner, grader)
    for cond in ("no-skill", "with-skill"):
        for rep in (1, 2):
            e.result(week_spec(cond, rep, "20260801"))
    e.close()
    return src


def reuse_engine(week: Path, src: Path, reuse: bool, runner: FakeRunner,
                 grader: CountingGrader) -> WeekRun:
    plan = BaselinePlan(source=src)
    plan.decisions[("p", "sonnet")] = plan_reuse(
        src, [("p", "sonnet")], lambda p, m: INPUTS,
        lambda p, m: INPUTS if reuse else {**INPUTS, "cli_version": "2.1.1"},
    ).decisions[("p", "sonnet")]
    plan.save(week)
    e = engine(week, runner, grader)
    e.baseline = BaselineSource(week)
    return e


def week_spec(cond: str, rep: int, week: str = "20260808") -> RunSpec:
    """The engine tests' run, with the run id a session of ``week`` gives it."""
    return dataclasses.replace(spec(cond, rep), run_id=make_run_id("p", "sonnet", cond, rep, week))


def test_reused_runs_cost_no_agent_and_no_judge_call(tmp_path: Path) -> None:
    src = source_week(tmp_path)
    week = tmp_path / "weekly" / "20260808"
    runner, grader = FakeRunner(), CountingGrader()
    e = reuse_engine(week, src, True, runner, grader)
    for rep in (1, 2):
        graded = e.result(week_spec("no-skill", rep))
        assert graded.status == "ok" and not graded.generated_now and not graded.judged_now
        assert sorted(graded.rows) == ["avoid-1", "must-1", "must-2"]
    assert runner.calls == [] and grader.calls == 0
    e.result(week_spec("with-skill", 1))  # the skill arm is generated as usual
    assert runner.calls == ["p-sonnet-with-skill-r1-20260808"] and grader.calls == 1
    rid = "p-sonnet-no-skill-r1-20260808"
    run = json.loads((week / rid / "run.json").read_text())
    assert run["run_id"] == rid and run["baseline_from"] == "20260801"
    assert run["baseline_run_id"] == "p-sonnet-no-skill-r1-20260801"
    rows = json.loads((week / rid / GRADES_FILE).read_text())["rows"]
    assert {r["run_id"] for r in rows} == {rid}
    assert (week / rid / STDOUT_FILE).read_text() == (
        src / "p-sonnet-no-skill-r1-20260801" / STDOUT_FILE).read_text()
    # Paid in 20260801: no judge_cost.txt here, and the week's spend holds the with-skill run only.
    assert not (week / rid / JUDGE_COST_FILE).is_file()
    from pytest_skilllift.week.spend import SpendMeter

    spent = SpendMeter(week).spent()
    assert spent.generation_usd == pytest.approx(0.01)
    assert spent.judge_usd == pytest.approx(0.002)
    # The manifest carries the mark; the scorecard counts it and leaves the run out of spend.
    from pytest_skilllift.report.summarize import summarize_week

    Ledger(week).rebuild_csvs()
    card = summarize_week(week, write=False)
    b = card.data["baseline"]
    assert b is not None and (b["reused_runs"], b["no_skill_runs"]) == (2, 2)
    assert b["source_weeks"] == ["20260801"] and b["regenerated"] == []
    assert card.data["cost_time"]["reused_runs"] == 2
    assert card.data["cost_time"]["generation_runs_with_cost"] == 1  # the with-skill run
    assert card.data["cost_time"]["judge_runs_with_cost"] == 1
    assert "no-skill runs reused: **2 of 2**, from week `20260801`" in card.markdown
    assert "shares 20260801's sampling noise" in card.markdown


def test_changed_inputs_regenerate_and_say_why(tmp_path: Path) -> None:
    src = source_week(tmp_path)
    week = tmp_path / "weekly" / "20260808"
    runner, grader = FakeRunner(), CountingGrader()
    e = reuse_engine(week, src, False, runner, grader)
    e.result(week_spec("no-skill", 1))
    assert runner.calls == ["p-sonnet-no-skill-r1-20260808"] and grader.calls == 1
    run = json.loads((week / "p-sonnet-no-skill-r1-20260808" / "run.json").read_text())
    assert run["baseline_reason"] == "CLI version '2.1.1' → '2.1.332'"
    assert "baseline_from" not in run
    from pytest_skilllift.report.summarize import summarize_week

    Ledger(week).rebuild_csvs()
    b = summarize_week(week, write=False).data["baseline"]
    assert b is not None and b["reused_runs"] == 0
    assert b["regenerated"] == [{"prompt": "p", "model": "sonnet", "runs": 1,
                                 "reason": "CLI version '2.1.1' → '2.1.332'"}]


def test_an_errored_source_run_is_generated_again(tmp_path: Path) -> None:
    src = source_week(tmp_path, error="spawn failed")
    week = tmp_path / "weekly" / "20260808"
    runner, grader = FakeRunner(), CountingGrader()
    e = reuse_engine(week, src, True, runner, grader)
    e.result(week_spec("no-skill", 2))
    assert runner.calls == ["p-sonnet-no-skill-r2-20260808"]
    run = json.loads((week / "p-sonnet-no-skill-r2-20260808" / "run.json").read_text())
    assert run["baseline_reason"] == "its run in 20260801 errored"


def test_a_ref_run_reuses_the_source_weeks_with_skill_run_of_the_same_family(
        tmp_path: Path) -> None:
    from pytest_skilllift.run.baseline import plan_arm_reuse, plan_summary
    from pytest_skilllift.week import identity as ident
    from tests.test_week_identity import make

    src = source_week(tmp_path)
    week = tmp_path / "weekly" / "20260808"
    # the identities' prompt "bisect" (family git-bisect); the engine's prompt is "p"
    fam, prompt = "git-bisect", "bisect"
    then = make(skills={fam: "h-old"})
    plan = BaselinePlan(source=src)
    plan.decisions[(prompt, "sonnet")] = plan_reuse(
        src, [(prompt, "sonnet")], lambda p, m: INPUTS, lambda p, m: INPUTS).decisions[
        (prompt, "sonnet")]
    for at_ref, reuse in (("h-old", True), ("h-new", False)):
        now = dataclasses.replace(then, skills={fam: "h-now", f"{fam}@v1": at_ref},
                                  revision={"ref": "v1", "kind": "git", "commit": "c",
                                            "tree": "t"})
        plan_arm_reuse(plan, now, then)
        d = plan.arm_decisions[(prompt, "sonnet")]
        assert plan.arm == "with-skill@v1" and d.reuse is reuse
        if not reuse:
            assert f"the family {fam!r} at v1 is not the one 20260801's" in d.reason
    assert "with-skill@v1: 0 of 1 pairs reuse its with-skill runs" in plan_summary(plan)
    assert isinstance(ident.Identity.from_json(now.to_json()).revision, dict)
    # the engine takes the with-skill@v1 run from 20260801's with-skill run: no call at all
    plan.arm_decisions[("p", "sonnet")] = dataclasses.replace(
        plan.arm_decisions[(prompt, "sonnet")], prompt="p", reuse=True, reason="")
    plan.save(week)
    assert BaselinePlan.load(week).arm == "with-skill@v1"  # type: ignore[union-attr]
    runner, grader = FakeRunner(), CountingGrader()
    e = engine(week, runner, grader)
    e.baseline = BaselineSource(week)
    graded = e.result(week_spec("with-skill@v1", 1))
    assert graded.status == "ok" and not graded.generated_now and not graded.judged_now
    assert runner.calls == [] and grader.calls == 0
    rid = "p-sonnet-with-skill@v1-r1-20260808"
    run = json.loads((week / rid / "run.json").read_text())
    assert run["condition"] == "with-skill@v1" and run["baseline_from"] == "20260801"
    assert run["baseline_run_id"] == "p-sonnet-with-skill-r1-20260801"
    rows = json.loads((week / rid / GRADES_FILE).read_text())["rows"]
    assert {r["condition"] for r in rows} == {"with-skill@v1"}
    Ledger(week).rebuild_csvs()
    manifest = (week / "manifest.csv").read_text()
    assert "with-skill@v1" in manifest


def test_a_linked_file_in_the_source_run_is_never_copied(tmp_path: Path) -> None:
    """``--skill-lift-baseline-from`` copies a run folder between weeks: a link in it (a week
    restored from a cache, or planted) is not followed — the run is generated here instead,
    and the link's target (a host file) never lands in this week."""
    src = source_week(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("not yours\n")
    old = src / "p-sonnet-no-skill-r1-20260801" / STDOUT_FILE
    old.unlink()
    old.symlink_to(outside / "precious.txt")
    week = tmp_path / "weekly" / "20260808"
    runner, grader = FakeRunner(), CountingGrader()
    e = reuse_engine(week, src, True, runner, grader)
    graded = e.result(week_spec("no-skill", 1))
    assert graded.status == "ok" and graded.generated_now  # generated, not reused
    assert runner.calls == ["p-sonnet-no-skill-r1-20260808"]
    run = json.loads((week / "p-sonnet-no-skill-r1-20260808" / "run.json").read_text())
    assert "is a symbolic link" in run["baseline_reason"] and "baseline_from" not in run
    assert not any(p.is_file() and "not yours" in p.read_text(errors="replace")
                   for p in week.rglob("*") if not p.is_symlink())
    assert not any(p.is_symlink() for p in week.rglob("*"))
    assert e.result(week_spec("no-skill", 2)).generated_now is False  # r2 is reused as usual
