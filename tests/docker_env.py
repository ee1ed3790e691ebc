"""The docker tests' shared ground: whether they can run here (one check for every module that
needs the engine), the demo tasks' base image and the stand-in the task tests drive."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_skilllift.runners.image import TEST_IMAGE_TAG
from pytest_skilllift.testing.server import StandIn


def docker_problem() -> str | None:
    """Why the docker tests cannot run here (no SDK, no engine, no test image), or None."""
    try:
        import docker.client

        client = docker.client.from_env()
        try:
            client.ping()
            client.images.get(TEST_IMAGE_TAG)
        finally:
            client.close()
    except Exception as exc:
        return (f"needs a Docker engine and the image {TEST_IMAGE_TAG} "
                f"({type(exc).__name__}: {exc}); run .ci/docker-setup.sh")
    return None


def ensure_task_base(client: Any) -> None:
    """The demo tasks' base image (from this machine's Debian packages; no registry), built
    when missing — once on this machine: under ``-n N`` (and other sessions on the same
    engine) the task images' build lock makes a second asker wait, then find it built,
    instead of importing the same tag twice at once."""
    import docker.errors

    from pytest_skilllift.runners.task_base import TASK_BASE_TAG, build_task_base
    from pytest_skilllift.runners.task_image import _build_lock

    with _build_lock(TASK_BASE_TAG):
        try:
            client.images.get(TASK_BASE_TAG)
        except docker.errors.ImageNotFound:
            build_task_base(client, log=lambda line: None)


@pytest.fixture(scope="module", autouse=True)
def task_base() -> None:
    """Every test of a module that imports this fixture has the demo tasks' base image."""
    import docker.client

    client = docker.client.from_env()
    try:
        ensure_task_base(client)
    finally:
        client.close()


@pytest.fixture
def task_standin() -> Iterator[StandIn]:
    """A fresh stand-in whose agent does the demo tasks' work (``testing/task_script.py``)
    and answers prompts as the skill-aware agent; the keyword judge."""
    from pytest_skilllift.testing.agent_script import skill_agent
    from pytest_skilllift.testing.judge_script import keyword_judge
    from pytest_skilllift.testing.task_script import task_agent

    server = StandIn(agent=task_agent(skill_agent), judge=keyword_judge)
    server.start()
    yield server
    server.stop()
