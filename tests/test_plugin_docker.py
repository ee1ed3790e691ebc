"""``pytest --skill-lift --skill-lift-runner=docker``: the whole week through fresh containers.

Needs a Docker engine and the offline test image (``.ci/docker-setup.sh`` provides both);
without them the module is skipped with the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

docker = pytest.importorskip("docker", reason="the docker SDK is not installed")

from pytest_skilllift.runners.docker import LABEL_WEEK  # noqa: E402
from pytest_skilllift.runners.image import TEST_IMAGE_TAG  # noqa: E402

from .test_plugin_e2e import PROMPTS, SECRET, all_text, make_project, rows, run  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.cli]


def _problem() -> str | None:
    try:
        client = docker.from_env()
        client.ping()
        client.images.get(TEST_IMAGE_TAG)
        client.close()
    except Exception as exc:
        return (f"no Docker engine or no {TEST_IMAGE_TAG} image ({type(exc).__name__}); "
                "run .ci/docker-setup.sh")
    return None


_PROBLEM = _problem()
if _PROBLEM:
    pytest.skip(_PROBLEM, allow_module_level=True)


def test_week_in_fresh_containers(pytester: pytest.Pytester, standin: Any) -> None:
    root: Path = make_project(pytester, PROMPTS[:1])
    result = run(pytester, standin, "-p", "no:xdist", "--skill-lift-runner=docker",
                 f"--skill-lift-image={TEST_IMAGE_TAG}", "--skill-lift-docker-network=host")
    assert result.ret == 0, result.stdout.str()
    manifest = {r["condition"]: r for r in rows(root / "week" / "manifest.csv")}
    assert {r["runner"] for r in manifest.values()} == {"docker"}
    assert manifest["with-skill"]["skill_available"] == "1"
    assert manifest["with-skill"]["skill_activation"] == "skill_tool"
    assert manifest["no-skill"]["skill_available"] == "0"
    assert all(r["run_status"] == "ok" for r in manifest.values())
    assert standin.count("judge") == 2
    client = docker.from_env()
    left = client.containers.list(all=True, filters={"label": f"{LABEL_WEEK}=week"})
    client.close()
    assert left == []
    assert SECRET not in all_text(root)

