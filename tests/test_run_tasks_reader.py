"""Harbor task directories: read as published; every malformed one names file, field and fix;
the verifier's results read into a reward, per-test outcomes, or a named verifier error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import DEMO_TASKS
from pytest_skilllift.model import RunSpec
from pytest_skilllift.run.tasks.reader import TaskError, load_task, task_dirs, verifier_tests
from pytest_skilllift.run.tasks.record import REWARD_ITEM, apply_verifier, verifier_rows
from pytest_skilllift.run.tasks.results import read_result, read_tests, verifier_test_key
from pytest_skilllift.runners.task_image import (
    CLI_STAGE,
    context_hash,
    image_tag,
    with_cli_stage,
)
from pytest_skilllift.week.files import INVALID, OK, VERIFIER_ERROR

DEMO = DEMO_TASKS / "sales-report"


@pytest.fixture
def task(tmp_path: Path) -> Path:
    """A copy of the demo's task, to break."""
    dest = tmp_path / "tasks" / "sales-report"
    shutil.copytree(DEMO, dest)
    return dest


def test_the_demo_task_reads_as_published(tmp_path: Path) -> None:
    spec = load_task(DEMO, tmp_path / "no-skills-root")
    assert spec.name == "sales-report"
    assert spec.family == "csv-report" and spec.skills_root == DEMO / "environment" / "skills"
    assert spec.prompt.startswith("Summarise the sales ledger")
    task = spec.task
    assert task is not None
    assert (task.agent_timeout_s, task.verifier_timeout_s) == (120.0, 60.0)
    assert (task.cpus, task.memory_mb, task.bundled_families) == (1.0, 1024, ("csv-report",))
    assert task.verifier_tests == ("test_outputs.py::test_report_exists",
                                   "test_outputs.py::test_report_has_total",
                                   "test_outputs.py::test_totals_per_region")
    # its rubric.json: the judge's items beside the verifier's (run/tasks/rubric.py)
    assert [i.key for i in spec.rubric] == ["must-1", "must-2", "bonus-1", "avoid-1"]
    assert spec.rubric[0].text == "Gives the grand total 1670.35"


def test_task_dirs_lists_each_task_once(tmp_path: Path, task: Path) -> None:
    (task / "tests" / "nested").mkdir()
    (task / "tests" / "nested" / "task.toml").write_text("")  # inside a task: not a task
    assert task_dirs(tmp_path / "tasks") == [task]
    assert task_dirs(tmp_path / "missing") == []


@pytest.mark.parametrize(("breakage", "expected"), [
    (lambda t: (t / "instruction.md").unlink(), "instruction.md: is missing"),
    (lambda t: (t / "instruction.md").write_text("  \n"), "instruction.md: is empty"),
    (lambda t: (t / "task.toml").write_text("[agent\n"), "task.toml: is not valid TOML"),
    (lambda t: (t / "environment" / "Dockerfile").unlink(), "Dockerfile: is missing"),
    (lambda t: (t / "tests" / "test.sh").unlink(), "test.sh: is missing"),
    (lambda t: (t / "task.toml").write_text("[agent]\ntimeout_secs = 5\n"),
     "agent.timeout_secs: is not a key of Harbor's task.toml; did you mean "
     "agent.timeout_sec?"),
    (lambda t: (t / "task.toml").write_text("[verifier]\ntimeout_sec = -1\n"),
     "verifier.timeout_sec: must be a positive number of seconds"),
    (lambda t: (t / "task.toml").write_text("[environment]\nmemory = \"lots\"\n"),
     "environment.memory: cannot read 'lots'"),
    (lambda t: (t / "task.toml").write_text("[verifier]\nenv = { A = [1] }\n"),
     "verifier.env: must be a table of strings"),
    (lambda t: shutil.rmtree(t / "environment" / "skills"),
     "skills: holds no skill family"),
    (lambda t: (t / "task.toml").write_text("[metadata]\nskill = \"nope\"\n"),
     "metadata.skill: names 'nope', which has no SKILL.md"),
])
def test_a_malformed_task_names_file_field_and_fix(task: Path, tmp_path: Path,
                                                   breakage: Any, expected: str) -> None:
    breakage(task)
    with pytest.raises(TaskError) as info:
        load_task(task, tmp_path / "skills")
    message = str(info.value)
    assert expected in message
    assert str(task) in message and "; " in message  # the file, then the fix


def test_a_task_may_name_a_family_of_the_skills_root(task: Path, tmp_path: Path) -> None:
    shutil.rmtree(task / "environment" / "skills")
    (tmp_path / "skills" / "fam").mkdir(parents=True)
    (tmp_path / "skills" / "fam" / "SKILL.md").write_text("---\nname: fam\n---\n")
    (task / "task.toml").write_text('[metadata]\nskill = "fam"\n[environment]\nmemory = "2G"\n')
    spec = load_task(task, tmp_path / "skills")
    assert spec.family == "fam" and spec.skills_root is None
    assert spec.task is not None and spec.task.memory_mb == 2048


def test_verifier_tests_are_read_without_running_them(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text(
        "def test_one(): pass\nclass TestB:\n    def test_two(self): pass\n"
        "    def helper(self): pass\ndef helper(): pass\n")
    (tmp_path / "test_broken.py").write_text("def test_(:\n")
    assert verifier_tests(tmp_path) == ("test_a.py::test_one", "test_a.py::TestB::test_two")


# -- what the verifier said -----------------------------------------------------------------


def _run(tmp_path: Path, *, verifier: dict[str, Any] | None = None,
         files: dict[str, str] | None = None) -> Path:
    run = tmp_path / "run"
    (run / "verifier").mkdir(parents=True)
    info: dict[str, Any] = {"tools": ["Write"]}
    if verifier is not None:
        info["verifier"] = verifier
    (run / "task.json").write_text(json.dumps(info))
    for name, text in (files or {}).items():
        (run / "verifier" / name).write_text(text)
    return run


def test_test_keys_fold_paths_and_parameters() -> None:
    assert verifier_test_key("tests/test_outputs.py::test_x[2-a]") == "test_outputs.py::test_x"
    assert verifier_test_key("/tests/test_o.py::TestC::test_y") == "test_o.py::TestC::test_y"


def test_ctrf_outcomes_a_failed_case_fails_its_test(tmp_path: Path) -> None:
    ctrf = {"results": {"tests": [
        {"name": "tests/test_o.py::test_x[1]", "status": "passed"},
        {"name": "tests/test_o.py::test_x[2]", "status": "failed"},
        {"name": "tests/test_o.py::test_y", "status": "passed"},
        {"name": "tests/test_o.py::test_z", "status": "skipped"}]}}
    run = _run(tmp_path, files={"ctrf.json": json.dumps(ctrf)})
    assert read_tests(run / "verifier") == {"test_o.py::test_x": "failed",
                                             "test_o.py::test_y": "passed",
                                             "test_o.py::test_z": "skipped"}


def test_junit_outcomes(tmp_path: Path) -> None:
    xml = ('<testsuites><testsuite><testcase classname="test_o" name="test_a"/>'
           '<testcase classname="test_o" name="test_b"><failure message="x"/></testcase>'
           "</testsuite></testsuites>")
    run = _run(tmp_path, files={"junit.xml": xml})
    assert read_tests(run / "verifier") == {"test_o.py::test_a": "passed",
                                             "test_o.py::test_b": "failed"}


@pytest.mark.parametrize(("verifier", "files", "reward", "error"), [
    ({"exit_code": 0}, {"reward.txt": "1\n"}, 1.0, ""),
    ({"exit_code": 1}, {"reward.txt": "0"}, 0.0, ""),
    ({"exit_code": 0}, {"reward.json": '{"accuracy": 0.5, "style": 1}'}, 0.5, ""),
    ({"exit_code": 0}, {}, None, "the verifier wrote no reward"),
    ({"exit_code": 0}, {"reward.txt": "pass"}, None, "reward.txt does not hold a number"),
    ({"exit_code": 0}, {"reward.json": '{"a": "x"}'}, None, "reward.json: 'a' is not a number"),
    ({"exit_code": None, "timed_out": True}, {"reward.txt": "1"}, None,
     "the verifier timed out after 60s"),
    (None, {}, None, "the verifier did not run"),
])
def test_the_reward_or_why_there_is_none(tmp_path: Path, verifier: dict[str, Any] | None,
                                         files: dict[str, str], reward: float | None,
                                         error: str) -> None:
    task = load_task(DEMO, tmp_path).task
    assert task is not None
    result = read_result(_run(tmp_path, verifier=verifier, files=files), task)
    assert result.reward == reward
    assert (error in result.error) if error else result.error == ""


def _spec(tmp_path: Path, condition: str) -> RunSpec:
    prompt = load_task(DEMO, tmp_path)
    return RunSpec(prompt=prompt, model_label="m", model_id="m", condition=condition, rep=1,
                   run_id="r")


def _stdout(run: Path, skills: list[str]) -> None:
    (run / "stdout.txt").write_text(json.dumps(
        {"type": "system", "subtype": "init", "skills": skills}) + "\n")


def test_a_verifier_error_is_excluded_never_a_zero(tmp_path: Path) -> None:
    run = _run(tmp_path, verifier={"exit_code": 2}, files={})
    _stdout(run, [])
    record = apply_verifier(_spec(tmp_path, "no-skill"), {"run_status": OK}, run)
    assert record["run_status"] == VERIFIER_ERROR
    assert "wrote no reward" in record["run_error"] and "exited 2" in record["run_error"]
    assert record["reward"] == ""


def test_a_no_skill_run_that_lists_the_tasks_skill_is_invalid(tmp_path: Path) -> None:
    run = _run(tmp_path, verifier={"exit_code": 0}, files={"reward.txt": "1"})
    _stdout(run, ["csv-report", "other"])
    record = apply_verifier(_spec(tmp_path, "no-skill"), {"run_status": OK}, run)
    assert record["run_status"] == INVALID and "not skill-free" in record["run_error"]
    assert record["task_skills_listed"] == ["csv-report"]
    with_skill = apply_verifier(_spec(tmp_path, "with-skill"), {"run_status": OK}, run)
    assert with_skill["run_status"] == OK and with_skill["reward"] == 1.0


def test_an_empty_final_answer_does_not_drop_a_rewarded_run(tmp_path: Path) -> None:
    run = _run(tmp_path, verifier={"exit_code": 0}, files={"reward.txt": "1"})
    _stdout(run, [])
    record = apply_verifier(_spec(tmp_path, "no-skill"), {"run_status": "no_answer"}, run)
    assert record["run_status"] == OK


def test_rows_one_per_verifier_test_plus_the_reward(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "with-skill")
    record = {"reward": 0.0, "verifier_tests": {
        "test_outputs.py::test_report_exists": "passed",
        "test_outputs.py::test_report_has_total": "failed",
        "test_outputs.py::not_collected": "passed"}}
    rows = verifier_rows(spec, record)
    assert {k: r["verdict"] for k, r in rows.items()} == {
        "test_outputs.py::test_report_exists": "passed",
        "test_outputs.py::test_report_has_total": "failed", REWARD_ITEM: "failed"}


# -- the image's name -------------------------------------------------------------------------


def test_the_image_hash_follows_the_arms_context(task: Path, tmp_path: Path) -> None:
    cli = tmp_path / "claude"
    cli.write_bytes(b"cli")
    spec = load_task(task, tmp_path).task
    assert spec is not None
    with_, without = context_hash(spec, True, cli), context_hash(spec, False, cli)
    assert with_ != without
    (task / "environment" / "skills" / "csv-report" / "SKILL.md").write_text("changed")
    assert context_hash(spec, True, cli) != with_  # the skill is in the with-skill image
    assert context_hash(spec, False, cli) == without  # and nowhere in the no-skill one
    (task / "environment" / "data" / "sales.csv").write_text("changed")
    assert context_hash(spec, False, cli) != without
    assert image_tag(spec, False, "abc") == "skilllift-task-sales-report:noskills-abc"


def test_the_cli_stage_goes_after_global_args() -> None:
    text = "# syntax=docker/dockerfile:1\nARG BASE=debian\nFROM $BASE\nRUN true\n"
    out = with_cli_stage(text, "cli:1").split("\n")
    assert out == ["# syntax=docker/dockerfile:1", "ARG BASE=debian",
                   f"FROM cli:1 AS {CLI_STAGE}", "FROM $BASE", "RUN true"]
