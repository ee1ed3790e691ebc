"""Harbor tasks in a pytest session, without running them: their ids and keywords, a
malformed task as a collection error naming file, field and fix, the usage error without a
Docker engine, and the run accessors checks read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_skilllift.config import DEMO_TASKS
from pytest_skilllift.model import RunSpec
from pytest_skilllift.run.tasks.reader import load_task
from pytest_skilllift.run.view import SkillLiftRun
from pytest_skilllift.week.ledger import Ledger

pytestmark = [pytest.mark.cli]


def project(pytester: pytest.Pytester) -> Path:
    root = pytester.path
    tasks = root / "evals" / "tasks"
    shutil.copytree(DEMO_TASKS / "sales-report", tasks / "sales-report")
    shutil.copytree(DEMO_TASKS / "sales-report", tasks / "bad-task")
    (tasks / "bad-task" / "task.toml").write_text("[agent]\ntimeout_sec = \"soon\"\n")
    pytester.makeini("[pytest]\nskill_lift_models = sonnet=claude-sonnet-4-5\n"
                     "skill_lift_reps = 1\nskill_lift_out = week\n")
    return root


def test_a_tasks_only_project_collects_its_items(pytester: pytest.Pytester) -> None:
    project(pytester)
    result = pytester.runpytest_subprocess("--skill-lift", "--collect-only", "-q",
                                           "-p", "no:cacheprovider")
    out = result.stdout.str()
    base = "evals/tasks/sales-report::sonnet"
    for arm in ("no-skill", "with-skill"):
        assert f"{base}::{arm}::r1::test_outputs.py::test_report_has_total" in out
        assert f"{base}::{arm}::r1::reward" in out
    assert f"{base}::with-skill::r1::invoked" in out
    # the malformed task: a collection error with file, field and fix, the good one still runs
    assert "bad-task/task.toml: agent.timeout_sec: must be a positive number of seconds, " \
           "got 'soon'; write e.g. timeout_sec = 600" in out
    # -k selects by the task's skill family and by the task's name
    for keyword in ("csv-report", "sales-report"):
        picked = pytester.runpytest_subprocess("--skill-lift", "--collect-only", "-q",
                                               "-p", "no:cacheprovider", "-k", keyword)
        assert f"{base}::with-skill::r1::reward" in picked.stdout.str()


def test_tasks_without_a_docker_engine_are_a_usage_error(pytester: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    project(pytester)
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    result = pytester.runpytest_subprocess("--skill-lift", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "Harbor tasks run in docker and no Docker engine answers" in result.stderr.str()


def test_a_checks_run_reads_the_tasks_reward_and_artifacts(tmp_path: Path) -> None:
    spec = RunSpec(prompt=load_task(DEMO_TASKS / "sales-report", tmp_path), model_label="m",
                   model_id="m", condition="with-skill", rep=1, run_id="r1")
    ledger = Ledger(tmp_path / "week")
    ledger.save_run("r1", {"run_id": "r1", "run_status": "ok", "reward": 1.0,
                           "verifier_tests": {"test_outputs.py::test_report_exists": "passed"}})
    (tmp_path / "week" / "r1" / "artifacts" / "out").mkdir(parents=True)
    (tmp_path / "week" / "r1" / "artifacts" / "out" / "report.json").write_text(
        json.dumps({"total": 1}))
    run = SkillLiftRun.load(ledger, spec)
    assert run.reward == 1.0
    assert run.verifier_tests == {"test_outputs.py::test_report_exists": "passed"}
    assert list(run.artifacts) == ["out/report.json"]
