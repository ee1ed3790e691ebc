"""Loading and validating week directories: every bad input is named, never a traceback."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.week.columns import (
    MANIFEST_COLUMNS,
    MANIFEST_EXTRA_COLUMNS,
    SCORES_COLUMNS,
    VERDICTS,
)
from pytest_skilllift.week.files import STATUS_OK
from pytest_skilllift.week.tables import load_week

RUBRIC = ("must", "must", "must", "bonus", "avoid")


def write_week(
    week: Path,
    *,
    prompts: tuple[str, ...] = ("p-a", "p-b", "p-c"),
    models: tuple[str, ...] = ("sonnet",),
    conditions: tuple[str, ...] = ("no-skill", "with-skill"),
    reps: int = 2,
    met: Callable[[int, str, str, int, int], bool] | None = None,
    manifest_extra: dict[str, Callable[[dict[str, str]], str]] | None = None,
    run_override: Callable[[dict[str, str]], None] | None = None,
    skip_scores: Callable[[dict[str, str]], bool] | None = None,
) -> Path:
    """A small week in the qdrant format (plus optional extra manifest columns)."""
    week.mkdir(parents=True, exist_ok=True)
    met = met or (lambda p, m, c, r, i: (c == "with-skill") or (i + r) % 2 == 0)
    runs, items = [], []
    extra_cols = list(manifest_extra or {})
    for pi, p in enumerate(prompts):
        for m in models:
            for c in conditions:
                for r in range(1, reps + 1):
                    run = {k: "" for k in MANIFEST_COLUMNS}
                    run.update(
                        prompt=p, skill_family=p, skill_leaf=f"{p}/SKILL.md", model=m,
                        condition=c, rep=str(r), run_id=f"{p}-{m}-{c}-r{r}", exit_code="0",
                        skills_sha="abc1234", timestamp=f"20260808T0{7 + pi}0000Z",
                        skill_available="1" if c == "with-skill" else "0",
                        skill_activation="skill_tool" if c == "with-skill" else "none",
                        reached_leaf="1" if c == "with-skill" else "0", fetched_site="0",
                        fetched_count="0", model_snapshot=f"claude-{m}-x", cli_version="2.1.220",
                        total_cost_usd="0.05" if c == "with-skill" else "0.03",
                        num_turns="4" if c == "with-skill" else "2", result_subtype="success",
                        budget_hit="0", signals_ok="1", duration_ms="10000")
                    for col, fn in (manifest_extra or {}).items():
                        run[col] = fn(run)
                    if run_override:
                        run_override(run)
                    runs.append(run)
                    if skip_scores and skip_scores(run):
                        continue
                    for i, t in enumerate(RUBRIC):
                        hit = met(pi, m, c, r, i) if t != "avoid" else (c == "no-skill" and r == 1)
                        v = VERDICTS[t][0 if hit else 1]
                        credit = "1.0" if hit else "0.0"
                        items.append({
                            "prompt": p, "skill": p, "model": m, "condition": c, "rep": str(r),
                            "item_type": t, "item_text": f"{t} item {i} of {p}", "verdict": v,
                            "credit": credit,
                            "contribution": ("-" + credit) if t == "avoid" and hit else credit,
                            "contested": "", "evidence_quote": "quote" if hit else ""})
    with (week / "manifest.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(MANIFEST_COLUMNS) + extra_cols)
        w.writeheader()
        w.writerows(runs)
    with (week / "scores.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(SCORES_COLUMNS))
        w.writeheader()
        w.writerows(items)
    return week


def edit_csv(path: Path, fn: Callable[[list[list[str]]], None]) -> None:
    rows = list(csv.reader(path.open(newline="")))
    fn(rows)
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(rows)


def test_clean_week_loads_without_problems(tmp_path: Path) -> None:
    week = load_week(write_week(tmp_path / "w"))
    assert week.problems == []
    assert week.prompts == ["p-a", "p-b", "p-c"] and week.models == ["sonnet"]
    assert week.n_runs == 12 and week.n_items == 60
    assert (week.scores.run >= 0).all() and (week.manifest.status == STATUS_OK).all()
    assert len(week.violations) == 3  # one violated avoid per prompt (no-skill rep 1)


def test_missing_required_column_is_named(tmp_path: Path) -> None:
    w = write_week(tmp_path / "w")
    def drop_verdict(rows: list[list[str]]) -> None:
        for r in rows:
            r.pop(7)

    edit_csv(w / "scores.csv", drop_verdict)
    s = summarize_week(w, write=False)
    assert any("scores.csv, row 0, column 'verdict'" in p and "missing" in p for p in s.problems)
    assert s.data["models"] == {}
    assert "Input problems" in s.markdown and "No lift could be computed" in s.markdown


def test_unknown_verdict_names_row_and_is_excluded(tmp_path: Path) -> None:
    w = write_week(tmp_path / "w")

    def corrupt(rows: list[list[str]]) -> None:
        rows[3][7] = "maybe"  # data row 3

    edit_csv(w / "scores.csv", corrupt)
    s = summarize_week(w, write=False)
    msg = [p for p in s.problems if "unknown verdict" in p]
    assert msg and "scores.csv, row 3, column 'verdict'" in msg[0] and "'maybe'" in msg[0]
    assert s.data["coverage"]["items_invalid"] == 1
    assert s.data["coverage"]["items_graded"] == 59


def test_non_numeric_credit_is_named(tmp_path: Path) -> None:
    w = write_week(tmp_path / "w")

    def corrupt(rows: list[list[str]]) -> None:
        rows[5][8] = "one"

    edit_csv(w / "scores.csv", corrupt)
    s = summarize_week(w, write=False)
    msg = [p for p in s.problems if "non-numeric" in p]
    assert msg and "scores.csv, row 5, column 'credit'" in msg[0] and "'one'" in msg[0]
    assert s.data["coverage"]["items_invalid"] == 1
    assert s.data["models"]["sonnet"]["must_lift"] is not None


def test_credit_contradicting_verdict_is_excluded(tmp_path: Path) -> None:
    w = write_week(tmp_path / "w")

    def corrupt(rows: list[list[str]]) -> None:
        rows[1][8] = "1.0" if rows[1][8] == "0.0" else "0.0"

    edit_csv(w / "scores.csv", corrupt)
    s = summarize_week(w, write=False)
    assert any("row 1, column 'credit'" in p and "disagrees" in p for p in s.problems)


def test_empty_files(tmp_path: Path) -> None:
    w = write_week(tmp_path / "w")
    (w / "scores.csv").write_text("")
    s = summarize_week(w, write=False)
    assert any(p.startswith("scores.csv: empty file") for p in s.problems)
    assert s.data["coverage"]["graded_runs"] == 0 and len(s.data["coverage"]["dropped"]) == 12
    # ok runs without any grade: dropped as "ungraded" (the grade is missing, not the
    # answer), not as "no gradeable answer"
    assert s.data["coverage"]["dropped"][0]["reason"] == (
        "ungraded: no graded must item in scores.csv")


def test_header_only_manifest(tmp_path: Path) -> None:
    w = write_week(tmp_path / "w")
    (w / "manifest.csv").write_text(",".join(MANIFEST_COLUMNS) + "\n")
    s = summarize_week(w, write=False)
    assert any("manifest.csv: has a header but no data rows" in p for p in s.problems)
    assert s.data["coverage"]["total_runs"] == 0


def test_missing_files(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    s = summarize_week(tmp_path / "w", write=False)
    assert "scores.csv: file not found" in s.problems
    assert "manifest.csv: file not found" in s.problems


def test_one_arm_only(tmp_path: Path) -> None:
    w = write_week(tmp_path / "w", conditions=("no-skill",))
    s = summarize_week(w, write=False)
    assert any("no with-skill rows at all" in p for p in s.problems)
    m = s.data["models"]["sonnet"]
    assert m["must_lift"] is None and m["must_with"] is None and m["must_no"] is not None
    assert "n/a" in s.markdown
    assert [c["condition"] for c in s.data["cells"]] == ["no-skill"]
    summarize_week(w, plots=False)  # writing: a scorecard, but no history row without a lift
    assert (w / "scorecard.md").exists() and not (w.parent / "scorecard-history.csv").exists()


def test_unknown_condition_and_bad_rep(tmp_path: Path) -> None:
    w = write_week(tmp_path / "w")

    def corrupt(rows: list[list[str]]) -> None:
        rows[2][3] = "with-skil"
        rows[4][4] = "two"

    edit_csv(w / "scores.csv", corrupt)
    s = summarize_week(w, write=False)
    assert any("row 2, column 'condition'" in p for p in s.problems)
    assert any("row 4, column 'rep'" in p for p in s.problems)


def test_malformed_row_is_skipped_and_reported(tmp_path: Path) -> None:
    w = write_week(tmp_path / "w")
    with (w / "scores.csv").open("a") as f:
        f.write("p-a,p-a,sonnet\n")
    s = summarize_week(w, write=False)
    assert any("malformed row skipped" in p for p in s.problems)


def test_newlines_inside_evidence_quotes(tmp_path: Path) -> None:
    w = write_week(tmp_path / "w")

    def corrupt(rows: list[list[str]]) -> None:
        for r in rows[1:]:
            if r[5] == "avoid" and r[7] == "violated":
                r[11] = "line one\nline | two"

    edit_csv(w / "scores.csv", corrupt)
    s = summarize_week(w, write=False)
    assert s.problems == []
    assert s.data["avoid_violations"][0]["evidence"] == "line one\nline | two"
    assert "line one line \\| two" in s.markdown


def test_derived_run_status_from_qdrant_columns(tmp_path: Path) -> None:
    def override(run: dict[str, str]) -> None:
        if run["prompt"] == "p-a" and run["condition"] == "with-skill" and run["rep"] == "1":
            run["skill_available"] = "0"
        if run["prompt"] == "p-b" and run["condition"] == "no-skill" and run["rep"] == "2":
            run["exit_code"] = "1"
        if run["prompt"] == "p-c" and run["condition"] == "with-skill" and run["rep"] == "2":
            run["budget_hit"], run["exit_code"], run["total_cost_usd"] = "1", "1", "2.01"

    w = write_week(tmp_path / "w", run_override=override)
    s = summarize_week(w, write=False)
    reasons = {d["run_id"]: d["reason"] for d in s.data["coverage"]["dropped"]}
    assert reasons == {
        "p-a-sonnet-with-skill-r1": "invalid install: skill not in the init skill list",
        "p-b-sonnet-no-skill-r2": "errored (exit 1)",
        "p-c-sonnet-with-skill-r2": "budget-capped (hit the per-run spend cap; truncated)",
    }
    assert s.data["coverage"]["graded_runs"] == 9
    # their graded items are excluded too, and counted
    assert s.data["coverage"]["items_excluded_with_run"] == 15
    assert s.data["coverage"]["unscored_prompt_reps"] == 0  # dropped, not also "unscored"
    # the capped run's $2.01 stays out of the with-skill cost mean
    cell = next(c for c in s.data["cells"] if c["condition"] == "with-skill")
    assert cell["mean_cost"] == pytest.approx(0.05) and cell["n_cost_runs"] == 4
    assert s.data["cost_time"]["generation_usd"] == pytest.approx(
        6 * 0.03 + 5 * 0.05 + 2.01 - 0.0)
    assert s.data["run_health"]["budget_capped_runs"] == 1


def test_project_run_status_and_judge_costs(tmp_path: Path) -> None:
    extras = {c: (lambda run: "") for c in MANIFEST_EXTRA_COLUMNS}
    extras["model_id"] = lambda run: "claude-sonnet-4-5"
    extras["run_status"] = lambda run: {
        "p-a-sonnet-no-skill-r1": "timeout", "p-c-sonnet-no-skill-r2": "no_answer",
        "p-c-sonnet-with-skill-r2": "invalid"}.get(run["run_id"], "ok")
    extras["run_error"] = lambda run: {
        "p-a-sonnet-no-skill-r1": "killed after 600s",
        "p-c-sonnet-with-skill-r2": "invalid install: skill not in the init skill list (p-c)",
    }.get(run["run_id"], "")
    extras["started_utc"] = lambda run: "20260808T060000Z"
    extras["ended_utc"] = lambda run: "20260808T063000Z"
    w = write_week(tmp_path / "w", manifest_extra=extras,
                   skip_scores=lambda run: run["run_id"] in (
                       "p-a-sonnet-no-skill-r1", "p-c-sonnet-no-skill-r2"))
    for rid, cost in (("p-a-sonnet-with-skill-r1", "0.25"), ("p-b-sonnet-with-skill-r1", "0.5")):
        (w / rid).mkdir()
        (w / rid / "judge_cost.txt").write_text(cost + "\n")
    # a run the judge could not grade: our ledger leaves judge_error.txt and no scores rows
    def ungraded(rows: list[list[str]]) -> None:
        rows[:] = [r for r in rows if r[:5] != ["p-a", "p-a", "sonnet", "with-skill", "2"]]

    edit_csv(w / "scores.csv", ungraded)
    (w / "p-a-sonnet-with-skill-r2").mkdir()
    (w / "p-a-sonnet-with-skill-r2" / "judge_error.txt").write_text("HTTP 529 overloaded\n")
    s = summarize_week(w, write=False)
    assert s.problems == []
    assert s.data["coverage"]["dropped"] == [{
        "run_id": "p-a-sonnet-no-skill-r1", "reason": "timed out: killed after 600s",
        "status": "timeout", "prompt": "p-a", "model": "sonnet", "condition": "no-skill",
        "rep": 1}, {
        "run_id": "p-a-sonnet-with-skill-r2",
        "reason": "ungraded: judge failed: HTTP 529 overloaded",
        "status": "ok", "prompt": "p-a", "model": "sonnet", "condition": "with-skill",
        "rep": 2}, {
        "run_id": "p-c-sonnet-no-skill-r2", "reason": "no gradeable answer",
        "status": "no_answer", "prompt": "p-c", "model": "sonnet", "condition": "no-skill",
        "rep": 2}, {
        "run_id": "p-c-sonnet-with-skill-r2",
        "reason": "invalid install: skill not in the init skill list (p-c)",
        "status": "invalid", "prompt": "p-c", "model": "sonnet", "condition": "with-skill",
        "rep": 2}]
    # our started/ended columns give the window and the wall-clock
    assert s.data["provenance"]["window"] == {"start": "20260808T060000Z",
                                              "end": "20260808T063000Z"}
    assert s.data["cost_time"]["wall_clock_s"] == 1800
    # provenance: the snapshot "claude-sonnet-x" is not a build of the requested id
    assert s.data["provenance"]["model_ids"] == {"sonnet": ["claude-sonnet-4-5"]}
    assert "- ⚠ model sonnet: requested claude-sonnet-4-5 but the transcripts report " \
        "claude-sonnet-x" in s.markdown
    ct = s.data["cost_time"]
    assert ct["judge_usd"] == pytest.approx(0.75) and ct["judge_runs_with_cost"] == 2
    assert "(from 2 of 12 runs; the rest not recorded)" in s.markdown


def test_vectorised_codes_agree_with_the_csv(tmp_path: Path) -> None:
    w = write_week(tmp_path / "w", models=("haiku", "sonnet", "opus"))
    week = load_week(w)
    assert week.models == ["opus", "sonnet", "haiku"]
    rows = list(csv.DictReader((w / "scores.csv").open(newline="")))
    got = [(week.prompts[p], week.models[m]) for p, m in zip(week.scores.prompt, week.scores.model,
                                                              strict=True)]
    assert got == [(r["prompt"], r["model"]) for r in rows]
    assert np.nansum(week.scores.credit) == sum(float(r["credit"]) for r in rows)


def test_derived_status_follows_the_one_classification_order(tmp_path: Path) -> None:
    """Without run_status, the base columns are classified in files.TRANSCRIPT_ORDER: a
    with-skill run whose skill was missing is invalid even when it also hit the cap."""

    def override(run: dict[str, str]) -> None:
        if run["prompt"] == "p-a" and run["condition"] == "with-skill" and run["rep"] == "1":
            run["skill_available"], run["budget_hit"], run["exit_code"] = "0", "1", "1"

    s = summarize_week(write_week(tmp_path / "w", run_override=override), write=False)
    (dropped,) = s.data["coverage"]["dropped"]
    assert dropped["status"] == "invalid"


def test_distinct_is_np_unique_without_numpy_ma() -> None:
    """week.tables.distinct gives np.unique's sorted distinct codes (it exists so that a
    small week's summarize does not import numpy.ma for them)."""
    from pytest_skilllift.week.tables import distinct

    rng = np.random.default_rng(3)
    for codes in (np.array([], np.int64), np.array([4], np.int8), rng.integers(-1, 7, 500),
                  rng.integers(0, 10**6, 10**4).astype(np.int32), rng.integers(0, 9, 10**5)):
        got, want = distinct(codes), np.unique(codes)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()


def test_full_width_run_stamps_read_as_strptime_reads_them() -> None:
    """The run window's stamps take a short cut past strptime: the same seconds, and
    whatever the short cut does not take (short fields, out of range) the long way."""
    from datetime import UTC, datetime

    from pytest_skilllift.week.tables import _parse_utc

    for stamp in ("20260808T101500Z", "20240229T235959Z", "19700101T000000Z"):
        want = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).timestamp()
        assert _parse_utc(stamp) == want
    assert _parse_utc("20230229T000000Z") is None  # no such day, either way
    assert _parse_utc("2026088T101500Z") == datetime(2026, 8, 8, 10, 15, tzinfo=UTC).timestamp()
    assert _parse_utc("2026-08-08T10:15:00Z") == datetime(2026, 8, 8, 10, 15,
                                                          tzinfo=UTC).timestamp()
