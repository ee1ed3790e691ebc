"""The docker runner's with-all arm: every family of the skills root in the container, nothing
else. Needs a Docker engine and the offline test image (``skilllift-test:local``, built by
``tests/test_runners_docker.py`` or ``.ci/run``)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

docker = pytest.importorskip("docker", reason="the docker SDK is not installed")

from pytest_skilllift.model import AgentConfig, PromptSpec, RunSpec  # noqa: E402
from pytest_skilllift.run.arms import arm_prompt  # noqa: E402
from pytest_skilllift.run.triggers import skill_families  # noqa: E402
from pytest_skilllift.runners.image import TEST_IMAGE_TAG  # noqa: E402
from pytest_skilllift.testing import Reply, StandIn  # noqa: E402
from pytest_skilllift.week.files import STDOUT_FILE  # noqa: E402

from .docker_env import docker_problem  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.cli]
API_KEY = "sk-ant-skilllift-test-" + uuid.uuid4().hex
LISTING = "SKILLS-DIR:"


_PROBLEM = docker_problem()
if _PROBLEM:
    pytest.skip(_PROBLEM, allow_module_level=True)


@pytest.fixture
def standin() -> Iterator[StandIn]:
    def agent(body: dict[str, Any]) -> Reply:
        if len(body["messages"]) == 1:
            return Reply.tool("Bash", {"command": f"echo {LISTING}; ls -1 ~/.claude/skills",
                                       "description": "list the installed skills"})
        return Reply.text("done")

    with StandIn(agent=agent, api_key=API_KEY) as api:
        yield api


def test_with_all_in_a_container_installs_every_family_and_nothing_else(
        standin: StandIn, tmp_path: Path) -> None:
    from pytest_skilllift.runners.docker import DockerRunner

    skills = tmp_path / "skills"
    for name in ("alpha-skill", "beta-skill", "gamma-skill"):
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: Use for {name} questions.\n---\n# {name}\n")
    (skills / "shared-notes").mkdir()  # no SKILL.md: not a family, never installed
    (skills / "shared-notes" / "notes.md").write_text("notes")
    prompt = PromptSpec(path=Path("t.json"), name="t", product_area="", prompt="look around",
                        rubric=(), skill_path="beta-skill/SKILL.md")
    cfg = AgentConfig(claude_path="claude", skills_root=skills, timeout_s=120,
                      env={"ANTHROPIC_BASE_URL": standin.base_url, "ANTHROPIC_API_KEY": API_KEY})
    runner = DockerRunner(TEST_IMAGE_TAG, network="host", week="test-week")
    listed: dict[str, list[str]] = {}
    try:
        for cond in ("with-skill", "with-all"):
            spec = RunSpec(prompt=arm_prompt(prompt, cond, skill_families(skills)),
                           model_label="haiku", model_id="claude-haiku-4-5", condition=cond,
                           rep=1, run_id=f"{cond}-" + uuid.uuid4().hex[:6])
            outcome = runner.run(spec, cfg, tmp_path / cond)
            assert outcome.error is None, outcome
            events = [json.loads(ln) for ln in
                      (tmp_path / cond / STDOUT_FILE).read_text().splitlines() if ln.strip()]
            results = [b for e in events if e.get("type") == "user"
                       for b in e["message"]["content"] if isinstance(b, dict)
                       and b.get("type") == "tool_result"]
            text = "\n".join(json.dumps(b.get("content")) for b in results)
            after = text.split(LISTING, 1)[1]  # the ls output, after the marker line
            listed[cond] = sorted(n for n in ("alpha-skill", "beta-skill", "gamma-skill",
                                              "shared-notes") if n in after)
    finally:
        runner.close()
    assert listed == {"with-skill": ["beta-skill"],
                      "with-all": ["alpha-skill", "beta-skill", "gamma-skill"]}
