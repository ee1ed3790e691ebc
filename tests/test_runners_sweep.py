"""The session's container sweeps survive an engine that fails mid-call.

A sweep is clean-up: whatever the engine does, it is reported as a line and never ends the
session with a traceback. docker-py wraps HTTP errors in its own exceptions but lets its
transport's through (requests' ConnectionError when the engine drops a connection), so the
engine here is a real HTTP server on loopback that answers the version handshake and then
drops the connection of every other call.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("docker", reason="the docker SDK is not installed")
requests = pytest.importorskip("requests")

from pytest_skilllift.runners.docker import DockerRunner, _remove  # noqa: E402
from pytest_skilllift.runners.sweep import SweepLog  # noqa: E402


class _DroppingEngine(BaseHTTPRequestHandler):
    """Answers ``/version`` (docker-py's handshake); drops every other connection."""

    def do_GET(self) -> None:
        if self.path.endswith("/version"):
            body = json.dumps({"ApiVersion": "1.41", "Version": "20.10.24"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.connection.shutdown(socket.SHUT_RDWR)
        self.connection.close()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def dropping_engine(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DroppingEngine)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host = f"tcp://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("DOCKER_HOST", host)
    monkeypatch.delenv("DOCKER_TLS_VERIFY", raising=False)
    yield host
    server.shutdown()
    server.server_close()


def test_a_dropped_connection_is_a_line_not_a_crash(dropping_engine: str) -> None:
    log = SweepLog()
    assert log.sweep("end-of-session") == []  # raised requests' ConnectionError before
    assert log.ran
    (line,) = log.lines()
    assert line.startswith("docker: end-of-session sweep not done: the engine did not answer (")
    assert "Connection aborted" in line


def test_an_engine_that_is_not_there_is_a_line_too(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("DOCKER_HOST", f"tcp://127.0.0.1:{port}")
    log = SweepLog()
    assert log.sweep("start-up") == []
    (line,) = log.lines()
    assert line.startswith("docker: start-up sweep not done: the engine did not answer (")


# -- a busy engine: requests' ReadTimeout, through a runner's close and a container's removal --


class _BusyApi:
    """The low-level client of an engine that times out ``fails`` times, then answers."""

    def __init__(self, fails: int) -> None:
        self.fails = fails
        self.removed: list[str] = []

    def remove_container(self, container_id: str, **_: Any) -> None:
        if self.fails:
            self.fails -= 1
            raise requests.exceptions.ReadTimeout("Read timed out. (read timeout=60)")
        self.removed.append(container_id)

    def containers(self, **_: Any) -> list[dict[str, Any]]:
        raise requests.exceptions.ReadTimeout("Read timed out. (read timeout=60)")


class _BusyClient:
    def __init__(self, fails: int) -> None:
        self.api = _BusyApi(fails)

    def close(self) -> None:
        pass


def test_a_runner_closing_on_a_busy_engine_does_not_raise() -> None:
    runner = DockerRunner.__new__(DockerRunner)  # no engine: only what close() reads
    runner._lock = threading.Lock()
    runner._active = {}
    runner.client = _BusyClient(fails=0)
    runner.swept_names, runner.swept = [], 0
    runner._own_client = True
    runner.close()  # raised ReadTimeout before the fix
    assert (runner.swept_names, runner.swept) == ([], 0)


def test_removing_a_container_retries_a_timeout_then_reports_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's clean-up (and a runner's close after Ctrl-C) removes its container through
    ``_remove``: a ReadTimeout there escaped the run's ``finally`` before."""
    # The retries' pauses skipped (the module's clock kept: the deadline is real).
    monkeypatch.setattr("pytest_skilllift.runners.docker.time",
                        types.SimpleNamespace(monotonic=time.monotonic, sleep=lambda s: None))
    client = _BusyClient(fails=2)
    assert _remove(client, "c1") is True  # the third attempt answered
    assert client.api.removed == ["c1"]
    never = _BusyClient(fails=10**6)
    assert _remove(never, "c2", wait_s=0.05) is False  # given up, said, never raised
    assert never.api.removed == []
