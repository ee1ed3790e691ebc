"""The docker runner installs sibling families and places input files like the local one.

Trigger tests with ``--skill-lift-triggers-all`` install every family in one run; skill-creator
evals carry input ``files`` for the working directory. Both must behave the same in a fresh
container as in a local temp HOME. Needs a Docker engine and the offline test image
(``skilllift-test:local``, built by ``tests/test_runners_docker.py`` or ``.ci/run``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

docker = pytest.importorskip("docker", reason="the docker SDK is not installed")

from pytest_skilllift.model import AgentConfig, PromptSpec, RunSpec  # noqa: E402
from pytest_skilllift.runners.image import TEST_IMAGE_TAG  # noqa: E402
from pytest_skilllift.testing import Reply, StandIn  # noqa: E402
from pytest_skilllift.week.files import STDOUT_FILE  # noqa: E402

from .docker_env import docker_problem  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.cli]
API_KEY = "sk-ant-skilllift-test-" + uuid.uuid4().hex
MARKER = "INPUT-FILE-" + uuid.uuid4().hex[:8]


_PROBLEM = docker_problem()
if _PROBLEM:
    pytest.skip(_PROBLEM, allow_module_level=True)


@pytest.fixture
def standin() -> Iterator[StandIn]:
    def agent(body: dict[str, Any]) -> Reply:
        if len(body["messages"]) == 1:
            return Reply.tool("Bash", {"command": "cat inputs/data.txt; ls ~/.claude/skills",
                                       "description": "look"})
        return Reply.text("done")

    with StandIn(agent=agent, api_key=API_KEY) as api:
        yield api


def test_siblings_and_files_in_a_container(standin: StandIn, tmp_path: Path) -> None:
    from pytest_skilllift.runners.docker import DockerRunner

    skills = tmp_path / "skills"
    for name in ("alpha-skill", "beta-skill"):
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Use for {name} questions.\n---\n# {name}\n")
    data = tmp_path / "data.txt"
    data.write_text(MARKER + "\n")
    prompt = PromptSpec(path=Path("t.json"), name="t", product_area="", prompt="look around",
                        rubric=(), skill_path="alpha-skill/SKILL.md",
                        files=(("inputs/data.txt", str(data)),),
                        sibling_families=("beta-skill",))
    spec = RunSpec(prompt=prompt, model_label="haiku", model_id="claude-haiku-4-5",
                   condition="with-skill", rep=1, run_id="extras-" + uuid.uuid4().hex[:6])
    cfg = AgentConfig(claude_path="claude", skills_root=skills, timeout_s=120,
                      env={"ANTHROPIC_BASE_URL": standin.base_url, "ANTHROPIC_API_KEY": API_KEY})
    runner = DockerRunner(TEST_IMAGE_TAG, network="host", week="test-week")
    try:
        outcome = runner.run(spec, cfg, tmp_path / "run")
    finally:
        runner.close()
    assert outcome.error is None, outcome
    events = [json.loads(ln) for ln in (tmp_path / "run" / STDOUT_FILE).read_text().splitlines()
              if ln.strip()]
    init = next(e for e in events if e.get("subtype") == "init")
    assert {"alpha-skill", "beta-skill"} <= set(init.get("skills") or [])
    results = json.dumps([e for e in events if e.get("type") == "user"])
    assert MARKER in results and "alpha-skill" in results and "beta-skill" in results
