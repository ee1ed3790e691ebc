"""The verifier runs alone: nothing the agent left running sees ``/tests`` or touches the reward.

Harbor copies ``tests/`` to ``/tests`` only after the agent has finished, so the agent never
sees it. A scripted agent here (the real Claude Code CLI, driven by the stand-in, in the task's
container) uses its ``Bash`` tool to leave, before it answers:

- a process that copies ``/tests/*`` into ``/app/peek.txt`` every 50 ms;
- a process that writes ``1`` into ``/logs/verifier/reward.txt`` every 50 ms;
- a planted ``/tests/planted.txt`` and ``/logs/verifier/planted.json``.

The task's verifier writes reward 0, waits 1.5 s (what such a process would do, it does now),
then prints what ``/app/peek.txt`` holds and what ``/tests`` lists. Without the stop before the
verifier the peek holds the tests' secret and the reward read is the forged 1; with it the
reward is what ``test.sh`` wrote (0), nothing was peeked, nothing planted survives, and
``task.json`` counts the processes killed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

docker = pytest.importorskip("docker", reason="the docker SDK is not installed")

from .docker_env import docker_problem, task_base  # noqa: E402, F401
from .test_e2e_tasks_docker import load  # noqa: E402
from .test_plugin_e2e import run  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.cli]

_PROBLEM = docker_problem()
if _PROBLEM:
    pytest.skip(_PROBLEM, allow_module_level=True)

SECRET = "VERIFIER-SECRET-4711"
INSTRUCTION = "Write the word done into /app/answer.txt."
#: What the agent leaves behind (setsid: its own session, so the CLI's exit does not end it).
LEAVE_BEHIND = (
    "mkdir -p /tests /logs/verifier && echo planted > /tests/planted.txt && "
    "echo '{\"reward\": 1}' > /logs/verifier/planted.json && "
    "setsid sh -c 'while sleep 0.05; do cat /tests/* > /app/peek.txt 2>/dev/null; done' "
    ">/dev/null 2>&1 </dev/null & "
    "setsid sh -c 'while sleep 0.05; do mkdir -p /logs/verifier; "
    "echo 1 > /logs/verifier/reward.txt; done' >/dev/null 2>&1 </dev/null & "
    "echo done > /app/answer.txt")
TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
sleep 1.5
echo "peek: $(cat /app/peek.txt 2>/dev/null)"
echo "tests: $(ls /tests | tr '\\n' ' ')"
"""


@pytest.fixture
def leaving_standin() -> Any:
    from pytest_skilllift.testing.agent_script import iter_blocks, skill_agent, user_prompt
    from pytest_skilllift.testing.judge_script import keyword_judge
    from pytest_skilllift.testing.replies import Reply
    from pytest_skilllift.testing.server import StandIn

    def agent(body: dict[str, Any]) -> Reply:
        if INSTRUCTION not in user_prompt(body):
            return skill_agent(body)
        if not any(b.get("type") == "tool_use" and b.get("name") == "Bash"
                   for b in iter_blocks(body, "assistant")):
            return Reply.tool("Bash", {"command": LEAVE_BEHIND,
                                       "description": "Write the answer"})
        return Reply.text("Done: /app/answer.txt holds the word.")

    server = StandIn(agent=agent, judge=keyword_judge)
    server.start()
    yield server
    server.stop()


def make_project(pytester: pytest.Pytester) -> Path:
    root = pytester.path
    task = root / "evals" / "tasks" / "leave-behind"
    (task / "environment" / "skills" / "answer-file").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "task.toml").write_text('version = "1.0"\n\n[verifier]\ntimeout_sec = 60.0\n\n'
                                    '[agent]\ntimeout_sec = 120.0\n')
    (task / "instruction.md").write_text(INSTRUCTION + "\n")
    (task / "environment" / "Dockerfile").write_text(
        "FROM skilllift-task-base:local\nWORKDIR /app\nCOPY skills /root/.claude/skills\n")
    (task / "environment" / "skills" / "answer-file" / "SKILL.md").write_text(
        "---\nname: answer-file\ndescription: Write a one-word answer into a file under "
        "/app.\n---\n\n# Answer files\n\nWrite the word, nothing else, into the file.\n")
    (task / "tests" / "test.sh").write_text(TEST_SH)
    (task / "tests" / "secret.txt").write_text(SECRET + "\n")
    pytester.makeini("[pytest]\nskill_lift_models = sonnet=claude-sonnet-4-5\n"
                     "skill_lift_reps = 1\nskill_lift_out = week\n")
    return root


def test_what_the_agent_left_running_never_sees_the_tests_or_forges_the_reward(
        pytester: pytest.Pytester, leaving_standin: Any) -> None:
    root = make_project(pytester)
    result = run(pytester, leaving_standin, "-p", "no:xdist",
                 "--skill-lift-docker-network=host", "-rA", timeout=900)
    runs = sorted((root / "week").glob("leave-behind-*/task.json"))
    assert len(runs) == 2, result.stdout.str()  # both arms
    forged: list[bool] = []
    peeked: list[bool] = []
    planted: list[bool] = []
    for task_json in runs:
        run_dir = task_json.parent
        info = load(task_json)
        assert "error" not in info, info
        # the agent did leave them: its Bash call ran in the container
        assert (run_dir / "artifacts" / "answer.txt").read_text().strip() == "done"
        output = (run_dir / "verifier" / "output.txt").read_text()
        forged.append((run_dir / "verifier" / "reward.txt").read_text().strip() != "0")
        peeked.append(SECRET in output)
        planted.append("tests: secret.txt test.sh" not in output)
    # all three checked in every run before any assert (the old code failed them all)
    assert (forged, peeked, planted) == ([False] * 2, [False] * 2, [False] * 2)
    for task_json in runs:
        run_dir, info = task_json.parent, load(task_json)
        assert not (run_dir / "verifier" / "planted.json").exists()
        assert info["verifier"]["logs"] == ["reward.txt"]
        record = json.loads((run_dir / "run.json").read_text())
        assert record["reward"] == 0 and record["verifier_error"] == "", record
        # both loops' shells at least (a sleep of theirs may have been running too)
        assert info["agent_processes_killed"] >= 2, info
