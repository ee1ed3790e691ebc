"""The docker runner runs Codex CLI, Gemini CLI and OpenCode: a week in fresh containers.

Needs a Docker engine, the offline test image (``.ci/docker-setup.sh``) and the npm agent
CLIs on this machine (``bash .ci/run``): the module adds them to the test image with
``skilllift image add-agents`` once, then runs one label per agent, both arms, against the
stand-in on the host network.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

docker = pytest.importorskip("docker", reason="the docker SDK is not installed")

from pytest_skilllift.agents.registry import others  # noqa: E402
from pytest_skilllift.config import DEMO_PROJECT  # noqa: E402
from pytest_skilllift.runners.agent_image import (  # noqa: E402
    build_agents_image,
    image_agent_versions,
)
from pytest_skilllift.runners.agents import find_cli  # noqa: E402

BINARIES = [a.name for a in others()]
from pytest_skilllift.runners.image import TEST_IMAGE_TAG  # noqa: E402
from pytest_skilllift.testing.agent_script import make_agent  # noqa: E402
from pytest_skilllift.testing.judge_script import keyword_judge  # noqa: E402
from pytest_skilllift.testing.server import StandIn  # noqa: E402

from .docker_env import docker_problem  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.cli, pytest.mark.slow]

_PROBLEM = docker_problem()
if _PROBLEM:
    pytest.skip(_PROBLEM, allow_module_level=True)
if not all(find_cli(a) for a in BINARIES) or shutil.which("rg") is None:
    pytest.skip("the npm agent CLIs (and ripgrep) are not installed; bash .ci/run installs "
                "them", allow_module_level=True)

AGENTS_IMAGE = "skilllift-agents-test:local"
KEY = "sk-docker-agents-SECRET-n0t-0n-d15k"
LABELS = {"gpt": ("codex:gpt-5.5", "file_read"),
          "gem": ("gemini-cli:gemini-2.5-flash", "skill_tool"),
          "oc": ("opencode:anthropic/claude-sonnet-4-5", "skill_tool")}


@pytest.fixture(scope="module")
def image() -> str:
    """The test image with this machine's agent CLIs added (built when missing)."""
    client = docker.from_env()
    try:
        try:
            labels = dict(client.images.get(AGENTS_IMAGE).labels or {})
        except docker.errors.ImageNotFound:
            labels = {}
        if set(image_agent_versions(labels)) != set(BINARIES):
            build_agents_image(client, TEST_IMAGE_TAG, AGENTS_IMAGE,
                               {a: str(find_cli(a)) for a in BINARIES}, log=lambda _: None)
    finally:
        client.close()
    return AGENTS_IMAGE


def test_a_docker_week_runs_every_agent(image: str, tmp_path: Path) -> None:
    shutil.copytree(DEMO_PROJECT / "skills", tmp_path / "skills")
    (tmp_path / "evals" / "test-prompts").mkdir(parents=True)
    shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / "git-bisect-regression.json",
                tmp_path / "evals" / "test-prompts")
    models = ",".join(f"{label}={model}" for label, (model, _) in LABELS.items())
    (tmp_path / "pytest.ini").write_text(f"[pytest]\nskill_lift_models = {models}\n"
                                         "skill_lift_reps = 1\nskill_lift_out = week\n")
    with StandIn(agent=make_agent("skill"), judge=keyword_judge) as api:
        env = dict(os.environ, ANTHROPIC_BASE_URL=api.base_url, ANTHROPIC_API_KEY=KEY,
                   OPENAI_BASE_URL=api.base_url + "/v1", OPENAI_API_KEY=KEY,
                   GOOGLE_GEMINI_BASE_URL=api.base_url, GEMINI_API_KEY=KEY)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--skill-lift", "-p", "no:cacheprovider", "-q",
             "-n", "2", "--skill-lift-runner=docker", f"--skill-lift-image={image}",
             "--skill-lift-docker-network=host"], cwd=tmp_path, env=env,
            capture_output=True, text=True, timeout=900)
        apis = {r.api for r in api.requests if r.kind == "agent"}
    assert apis == {"codex", "gemini-cli", "opencode"}, done.stdout[-3000:]
    with (tmp_path / "week" / "manifest.csv").open(newline="") as fh:
        manifest = {(r["model"], r["condition"]): r for r in csv.DictReader(fh)}
    assert len(manifest) == 6, done.stdout[-3000:]
    for label, (_, activation) in LABELS.items():
        with_skill, no_skill = manifest[(label, "with-skill")], manifest[(label, "no-skill")]
        assert with_skill["runner"] == "docker"
        assert with_skill["run_status"] == no_skill["run_status"] == "ok", (
            label, with_skill["run_error"], no_skill["run_error"])
        assert (with_skill["skill_available"], with_skill["skill_activation"]) == (
            "1", activation), label
        assert with_skill["invocation_status"] == "VERIFIED"
        assert (no_skill["skill_available"], no_skill["skill_activation"]) == ("0", "none")
        assert with_skill["cli_version"]
    identity = json.loads((tmp_path / "week" / "week.json").read_text())["identity"]
    assert set(identity["agent_clis"]) == set(BINARIES) and all(identity["agent_clis"].values())
    for path in (tmp_path / "week").rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path
