"""A task's optional rubric.json: validated as a prompt's rubric, graded by the blind judge
over the instruction, the final message and the changed files' text (capped, each named),
evidence checked against exactly that text, the grades kept apart from the prompts' coverage.

The judge here is the real client (``judge.client.Judge``) against the package's stand-in;
what the judge saw is read from the stand-in's request log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import DEMO_TASKS
from pytest_skilllift.judge.client import Judge
from pytest_skilllift.judge.protocol import TOOL_NAME
from pytest_skilllift.model import AgentConfig, RunSpec
from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.run.engine import WeekRun
from pytest_skilllift.run.tasks.reader import TaskError, load_task
from pytest_skilllift.run.tasks.rubric import JUDGE_FILE_BYTES, JUDGE_TOTAL_BYTES, judge_view
from pytest_skilllift.runners.base import Runner
from pytest_skilllift.testing import StandIn
from pytest_skilllift.testing.judge_script import keyword_judge, read_judge_request
from pytest_skilllift.testing.replies import Reply
from pytest_skilllift.view.tasks import rubric as view_rubric
from pytest_skilllift.week.files import SCORES_CSV, TASK_RUBRIC_CSV
from pytest_skilllift.week.ledger import Ledger

MODEL = "claude-opus-4-1"
REPORT = json.dumps({"by_region": {"east": 250.0, "north": 140.0, "south": 1280.35},
                     "total": 1670.35}, indent=1, sort_keys=True)
TAIL = "THE-TAIL-PAST-THE-CAP"


def task_copy(tmp_path: Path, rubric: Any = None) -> Path:
    dest = tmp_path / "tasks" / "sales-report"
    shutil.copytree(DEMO_TASKS / "sales-report", dest)
    if rubric is not None:
        (dest / "rubric.json").write_text(rubric if isinstance(rubric, str)
                                          else json.dumps(rubric))
    return dest


def spec_of(folder: Path, condition: str = "with-skill") -> RunSpec:
    prompt = load_task(folder, folder.parent / "no-skills-root")
    return RunSpec(prompt=prompt, model_label="sonnet", model_id="claude-sonnet-4-5",
                   condition=condition, rep=1, run_id=f"sales-report-sonnet-{condition}-r1-w")


def ok_run(ledger: Ledger, spec: RunSpec, answer: str, files: dict[str, bytes],
           reward: float = 1.0) -> Path:
    """A task run as the task runner leaves it: ok, rewarded, its files under artifacts/."""
    ledger.save_run(spec.run_id, {
        "run_id": spec.run_id, "run_status": "ok", "reward": reward, "task": "sales-report",
        "prompt": spec.prompt.name, "skill_family": spec.prompt.family, "model": "sonnet",
        "condition": spec.condition, "rep": 1, "final_answer": answer,
        "verifier_tests": {"test_outputs.py::test_report_exists": "passed"}})
    run_dir = ledger.run_dir(spec.run_id)
    for rel, data in files.items():
        (run_dir / "artifacts" / rel).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / "artifacts" / rel).write_bytes(data)
    return run_dir


def _no_runner() -> Runner:
    raise AssertionError("a generated run is never generated again")


def engine(ledger: Ledger, api: StandIn) -> WeekRun:
    judge = Judge(MODEL, api_key="sk-test", base_url=api.base_url)
    return WeekRun(ledger, AgentConfig(claude_path="", skills_root=Path(".")), _no_runner,
                   lambda: judge)


def judge_texts(api: StandIn) -> list[str]:
    return ["\n".join(str(b.get("text", "")) for m in body["messages"]
                      for b in m["content"]) for body in api.bodies("judge")]


# -- rubric.json read and validated as a prompt's rubric ----------------------------------------

@pytest.mark.parametrize(("content", "message"), [
    ({"rubric": [{"type": "mustt", "text": "x"}]},
     "rubric.json: rubric[0].type: is 'mustt', an unknown item type (did you mean 'must'?); "
     "use one of must, bonus, avoid"),
    ({"rubrik": [{"type": "must", "text": "x"}]},
     "rubric.json: rubrik: is not a key of rubric.json; did you mean 'rubric'?"),
    ({"rubric": [{"type": "bonus", "text": "x"}]},
     "rubric.json: rubric: has no must item; add at least one must item"),
    ({"rubric": [{"type": "must", "txt": "x"}]},
     "rubric.json: rubric[0].text: must be a non-empty string (found 'txt': did you mean "
     "'text'?); write what the answer must contain"),
    ('{"rubric": [', "rubric.json: (file): is not valid JSON"),
    ({"rubric": "must be right"}, "rubric.json: rubric: is not a list; make it a list like"),
])
def test_a_bad_rubric_json_names_the_file_the_field_and_the_fix(
        tmp_path: Path, content: Any, message: str) -> None:
    folder = task_copy(tmp_path, content)
    with pytest.raises(TaskError) as err:
        load_task(folder, tmp_path)
    assert str(err.value).startswith(f"{folder}/{message}"), str(err.value)


def test_a_bare_list_reads_as_the_rubric_and_no_file_is_no_rubric(tmp_path: Path) -> None:
    folder = task_copy(tmp_path, [{"type": "must", "text": "Gives the total"},
                                  {"type": "avoid", "text": "Guesses"}])
    assert [i.key for i in load_task(folder, tmp_path).rubric] == ["must-1", "avoid-1"]
    (folder / "rubric.json").unlink()
    assert load_task(folder, tmp_path).rubric == ()


# -- what the judge sees ------------------------------------------------------------------------

def test_the_judge_view_names_each_file_caps_it_and_counts_the_cuts(tmp_path: Path) -> None:
    run = tmp_path / "run"
    art = run / "artifacts"
    (art / "out").mkdir(parents=True)
    (art / "report.json").write_text(REPORT)
    (art / "out" / "big.log").write_text("line\n" * (JUDGE_FILE_BYTES // 5) + TAIL)
    (art / "chart.png").write_bytes(b"\x89PNG\x00\x01binary-content")
    secret = tmp_path / "secret.txt"
    secret.write_text("NEVER-SHOWN-SECRET")
    (art / "link.txt").symlink_to(secret)
    (run / "task.json").write_text(json.dumps({"artifacts": {
        "cut": [{"path": "huge.parquet", "bytes": 9_000_000, "reason": "file over the cap"}],
        "deleted": ["/app/old.csv"]}}))
    view = judge_view("Done: the report is written.", run)
    text = view.text
    assert text.startswith("## The agent's final message\n\nDone: the report is written.")
    assert f"### report.json ({len(REPORT)} bytes)\n{REPORT}" in text
    big = JUDGE_FILE_BYTES // 5 * 5 + len(TAIL)
    assert (f"### out/big.log ({big} bytes; the first {JUDGE_FILE_BYTES} shown, "
            f"{big - JUDGE_FILE_BYTES} cut)") in text
    assert TAIL not in text  # past the per-file cap
    assert "### chart.png (20 bytes): binary, not shown" in text and "binary-content" not in text
    assert "NEVER-SHOWN-SECRET" not in text
    assert "- link.txt (? bytes): not a regular file (a link is never followed)" in text
    assert "- huge.parquet (9000000 bytes): not saved by the run (file over the cap)" in text
    assert "- /app/old.csv (? bytes): deleted by the agent" in text
    meta = view.meta()
    assert [f["path"] for f in meta["shown"]] == ["out/big.log", "report.json"]
    assert meta["cut_files"] == 1
    assert meta["caps"] == {"file_bytes": JUDGE_FILE_BYTES, "total_bytes": JUDGE_TOTAL_BYTES,
                            "files": 20}
    assert {f["path"]: f["why"] for f in meta["left_out"]}["chart.png"] == "binary"


def test_past_the_total_cap_files_are_named_not_shown(tmp_path: Path) -> None:
    art = tmp_path / "run" / "artifacts"
    art.mkdir(parents=True)
    n = JUDGE_TOTAL_BYTES // JUDGE_FILE_BYTES + 2
    for i in range(n):
        (art / f"f{i}.txt").write_text(str(i) * JUDGE_FILE_BYTES)
    view = judge_view("", tmp_path / "run")
    assert sum(f["shown_bytes"] for f in view.shown) == JUDGE_TOTAL_BYTES
    assert len(view.shown) == JUDGE_TOTAL_BYTES // JUDGE_FILE_BYTES
    assert [f["path"] for f in view.left_out] == [f"f{i}.txt" for i in range(n - 2, n)]
    assert f"over the judge's {JUDGE_TOTAL_BYTES} bytes in all" in view.text
    assert "## The agent's final message\n\n(empty)" in view.text


# -- graded through the engine: the request, the evidence, resume --------------------------------

def test_a_rubric_task_run_is_judged_over_the_changed_files(tmp_path: Path) -> None:
    spec = spec_of(task_copy(tmp_path / "src"))  # the demo's own rubric.json
    ledger = Ledger(tmp_path / "week")
    run_dir = ok_run(ledger, spec, "Done: I followed the skill's steps and ran each of its "
                     "commands.", {"report.json": REPORT.encode(),
                                   "big.log": b"x" * (JUDGE_FILE_BYTES + 10)})
    with StandIn(judge=keyword_judge) as api:
        graded = engine(ledger, api).result(spec)
        sent = judge_texts(api)
    assert len(sent) == 1
    # the instruction, the final message and the files' text, each named, the caps said
    assert spec.prompt.prompt.strip() in sent[0]
    assert "Done: I followed the skill's steps" in sent[0]
    assert f"### report.json ({len(REPORT)} bytes)\n{REPORT}" in sent[0]
    assert (f"### big.log ({JUDGE_FILE_BYTES + 10} bytes; the first {JUDGE_FILE_BYTES} "
            f"shown, 10 cut)") in sent[0]
    assert f"at most {JUDGE_FILE_BYTES} bytes a file, {JUDGE_TOTAL_BYTES} in all" in sent[0]
    # the verifier's items and the judge's, side by side, ids distinct
    assert set(graded.rows) == {"test_outputs.py::test_report_exists", "reward", "must-1",
                                "must-2", "bonus-1", "avoid-1"}
    assert graded.rows["reward"]["verdict"] == "passed"
    assert graded.rows["must-1"]["verdict"] == "met"
    assert graded.rows["must-1"]["evidence_quote"] == '"total": 1670.35'  # from report.json
    assert graded.rows["avoid-1"]["verdict"] == "clean"
    grading = json.loads((run_dir / "grades.json").read_text())
    assert grading["judge_files"]["cut_files"] == 1
    assert [f["path"] for f in grading["judge_files"]["shown"]] == ["big.log", "report.json"]


def quoting_judge(quotes: dict[str, str]) -> Any:
    """Every item whose text is a key of ``quotes`` is claimed met with that quote."""
    def handler(request: dict[str, Any]) -> Reply:
        _answer, rows = read_judge_request(request)
        verdicts = [{"index": i, "verdict": "met" if text in quotes else
                     ("clean" if kind == "avoid" else "missing" if kind == "must" else "absent"),
                     "evidence": quotes.get(text, "")} for i, kind, text in rows]
        return Reply.tool(TOOL_NAME, {"verdicts": verdicts})
    return handler


def test_evidence_is_checked_against_exactly_the_text_the_judge_saw(tmp_path: Path) -> None:
    folder = task_copy(tmp_path / "src", {"rubric": [
        {"type": "must", "text": "Gives the grand total"},
        {"type": "must", "text": "Logs the tail"},
        {"type": "must", "text": "Cites the final message"}]})
    spec = spec_of(folder)
    ledger = Ledger(tmp_path / "week")
    ok_run(ledger, spec, "All done.", {
        "report.json": REPORT.encode(),
        "run.log": b"x" * JUDGE_FILE_BYTES + TAIL.encode()})  # the tail: cut, never shown
    judge = quoting_judge({"Gives the grand total": '"total": 1670.35',
                           "Logs the tail": TAIL, "Cites the final message": "All done."})
    with StandIn(judge=judge) as api:
        rows = engine(ledger, api).result(spec).rows
    assert (rows["must-1"]["verdict"], rows["must-1"]["evidence_ok"]) == ("met", 1)
    assert (rows["must-3"]["verdict"], rows["must-3"]["evidence_ok"]) == ("met", 1)
    # a quote from the part of the file past the cap: the judge never saw it, it earns nothing
    assert (rows["must-2"]["verdict"], rows["must-2"]["evidence_ok"]) == ("missing", 0)
    assert rows["must-2"]["claimed_verdict"] == "met"


def test_resume_does_not_regrade_and_a_task_without_rubric_calls_no_judge(
        tmp_path: Path) -> None:
    spec = spec_of(task_copy(tmp_path / "src"))
    ledger = Ledger(tmp_path / "week")
    ok_run(ledger, spec, "Done.", {"report.json": REPORT.encode()})
    with StandIn(judge=keyword_judge) as api:
        first = engine(ledger, api).result(spec)
        again = engine(ledger, api).result(spec)  # a new session on the same week
        calls = len(api.bodies("judge"))
    assert first.judged_now and not again.judged_now
    assert calls == 1 and again.rows == first.rows
    bare = task_copy(tmp_path / "bare")
    (bare / "rubric.json").unlink()
    plain = spec_of(bare)
    other = Ledger(tmp_path / "week2")
    ok_run(other, plain, "Done.", {"report.json": REPORT.encode()})
    with StandIn(judge=keyword_judge) as api:
        graded = engine(other, api).result(plain)
        assert api.bodies("judge") == []
    assert set(graded.rows) == {"test_outputs.py::test_report_exists", "reward"}


# -- the week: apart from the prompts' coverage, on the scorecard and the task page ---------------

def test_the_task_rubric_has_its_own_coverage_never_the_prompts(tmp_path: Path) -> None:
    folder = task_copy(tmp_path / "src")
    ledger = Ledger(tmp_path / "week")
    with_spec, no_spec = spec_of(folder), spec_of(folder, "no-skill")
    ok_run(ledger, with_spec, "Done: I followed the skill's steps and ran each of its "
           "commands.", {"report.json": REPORT.encode()})
    no_dir = ok_run(ledger, no_spec, "Here is a general approach: start from the official "
                    "documentation, try a small example, measure.", {}, reward=0.0)
    with StandIn(judge=keyword_judge) as api:
        run = engine(ledger, api)
        run.result(with_spec)
        run.result(no_spec)
    ledger.rebuild_csvs()
    week = tmp_path / "week"
    assert (week / SCORES_CSV).read_text().count("\n") == 1  # the header: no prompt rows
    assert (week / TASK_RUBRIC_CSV).read_text().count("\n") == 1 + 2 * 4
    card = summarize_week(week, write=False).data
    rubric = card["task_rubric"]
    assert rubric is not None
    assert rubric["models"]["sonnet"] == {"must_no": 0.0, "must_with": 1.0, "lift": 1.0,
                                          "lift_se": None, "n_tasks": 1}
    assert rubric["tasks"] == [{"task": "sales-report", "model": "sonnet", "must_no": 0.0,
                                "must_with": 1.0, "delta": 1.0, "violated_no": 1,
                                "violated_with": 0, "runs_no": 1, "runs_with": 1}]
    # the rewards keep their own headline; the prompts' must coverage has nothing of it
    assert card["rewards"] is not None
    assert card["rewards"]["models"]["sonnet"]["reward_lift"] == 1.0
    prompt_side = card["models"]["sonnet"]
    assert (prompt_side["must_no"], prompt_side["must_with"], prompt_side["n_prompts"]) == (
        None, None, 0)
    summary = summarize_week(week, write=False)
    assert "## Task rubric coverage (judge, with-skill − no-skill)" in summary.markdown
    assert ("task rubric must coverage (judge, apart from the prompts'): sonnet 0.000 → "
            "1.000 (+1.000, 1 task)") in summary.terminal_lines()
    # the task page's data: each verdict with the judge's quote
    shown = {r["key"]: r for r in view_rubric(no_dir)}
    assert shown["avoid-1"]["verdict"] == "violated" and shown["avoid-1"]["evidence_ok"]
    assert shown["must-1"]["verdict"] == "missing" and shown["must-1"]["evidence"] == ""
    # none left: the file goes with the last graded task run
    for spec in (with_spec, no_spec):
        (ledger.run_dir(spec.run_id) / "grades.json").unlink()
    ledger.rebuild_csvs()
    assert not (week / TASK_RUBRIC_CSV).exists()


def test_rubric_grades_of_the_other_arms_are_counted_and_named_not_dropped(
        tmp_path: Path) -> None:
    """The section is with-skill − no-skill; a no-skill-b (or with-all, @REF) run's rubric
    grades are not in it, and it says how many of each arm it left out."""
    folder = task_copy(tmp_path / "src")
    ledger = Ledger(tmp_path / "week")
    specs = [spec_of(folder), spec_of(folder, "no-skill"), spec_of(folder, "no-skill-b")]
    for spec in specs:
        ok_run(ledger, spec, "Done.", {"report.json": REPORT.encode()})
    with StandIn(judge=keyword_judge) as api:
        run = engine(ledger, api)
        for spec in specs:
            run.result(spec)
    ledger.rebuild_csvs()
    summary = summarize_week(tmp_path / "week", write=False)
    rubric = summary.data["task_rubric"]
    assert rubric is not None
    assert rubric["graded_runs"] == 2 and rubric["other_arm_runs"] == {"no-skill-b": 1}
    assert "the rubric grades of 1 no-skill-b run (task_rubric.csv holds them" in (
        summary.markdown)


def test_batch_judging_sends_the_same_view_of_the_files(tmp_path: Path) -> None:
    from pytest_skilllift.judge.batch import BatchJudge
    from pytest_skilllift.run.batch_grade import grade_plan_in_batches
    from pytest_skilllift.testing.batches import BatchScript

    spec = spec_of(task_copy(tmp_path / "src"))
    ledger = Ledger(tmp_path / "week")
    run_dir = ok_run(ledger, spec, "Done.", {"report.json": REPORT.encode()})
    with StandIn(judge=keyword_judge, batch=BatchScript()) as api:
        judge = BatchJudge(tmp_path / "week", MODEL, api_key="sk-test", base_url=api.base_url,
                           poll_s=0.0)
        [graded] = grade_plan_in_batches(ledger, [spec], judge)
        paths = [r.path for r in api.requests if r.kind == "judge"]
        sent = judge_texts(api)
    assert "/v1/messages" not in paths and paths  # a Message Batch, never a direct call
    assert len(sent) == 1 and f"### report.json ({len(REPORT)} bytes)\n{REPORT}" in sent[0]
    # the quote is report.json's: only the files' text carried it to the judge
    assert graded.rows["must-1"]["evidence_quote"] == '"total": 1670.35'
    assert graded.rows["must-1"]["evidence_ok"] == 1
    assert "reward" in graded.rows  # the verifier's items stay beside the judge's
    assert json.loads((run_dir / "grades.json").read_text())["judge_files"]["shown"] == [
        {"path": "report.json", "bytes": len(REPORT), "shown_bytes": len(REPORT)}]


def test_skilllift_judge_grades_a_task_runs_rubric_and_skips_a_task_without(
        tmp_path: Path) -> None:
    from pytest_skilllift.run.regrade import grade_direct, plan_regrade

    folder = task_copy(tmp_path / "src")
    bare = task_copy(tmp_path / "bare")
    (bare / "rubric.json").unlink()
    ledger = Ledger(tmp_path / "week")
    spec, plain = spec_of(folder), spec_of(bare, "no-skill")
    for one in (spec, plain):
        run_dir = ok_run(ledger, one, "Done.", {"report.json": REPORT.encode()})
        record = json.loads((run_dir / "run.json").read_text())
        ledger.save_run(one.run_id, {**record, "prompt_path": str(one.prompt.path)})
    plan = plan_regrade(tmp_path / "week")
    assert [s.run_id for s in plan.specs] == [spec.run_id] and not plan.unreadable
    assert plan.skipped == [(plain.run_id, "a task without rubric.json: its verifier grades it")]
    with StandIn(judge=keyword_judge) as api:
        [graded] = grade_direct(plan, Judge(MODEL, api_key="sk-test", base_url=api.base_url))
    assert graded.rows["must-1"]["evidence_quote"] == '"total": 1670.35'
    assert (ledger.run_dir(spec.run_id) / "grades.json").is_file()


def test_tasks_check_static_names_a_bad_rubric(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_skilllift.cli import main as cli

    folder = task_copy(tmp_path, {"rubric": [{"type": "avodi", "text": "x"},
                                             {"type": "must", "text": "y"}]})
    assert cli.main(["tasks", "check", "--static", str(folder.parent)]) == 1
    assert (f"BROKEN   reads: {folder}/rubric.json: rubric[0].type: is 'avodi', an unknown "
            "item type (did you mean 'avoid'?); use one of must, bonus, avoid"
            ) in capsys.readouterr().out


def test_task_rubric_csv_keeps_quoted_newlines_and_is_never_read_through_a_link(
        tmp_path: Path) -> None:
    from pytest_skilllift.week.tables import Problem, read_task_rubric

    (tmp_path / TASK_RUBRIC_CSV).write_text('run_id,evidence_quote\nr1,"line 1\nline 2"\n')
    assert read_task_rubric(tmp_path, []) == [{"run_id": "r1",
                                               "evidence_quote": "line 1\nline 2"}]
    week = tmp_path / "linked"
    week.mkdir()
    (week / TASK_RUBRIC_CSV).symlink_to(tmp_path / TASK_RUBRIC_CSV)
    problems: list[Problem] = []
    assert read_task_rubric(week, problems) == []
    assert len(problems) == 1 and problems[0].file == TASK_RUBRIC_CSV


def test_the_price_estimate_counts_a_judge_call_for_a_rubric_task_only(tmp_path: Path) -> None:
    from pytest_skilllift.run.estimate import DONE, NEW, TO_GRADE, plan_runs

    with_rubric = spec_of(task_copy(tmp_path / "a"))
    bare_folder = task_copy(tmp_path / "b")
    (bare_folder / "rubric.json").unlink()
    bare = spec_of(bare_folder, "no-skill")
    planned = plan_runs([with_rubric, bare], tmp_path / "week")
    assert [(p.state, p.judged) for p in planned] == [(NEW, True), (NEW, False)]
    ledger = Ledger(tmp_path / "week")
    for spec in (with_rubric, bare):  # generated, not graded yet
        ok_run(ledger, spec, "Done.", {})
    planned = plan_runs([with_rubric, bare], tmp_path / "week")
    assert [(p.state, p.judged) for p in planned] == [(TO_GRADE, True), (DONE, False)]
