"""The price before the run (``run.estimate``), its scorecard section (estimate vs actual) and
the rate-limited runs in Run health — on week directories written here, no CLI."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.model import PromptSpec, RubricItem, RunSpec
from pytest_skilllift.report.sections import estimate as est_section
from pytest_skilllift.report.sections import ratelimits
from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.run import estimate as est
from pytest_skilllift.week.files import ESTIMATE_FILE
from tests.test_report_noise import musts, run, write_runs

JUDGE = "claude-opus-4-5"


def spec(prompt: str, condition: str, rep: int, week: str = "w2",
         model: str = "claude-haiku-4-5", label: str = "haiku") -> RunSpec:
    p = PromptSpec(path=Path(f"{prompt}.json"), name=prompt, product_area="", prompt="q",
                   rubric=(RubricItem("must", "x", 1),), skill_path=f"{prompt}/SKILL.md")
    return RunSpec(prompt=p, model_label=label, model_id=model, condition=condition, rep=rep,
                   run_id=f"{prompt}-{label}-{condition}-r{rep}-{week}")


def put_run(week: Path, run_id: str, status: str = "ok", graded: bool = True) -> None:
    (week / run_id).mkdir(parents=True, exist_ok=True)
    (week / run_id / "run.json").write_text(json.dumps({"run_status": status}))
    if graded:
        (week / run_id / "grades.json").write_text("{}")


def test_each_selected_run_is_new_resumed_to_grade_reused_or_done(tmp_path: Path) -> None:
    week, source = tmp_path / "w2", tmp_path / "w1"
    put_run(week, "a-haiku-with-skill-r1-w2")  # graded
    put_run(week, "a-haiku-with-skill-r2-w2", graded=False)  # generated, not graded
    put_run(week, "a-haiku-no-skill-r1-w2", status="errored", graded=False)
    put_run(source, "a-haiku-no-skill-r2-w1")  # the baseline week has it
    specs = [spec("a", "with-skill", 1), spec("a", "with-skill", 2), spec("a", "no-skill", 1),
             spec("a", "no-skill", 2), spec("b", "no-skill", 1)]
    states = [p.state for p in est.plan_runs(specs, week, baseline_from=str(source))]
    assert states == [est.DONE, est.TO_GRADE, est.RESUMED, est.REUSED, est.NEW]
    fresh = [p.state for p in est.plan_runs(specs, week, fresh=True)]
    assert fresh[:2] == [est.TO_GRADE, est.TO_GRADE] and fresh[3] == est.NEW


def manifest(week: Path, rows: list[dict[str, Any]]) -> None:
    week.mkdir(parents=True, exist_ok=True)
    cols = ["run_id", "model", "condition", "total_cost_usd", "wall_ms", "duration_ms",
            "run_status", "baseline_from"]
    with (week / "manifest.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    for r in rows:
        if "judge" in r:
            (week / r["run_id"]).mkdir(exist_ok=True)
            (week / r["run_id"] / "judge_cost.txt").write_text(str(r["judge"]))


def test_history_reads_the_earlier_weeks_runs_of_each_label_and_arm(tmp_path: Path) -> None:
    weekly = tmp_path / "weekly"
    manifest(weekly / "20260801", [
        {"run_id": "r1", "model": "haiku", "condition": "with-skill", "total_cost_usd": 0.02,
         "wall_ms": 10000, "run_status": "ok", "judge": 0.03},
        {"run_id": "r2", "model": "haiku", "condition": "with-skill", "total_cost_usd": 0.04,
         "duration_ms": 20000, "run_status": "ok", "judge": 0.05},
        {"run_id": "r3", "model": "haiku", "condition": "with-skill", "total_cost_usd": 9,
         "run_status": "errored"},  # not a completed run
        {"run_id": "r4", "model": "haiku", "condition": "no-skill", "total_cost_usd": 9,
         "run_status": "ok", "baseline_from": "20260725"},  # paid in another week
        {"run_id": "r5", "model": "haiku", "condition": "with-skill@HEAD~1",
         "total_cost_usd": 0.5, "run_status": "ok"}])
    manifest(weekly / "20260815", [{"run_id": "x", "model": "haiku", "condition": "no-skill",
                                    "total_cost_usd": 1, "run_status": "ok"}])  # later
    (weekly / "20260805").mkdir()  # no manifest: not a week
    weeks = est.previous_weeks(weekly / "20260808")
    assert [w.name for w in weeks] == ["20260801"]
    hist = est.read_history(weeks)
    s = hist["haiku", "with-skill"]
    assert s.gen_usd == [0.02, 0.04] and s.judge_usd == [0.03, 0.05] and s.run_s == [10, 20]
    assert ("haiku", "no-skill") not in hist and ("haiku", "with-skill@REF") in hist


def test_history_gives_n_mean_with_a_prediction_interval_else_the_price_table() -> None:
    hist = {("haiku", "with-skill"): est.Samples([0.02, 0.04], [0.03, 0.05], [10.0, 20.0],
                                                 {"20260801"})}
    planned = [est.Planned(f"r{i}", "haiku", "claude-haiku-4-5", cond, est.NEW)
               for i, cond in enumerate(["with-skill"] * 3 + ["no-skill"] * 2)]
    planned.append(est.Planned("g", "haiku", "claude-haiku-4-5", "no-skill", est.TO_GRADE))
    planned.append(est.Planned("d", "haiku", "claude-haiku-4-5", "no-skill", est.DONE))
    e = est.estimate(planned, hist, judge_model=JUDGE, judge_samples=2, workers=4,
                     concurrency=3, cap_usd=0.5, spent=(0.1, 0.05))
    with_skill, no_skill = e.cells
    sd = math.sqrt(0.0002)  # the sample SD of 0.02 and 0.04
    half = 2 * sd * math.sqrt(3 + 9 / 2)
    assert with_skill.generation.estimate == pytest.approx(0.09)
    assert with_skill.generation.high == pytest.approx(0.09 + half)
    assert with_skill.generation.low == pytest.approx(max(0.0, 0.09 - half))
    assert with_skill.judge.estimate == pytest.approx(0.12)  # history: per graded run
    assert with_skill.source == "history (2 runs of 20260801)"
    # no history for no-skill: $1/$5 per MTok × (8,000, 500) tokens a run, ×0.5..×2.5
    assert no_skill.source == "price table"
    assert no_skill.generation.estimate == pytest.approx(2 * 0.0105)
    assert no_skill.generation.high == pytest.approx(2 * 0.0105 * 2.5)
    per_call = (2500 * 5 + 600 * 25) / 1e6  # Opus 4.5 list price, 2 samples a run
    assert no_skill.judge.estimate == pytest.approx(3 * per_call * 2)  # 2 new + 1 to grade
    assert e.judge_calls == (3 + 2 + 1) * 2 and e.counts[est.DONE] == 1
    assert e.parallel == 3  # min(workers 4, cap 3, 5 runs to make)
    assert e.wall_s.estimate == pytest.approx((3 * 15 + 2 * 12) / 3)
    text = "\n".join(est.lines(e))
    assert "5 run(s) to make (5 new, 0 resumed), 1 to grade only" in text
    assert "spend cap: $0.50, of which the week has spent $0.15" in text
    assert "$0.0300 ± 0.0141 a run" in text


def test_a_model_in_no_price_table_is_unknown_and_named() -> None:
    planned = [est.Planned("r", "x", "codex:some-new-model", "with-skill", est.NEW)]
    e = est.estimate(planned, {}, judge_model=JUDGE, judge_samples=1, workers=1,
                     concurrency=1)
    assert e.generation.estimate is None and e.total.estimate is None
    assert "no price for 'some-new-model'" in e.cells[0].source
    assert "generation unknown" in "\n".join(est.lines(e))
    assert est.table_run_usd("gemini-cli:gemini-2.5-flash", "no-skill") == pytest.approx(
        (8000 * 0.30 + 500 * 2.50) / 1e6)
    assert est.table_run_usd("sonnet", "with-skill") == pytest.approx(
        (14000 * 3 + 800 * 15) / 1e6)  # a CLI alias: the newest of its family


def test_each_session_adds_its_estimate_and_the_scorecard_compares_the_sum(
        tmp_path: Path) -> None:
    runs = [run(p, c, r, musts(2), total_cost_usd=0.05, duration_ms=1000)
            for p in ("a", "b") for c in ("no-skill", "with-skill") for r in (1, 2)]
    week = write_runs(tmp_path / "w", runs)  # 8 runs × $0.05 = $0.40 of generation
    planned = [est.Planned(f"r{i}", "sonnet", "claude-sonnet-4-5", "no-skill", est.NEW)
               for i in range(4)]
    hist = {("sonnet", "no-skill"): est.Samples([0.04, 0.06], [], [1.0, 1.0], {"w0"})}
    first = est.estimate(planned, hist, judge_model=JUDGE, judge_samples=1, workers=1,
                         concurrency=1)
    est.record(week, first)
    est.record(week, first)  # a resumed session: the week's estimate is the sum
    assert len(json.loads((week / ESTIMATE_FILE).read_text())["sessions"]) == 2
    card = summarize_week(week, write=False)
    got = card.data["cost_estimate"]
    assert got is not None and got["sessions"] == 2
    gen = got["generation_usd"]
    assert gen["estimate"] == pytest.approx(0.4) and gen["actual"] == pytest.approx(0.4)
    assert gen["error"] == pytest.approx(0.0) and gen["within"] is True
    assert got["judge_usd"]["actual"] is None and got["judge_usd"]["within"] is None
    assert "**Estimate before the run vs actual** (2 sessions; from history" in card.markdown
    assert "| generation | $0.40 |" in card.markdown


def test_without_estimate_json_the_section_is_absent(tmp_path: Path) -> None:
    week = write_runs(tmp_path / "w", [run("a", "no-skill", 1, musts(1))])
    card = summarize_week(week, write=False)
    assert card.data["cost_estimate"] is None
    assert "Estimate before the run" not in card.markdown
    (week / ESTIMATE_FILE).write_text("not json")
    assert est_section.read_estimates(week) == []


def test_run_health_counts_rate_limited_runs_and_pairs_them_when_enough(
        tmp_path: Path) -> None:
    # 6 prompts; in each no-skill cell rep 1 was throttled and scored 1 of 3, rep 2 3 of 3
    runs = []
    for p in "abcdef":
        runs += [run(p, "no-skill", 1, musts(1), rate_limit_retries=2,
                     rate_limit_wait_ms=3000),
                 run(p, "no-skill", 2, musts(3), rate_limit_retries=0, rate_limit_wait_ms=0),
                 run(p, "with-skill", 1, musts(3), rate_limit_retries=0,
                     rate_limit_wait_ms=0)]
    card = summarize_week(write_runs(tmp_path / "w", runs), write=False)
    rl = card.data["rate_limits"]
    assert rl["by_label"]["sonnet"] == {"runs": 18, "throttled_runs": 6, "retries": 12,
                                        "wait_s": 18.0}
    c = rl["comparison"]
    assert c["pairs"] == 6 and c["delta"] == pytest.approx(-2 / 3)
    assert "- rate-limited runs (the CLI retried after HTTP 429/529; completed, kept): " \
           "sonnet 6 of 18 (12 retries, 18s waited)" in card.markdown
    assert "throttled vs unthrottled runs of the same cell, must coverage: -0.667" \
           in card.markdown


def test_too_few_pairs_are_counted_not_compared(tmp_path: Path) -> None:
    runs = [run("a", "no-skill", 1, musts(1), rate_limit_retries=1, rate_limit_wait_ms=500),
            run("a", "no-skill", 2, musts(3), rate_limit_retries=0)]
    card = summarize_week(write_runs(tmp_path / "w", runs), write=False)
    assert card.data["rate_limits"]["comparison"]["delta"] is None
    assert (f"1 cell(s) hold both, fewer than the {ratelimits.MIN_PAIRS} a paired "
            "comparison needs") in card.markdown
    plain = summarize_week(write_runs(tmp_path / "p", [run("a", "no-skill", 1, musts(1))]),
                           write=False)
    assert "rate-limited" not in plain.markdown  # none throttled: no line
