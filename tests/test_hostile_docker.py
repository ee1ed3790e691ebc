"""Hostile cases for the docker runner: a SIGKILLed session, late containers, odd prompts.

Needs the Docker engine and the offline test image (as ``test_docker_runner``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

docker = pytest.importorskip("docker", reason="the docker SDK is not installed")

from pytest_skilllift.runners.docker import (  # noqa: E402
    LABEL_DEADLINE,
    LABEL_OWNER,
    LABEL_RUN_ID,
    LABEL_WEEK,
    DockerRunner,
    container_name,
)
from pytest_skilllift.runners.sweep import SweepLog  # noqa: E402
from pytest_skilllift.testing import Reply, StandIn  # noqa: E402
from pytest_skilllift.testing.agent_script import user_prompt  # noqa: E402

from .test_plugin_e2e import PROMPTS, make_project, run  # noqa: E402
from .test_runners_docker import (  # noqa: E402
    API_KEY,
    _cfg,
    _dead_pid,
    _family,
    _good_skill,
    _spec,
    _tool_result_text,
    client,
    no_container_left,
    runner,
    test_image,
)

pytestmark = [pytest.mark.docker, pytest.mark.cli]
#: The killed session's week: its own label, so no other test's "week" filter sees it.
WEEK = "week-killed"
__all__ = ["client", "no_container_left", "runner", "test_image"]  # fixtures, re-used


def _stale_container(client: Any, image: str, week: str) -> tuple[str, str]:
    """A container as a dying session leaves it: labelled, its owner pid gone."""
    name = container_name(f"late-{week}")
    cid = client.api.create_container(
        image, command=["sleep", "300"], name=name,
        labels={LABEL_RUN_ID: f"late-{week}", LABEL_WEEK: week,
                LABEL_OWNER: f"{socket.gethostname()}:{_dead_pid()}",
                LABEL_DEADLINE: str(int(time.time()) + 600)})["Id"]
    return cid, name


def test_a_container_appearing_after_the_start_up_sweep_goes_at_the_end(
        client: Any, test_image: str) -> None:
    """A session being killed while creating a container: the engine finishes the create
    after the next session's start-up sweep. That session's end sweeps it and names it."""
    log = SweepLog()
    log.sweep("start-up")
    cid, name = _stale_container(client, test_image, "late")  # after the start-up sweep
    try:
        log.sweep("end-of-session")
        assert not client.containers.list(all=True, filters={"id": cid}, ignore_removed=True)
        (line,) = [ln for ln in log.lines() if name in ln]
        assert line.startswith("docker: end-of-session sweep removed ")
        assert "stale container(s) of a killed session: " in line
        # Each runner (one per -n worker) sweeps again when it closes, too.
        r = DockerRunner(test_image, network="host", client=client, week="late")
        cid2, name2 = _stale_container(client, test_image, "late2")
        r.close()
        assert name2 in r.swept_names and r.swept == len(r.swept_names)
        assert not client.containers.list(all=True, filters={"id": cid2}, ignore_removed=True)
    finally:
        for c in client.containers.list(all=True, filters={"label": LABEL_RUN_ID},
                                        ignore_removed=True):  # other tests' may go meanwhile
            if c.name.startswith("skilllift-late"):
                c.remove(force=True)


def test_odd_prompts_and_linked_skill_files_reach_the_container(
        runner: DockerRunner, tmp_path: Path) -> None:
    """The prompt on stdin (a leading ``--``, over 128 KiB) and a family whose file is a
    link inside the family, which must resolve inside the container."""
    skills = tmp_path / "skills"
    fam = _family(skills, "linked", _good_skill("linked"))
    (fam / "alias.md").symlink_to("reference.md")
    prompt = "--help " + "y" * (140 * 1024) + " end"

    def agent(body: dict[str, Any]) -> Reply:
        seen = _tool_result_text(body)
        if seen is None:
            return Reply.tool("Bash", {"command": "readlink ~/.claude/skills/linked/alias.md; "
                                       "cat ~/.claude/skills/linked/alias.md; ls -a ~",
                                       "description": "probe"})
        return Reply.text(f"Final answer. {seen.strip()}")

    with StandIn(agent=agent, api_key=API_KEY) as api:
        out = runner.run(_spec("linked", "with-skill", prompt), _cfg(skills, api.base_url),
                         tmp_path / "run")
        sent = {user_prompt(body) for body in api.bodies("agent")}
    assert out.exit_code == 0 and out.error is None, out
    assert prompt in sent
    result = (tmp_path / "run" / "stdout.txt").read_text()
    assert "reference.md\\nMore detail for the skill." in result  # link kept, resolved inside
    assert ".skilllift-prompt" not in result  # the prompt file is gone before the CLI starts

    (fam / "leak.md").symlink_to("/etc/hostname")
    refused = runner.run(_spec("linked", "with-skill"), _cfg(skills, "http://127.0.0.1:9"),
                         tmp_path / "refused")
    assert refused.invalid_install and refused.exit_code is None
    assert "symlink linked/leak.md -> /etc/hostname leaves the skill family" in (
        refused.error or "")


def _exec_running(client: Any, container_id: str) -> bool:
    info = client.api.inspect_container(container_id)
    return any(client.api.exec_inspect(e).get("Running") for e in info.get("ExecIDs") or [])


def test_kill_9_of_pytest_bounds_the_agent_and_the_next_session_reports_the_sweep(
        pytester: pytest.Pytester, client: Any, test_image: str, standin: Any) -> None:
    root = make_project(pytester, PROMPTS[:1])
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test-killed", "PYTHONPATH": str(
        Path(__file__).resolve().parents[1])}
    timeout_s = 6
    with StandIn(agent=lambda body: Reply.text("too late"), latency_s=300) as slow:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "--skill-lift", "-p", "no:xdist", "-p",
             "no:cacheprovider", "--skill-lift-runner=docker",
             f"--skill-lift-image={test_image}", "--skill-lift-docker-network=host",
             f"--skill-lift-timeout={timeout_s}", f"--skill-lift-out={WEEK}"],
            cwd=root, env={**env, "ANTHROPIC_BASE_URL": slow.base_url},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            container = None
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and container is None:
                for c in client.containers.list(filters={"label": f"{LABEL_WEEK}={WEEK}"},
                                                ignore_removed=True):
                    if c.labels.get(LABEL_OWNER, "").endswith(f":{proc.pid}") and \
                            _exec_running(client, c.id):
                        container = c
                time.sleep(0.2)
            assert container is not None, "the session never started the agent"
            os.killpg(proc.pid, signal.SIGKILL)
            # Not reaped yet: as a zombie its pid still looks alive, so no other session's
            # sweep (a sibling -n worker, a concurrent test run) removes the container
            # before its own deadline is checked here.
            killed = time.monotonic()
            # Nobody is left to stop the agent: its own hard deadline must (the keeper
            # alone would let it run for timeout + 120 s).
            while _exec_running(client, container.id) and time.monotonic() - killed < 60:
                time.sleep(0.5)
            assert not _exec_running(client, container.id)
            assert time.monotonic() - killed < timeout_s + 30
            container.reload()
            assert container.status == "running"  # the keeper: left for the sweep
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)  # reaped: now the session is gone for every sweep

    # The next session, with a working API, resumes the week.
    result = run(pytester, standin, "-p", "no:xdist", f"--skill-lift-out={WEEK}",
                 "--skill-lift-runner=docker",
                 f"--skill-lift-image={test_image}", "--skill-lift-docker-network=host")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    # Under -n N a sibling worker's runner (or sweep test) sweeps every week: once the killed
    # session is reaped it may remove the container before this session starts. Which sweep
    # removed it is then a race (the exact check is serial-only, as in test_docker_runner's
    # sweep tests); that it is gone is not.
    if "PYTEST_XDIST_WORKER" not in os.environ:
        result.stdout.fnmatch_lines([f"docker: start-up sweep removed * stale container(s) of "
                                     f"a killed session: *{container.name}*"])
    assert not client.containers.list(all=True, filters={"id": container.id}, ignore_removed=True)
