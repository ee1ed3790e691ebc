"""``pytest --skill-lift --skill-lift-runner=docker``: the whole week through fresh containers.

Needs a Docker engine and the offline test image (``.ci/docker-setup.sh`` provides both);
without them the module is skipped with the reason.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

import pytest

docker = pytest.importorskip("docker", reason="the docker SDK is not installed")

from pytest_skilllift.runners.docker import LABEL_WEEK  # noqa: E402
from pytest_skilllift.runners.image import TEST_IMAGE_TAG  # noqa: E402

from .docker_env import docker_problem  # noqa: E402
from .test_plugin_e2e import PROMPTS, SECRET, all_text, make_project, rows, run  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.cli]


_PROBLEM = docker_problem()
if _PROBLEM:
    pytest.skip(_PROBLEM, allow_module_level=True)


class TcpRelay:
    """DOCKER_HOST=tcp://127.0.0.1:PORT → the local engine's unix socket, so the runner is
    exercised against an engine it reaches over TCP, as with a remote DOCKER_HOST."""

    def __init__(self, target: str = "/var/run/docker.sock") -> None:
        self.target = target
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self) -> None:
        self.server.close()


@pytest.mark.parametrize("mode", ["serial", "xdist-2-tcp-docker-host"])
def test_week_in_fresh_containers(pytester: pytest.Pytester, standin: Any, mode: str) -> None:
    root: Path = make_project(pytester, PROMPTS[:1])
    relay = TcpRelay() if mode != "serial" else None
    # Both modes run at once under -n 2 on one engine: a week name of its own per mode keeps
    # the leftover-container check below about this test's containers only.
    week = f"week-{mode}"
    try:
        result = run(pytester, standin, f"--skill-lift-out={week}",
                     *(("-n", "2") if relay else ("-p", "no:xdist")),
                     "--skill-lift-runner=docker", f"--skill-lift-image={TEST_IMAGE_TAG}",
                     "--skill-lift-docker-network=host",
                     env_extra={"DOCKER_HOST": f"tcp://127.0.0.1:{relay.port}"} if relay else None)
    finally:
        if relay:
            relay.close()
    if relay:
        assert relay.connections > 0  # the workers really talked to the engine over TCP
    assert result.ret == 0, result.stdout.str()
    manifest = {r["condition"]: r for r in rows(root / week / "manifest.csv")}
    assert {r["runner"] for r in manifest.values()} == {"docker"}
    assert manifest["with-skill"]["skill_available"] == "1"
    assert manifest["with-skill"]["skill_activation"] == "skill_tool"
    assert manifest["no-skill"]["skill_available"] == "0"
    assert all(r["run_status"] == "ok" for r in manifest.values())
    assert standin.count("judge") == 2
    client = docker.from_env()
    left = client.containers.list(all=True, filters={"label": f"{LABEL_WEEK}={week}"},
                                  ignore_removed=True)
    client.close()
    assert left == []
    assert SECRET not in all_text(root)

