"""Harbor tasks for Codex CLI, Gemini CLI and OpenCode: each CLI layered into the task's image
offline (``runners/task_cli.py``), driven by the stand-in's working agent through its own
tools (``testing/task_script.py`` via ``testing/dialects.py``).

The demo's ``sales-report`` task, one label per agent: with-skill, the CLI lists the task's
skill in its own skill root, delivers its body, and its shell tool runs the skill's bash
blocks: one writes the report the verifier (pytest, inside the container) checks — reward 1
— and one more, added here, records that the command inherited no ``LD_LIBRARY_PATH`` from
the CLI (the layer's libraries are found through the binary's own RPATH);
no-skill, its listing command lists nothing (the container is skill-free) and its write tool
makes the generic attempt — reward 0. The reward lift is exactly 1 for every agent.

Needs a Docker engine and the npm agent CLIs on this machine (``bash .ci/run``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

docker = pytest.importorskip("docker", reason="the docker SDK is not installed")

from pytest_skilllift.agents.registry import others  # noqa: E402
from pytest_skilllift.config import DEMO_TASKS  # noqa: E402
from pytest_skilllift.runners.agents import find_cli  # noqa: E402
from pytest_skilllift.trace.agent_streams import listed_skills  # noqa: E402

from .docker_env import docker_problem, task_base, task_standin  # noqa: E402, F401
from .test_plugin_e2e import SECRET, all_text, run  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.cli, pytest.mark.slow]

_PROBLEM = docker_problem()
if _PROBLEM:
    pytest.skip(_PROBLEM, allow_module_level=True)

#: label → (model spec, the agent's name): one per npm agent.
LABELS = {"codex": ("gpt", "codex:gpt-5.5"),
          "gemini-cli": ("gem", "gemini-cli:gemini-2.5-flash"),
          "opencode": ("oc", "opencode:anthropic/claude-sonnet-4-5")}
VERIFIER_TESTS = ("test_outputs.py::test_report_exists", "test_outputs.py::test_report_has_total",
                  "test_outputs.py::test_totals_per_region")


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("agent", [a.name for a in others()])
def test_a_task_week_for_each_agent_in_docker(pytester: pytest.Pytester, task_standin: Any,  # noqa: F811
                                              agent: str) -> None:
    if find_cli(agent) is None:
        pytest.skip(f"the {agent} CLI is not installed (bash .ci/run installs it)")
    label, model = LABELS[agent]
    root = pytester.path
    shutil.copytree(DEMO_TASKS / "sales-report", root / "evals" / "tasks" / "sales-report")
    # One more step of the skill, run by the agent's own shell tool: what library path the
    # agent's commands inherit from its CLI (none: the CLI's libraries are its own).
    skill = (root / "evals" / "tasks" / "sales-report" / "environment" / "skills"
             / "csv-report" / "SKILL.md")
    skill.write_text(skill.read_text() + "\n```bash\necho \"LD_LIBRARY_PATH="
                     "${LD_LIBRARY_PATH-unset}\" > /app/agent_env.txt\n```\n")
    (root / "skills").mkdir()
    pytester.makeini(f"[pytest]\nskill_lift_models = {label}={model}\n"
                     "skill_lift_reps = 1\nskill_lift_out = week\n")
    base = task_standin.base_url
    result = run(pytester, task_standin, "-p", "no:xdist", "--skill-lift-docker-network=host",
                 "-rA", timeout=900, env_extra={
                     "OPENAI_BASE_URL": base + "/v1", "OPENAI_API_KEY": SECRET,
                     "GOOGLE_GEMINI_BASE_URL": base, "GEMINI_API_KEY": SECRET})
    out = result.stdout.str()
    week = root / "week"
    # The agent's own API carried the work (not Claude Code's).
    assert {r.api for r in task_standin.requests if r.kind == "agent"} == {agent}, out[-3000:]
    # -- items: every verifier test passes with the skill, none without --------------------
    node = f"evals/tasks/sales-report::{label}"
    for test in (*VERIFIER_TESTS, "reward"):
        assert f"PASSED {node}::with-skill::r1::{test}" in out, out[-4000:]
        assert f"UNMET {node}::no-skill::r1::{test}" in out, out[-4000:]
    assert f"PASSED {node}::with-skill::r1::invoked" in out, out[-4000:]
    # -- the numbers: the reward lift exactly what the script implies ------------------------
    rewards = load(week / "scorecard.json")["rewards"]["models"][label]
    assert (rewards["reward_no"], rewards["reward_with"], rewards["reward_lift"]) == (0, 1, 1)
    # -- the runs: each CLI's own tools did the work ------------------------------------------
    with_dir = week / f"sales-report-{label}-with-skill-r1-week"
    no_dir = week / f"sales-report-{label}-no-skill-r1-week"
    with_record, no_record = load(with_dir / "run.json"), load(no_dir / "run.json")
    assert with_record["run_status"] == no_record["run_status"] == "ok", (
        with_record["run_error"], no_record["run_error"])
    assert load(with_dir / "artifacts" / "report.json")["total"] == 1670.35
    # the CLI started, and the command it ran saw none of the CLI's libraries
    assert (with_dir / "artifacts" / "agent_env.txt").read_text().strip() == \
        "LD_LIBRARY_PATH=unset"
    assert (no_dir / "artifacts" / "ATTEMPT.md").is_file()
    assert not (no_dir / "artifacts" / "report.json").exists()
    # The no-skill container is skill-free: its CLI's own listing ran and listed nothing
    # but the CLI's bundled skills (OpenCode's, denied in both arms).
    defn = next(a for a in others() if a.name == agent)

    def listed(run_dir: Path) -> set[str] | None:
        names = listed_skills(agent, (run_dir / "agent_skills.txt").read_text("utf-8"))
        return None if names is None else set(names) - set(defn.builtin_skills)

    assert listed(no_dir) == set()
    assert no_record["task_skills_listed"] == [] and no_record["skill_available"] == 0
    assert listed(with_dir) == {"csv-report"}
    assert with_record["skill_available"] == 1
    assert with_record["invocation_status"] == "VERIFIED"
    assert with_record["cli_version"]
    # The write and shell tools: the agent's own, recorded alike in both arms.
    assert with_record["task_tools"] == no_record["task_tools"] == list(defn.task_tools)
    info = load(with_dir / "task.json")
    assert info["agent"] == agent and info["cli"].startswith("/opt/skilllift/bin/")
    assert f"-{agent}-" in info["image"]
    assert SECRET not in all_text(week)
