"""Harbor tasks end to end: a week of a prompt and two tasks, in docker, offline, with the real
CLI driven by the stand-in's working agent (``testing/task_script.py``).

The demo's ``sales-report`` task: its skill's bash block computes the report the verifier
(pytest, inside the container) checks, so with-skill passes every verifier test (reward 1) and
no-skill — the generic attempt, ``ATTEMPT.md`` — passes none (reward 0): the reward lift is
exactly 1. A copy whose ``test.sh`` crashes before writing a reward is ``verifier_error`` in
both arms: excluded and named. Then ``-n 2`` on a new week builds no image and generates each
run once, and resuming that week generates nothing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

docker = pytest.importorskip("docker", reason="the docker SDK is not installed")

from pytest_skilllift.config import DEMO_PROJECT, DEMO_TASKS  # noqa: E402

from .docker_env import docker_problem, task_base, task_standin  # noqa: E402, F401
from .test_plugin_e2e import run  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.cli]

_PROBLEM = docker_problem()
if _PROBLEM:
    pytest.skip(_PROBLEM, allow_module_level=True)

TASK_RUNS = 4  # two tasks × two arms × one model × one rep
VERIFIER_TESTS = ("test_outputs.py::test_report_exists", "test_outputs.py::test_report_has_total",
                  "test_outputs.py::test_totals_per_region")


def make_project(pytester: pytest.Pytester) -> Path:
    root = pytester.path
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    (root / "evals" / "test-prompts").mkdir(parents=True)
    shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / "git-bisect-regression.json",
                root / "evals" / "test-prompts")
    shutil.copytree(DEMO_TASKS / "sales-report", root / "evals" / "tasks" / "sales-report")
    broken = root / "evals" / "tasks" / "broken-verifier"
    shutil.copytree(DEMO_TASKS / "sales-report", broken)
    (broken / "tests" / "test.sh").write_text(
        "#!/bin/bash\necho 'verifier crashed before scoring' >&2\nexit 3\n")
    # …and its image runs the agent as a user of its own, with that user's HOME and workdir.
    (broken / "environment" / "Dockerfile").write_text(
        "FROM skilllift-task-base:local\n"
        "RUN echo 'worker:x:1000:1000::/home/worker:/bin/bash' >> /etc/passwd && "
        "echo 'worker:x:1000:' >> /etc/group && mkdir -p /home/worker/app && "
        "chown -R 1000:1000 /home/worker\n"
        "COPY data/sales.csv /home/worker/app/sales.csv\n"
        "COPY --chown=worker:worker skills /home/worker/.claude/skills\n"
        "USER worker\nWORKDIR /home/worker/app\n")
    pytester.makeini("[pytest]\nskill_lift_models = sonnet=claude-sonnet-4-5\n"
                     "skill_lift_reps = 1\nskill_lift_out = week\n")
    return root


def task_sessions_started(server: Any) -> int:
    """Agent conversations the stand-in saw begin with the tasks' instruction."""
    from pytest_skilllift.testing.agent_script import user_prompt

    return sum(1 for body in server.bodies("agent")
               if len(body.get("messages") or []) == 1
               and user_prompt(body).startswith("Summarise the sales ledger"))


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_a_week_of_prompts_and_tasks_in_docker(pytester: pytest.Pytester,
                                               task_standin: Any) -> None:  # noqa: F811
    root = make_project(pytester)
    result = run(pytester, task_standin, "-p", "no:xdist", "--skill-lift-docker-network=host",
                 "-rA", timeout=900)
    out = result.stdout.str()
    week = root / "week"
    assert task_sessions_started(task_standin) == TASK_RUNS  # the broken task runs its agent
    # -- items: one per verifier test, plus the reward and the audit ------------------------
    base = "evals/tasks/sales-report::sonnet"
    for test in (*VERIFIER_TESTS, "reward"):
        assert f"PASSED {base}::with-skill::r1::{test}" in out, out
        assert f"UNMET {base}::no-skill::r1::{test}" in out, out
    assert f"PASSED {base}::with-skill::r1::invoked" in out
    assert "unmet" in result.parseoutcomes() and "failed" not in result.parseoutcomes()
    # -- the broken verifier: excluded and named, never a zero -------------------------------
    broken = week / "broken-verifier-sonnet-no-skill-r1-week" / "run.json"
    record = load(broken)
    assert record["run_status"] == "verifier_error" and record["reward"] == ""
    assert "wrote no reward" in record["run_error"] and "exited 3" in record["run_error"]
    assert "verifier crashed before scoring" in (broken.parent / "verifier" / "output.txt"
                                                ).read_text()
    worker = week / "broken-verifier-sonnet-with-skill-r1-week"
    assert load(worker / "run.json")["skill_available"] == 1  # found in the user's own HOME
    info = load(worker / "task.json")
    assert (info["user"], info["home"], info["workdir"]) == ("worker", "/home/worker",
                                                             "/home/worker/app")
    # -- the numbers: both headlines, the reward lift exactly what the script implies --------
    card = load(week / "scorecard.json")
    rewards = card["rewards"]["models"]["sonnet"]
    assert (rewards["reward_no"], rewards["reward_with"], rewards["reward_lift"]) == (0, 1, 1)
    assert rewards["n_tasks"] == 1 and rewards["helped"] == 1
    assert {e["run_id"] for e in card["rewards"]["verifier_errors"]} == {
        "broken-verifier-sonnet-no-skill-r1-week", "broken-verifier-sonnet-with-skill-r1-week"}
    assert card["models"]["sonnet"]["n_prompts"] == 1  # must coverage: the prompt only
    # -- artefacts and proof that the no-skill container had no skill -----------------------
    with_dir = week / "sales-report-sonnet-with-skill-r1-week"
    no_dir = week / "sales-report-sonnet-no-skill-r1-week"
    assert load(with_dir / "artifacts" / "report.json")["total"] == 1670.35
    assert (no_dir / "artifacts" / "ATTEMPT.md").is_file()
    assert not (no_dir / "artifacts" / "report.json").exists()
    assert (with_dir / "verifier" / "reward.txt").read_text().strip() == "1"
    no_record, with_record = load(no_dir / "run.json"), load(with_dir / "run.json")
    assert no_record["task_skills_listed"] == [] and no_record["skill_available"] == 0
    assert with_record["skill_available"] == 1 and with_record["invocation_status"] == "VERIFIED"
    assert "Write" in with_record["task_tools"] and no_record["task_tools"] == \
        with_record["task_tools"]
    # the task allow-list is a measurement parameter of the week, as the allow-list is
    identity = load(week / "week.json")["identity"]
    assert identity["task_tools"] == with_record["task_tools"]
    assert set(identity["task_tools"]) == {*identity["allowed_tools"], "Write", "Edit",
                                           "MultiEdit", "NotebookEdit"}
    info = load(with_dir / "task.json")
    assert info["workdir"] == "/app" and info["user"] == "root"
    assert info["artifacts"]["files"] == [{"path": "report.json", "bytes": info["artifacts"][
        "files"][0]["bytes"]}]
    # no secret reached any file of the week
    from .test_plugin_e2e import SECRET, all_text

    assert SECRET not in all_text(week)

    # -- a second week under -n 2: no image built, each run generated once -----------------
    before = task_sessions_started(task_standin)
    second = run(pytester, task_standin, "-n", "2", "--skill-lift-docker-network=host",
                 "--skill-lift-out=week2", timeout=900)
    assert "unmet" in second.parseoutcomes()
    assert task_sessions_started(task_standin) - before == TASK_RUNS
    week2 = root / "week2"
    built = [load(p)["image_built_now"] for p in week2.glob("*/task.json")]
    assert built == [False] * TASK_RUNS
    # -- resuming it generates nothing --------------------------------------------------------
    before = task_sessions_started(task_standin)
    run(pytester, task_standin, "-n", "2", "--skill-lift-docker-network=host",
        "--skill-lift-out=week2", timeout=600)
    assert task_sessions_started(task_standin) == before
