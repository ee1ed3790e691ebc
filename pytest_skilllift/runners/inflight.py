"""The agent CLIs a session has running, on disk, so any process of it can stop them all.

A session is the controller and, under xdist, its workers; each runs agents. When one of
them is interrupted (Ctrl-C, SIGTERM, SIGHUP) every agent of the session must stop — also
those of a worker that xdist kills without letting it clean up. So each run in flight is a
small JSON file in the session's directory (``<tmp>/skilllift-inflight-<session id>/``):
the run id, the CLI's process group (local runner) or container (docker runner) and the
run's temporary tree. :meth:`Inflight.stop_all` kills every group, removes every container
and temp tree listed there and marks the session as stopping, so no process of it starts
another run; the runner whose CLI was stopped raises :class:`RunInterrupted` instead of
reporting an outcome, so the interrupted run is recorded neither as finished nor as an
error and the next session generates it (once).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilllift.week.files import atomic_write_text

STOPPING_FILE = "STOPPING"
#: How long a process group gets between SIGTERM and SIGKILL when the session stops.
STOP_GRACE_S = 2.0


class RunInterrupted(KeyboardInterrupt):
    """The session is stopping: the run was stopped (or not started) and is not recorded."""


def _start_time(pid: int) -> str:
    """The process's start time in clock ticks (``/proc/<pid>/stat`` field 22), or ``""``:
    with it a recorded process group is only killed while it is still the same process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[-1].split()[19]


@dataclass(frozen=True)
class Entry:
    """One run in flight, as its file says."""

    path: Path
    run_id: str
    pgid: int | None
    started: str
    container: str | None
    temp: str | None
    stopped: bool


class Inflight:
    """The session's registry of runs in flight (shared by its processes through ``root``)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @classmethod
    def for_session(cls, session_id: str) -> Inflight:
        """The registry every process of session ``session_id`` shares on this machine."""
        return cls(Path(tempfile.gettempdir()) / f"skilllift-inflight-{session_id}")

    # -- a runner's side ----------------------------------------------------------------
    @property
    def stopping(self) -> bool:
        """Whether some process of the session was interrupted: start nothing new."""
        return (self.root / STOPPING_FILE).exists()

    def check_not_stopping(self) -> None:
        """Raise :class:`RunInterrupted` when the session is stopping."""
        if self.stopping:
            raise RunInterrupted("the session was interrupted; the run is not started")

    def add(self, run_id: str, *, pgid: int | None = None, container: str | None = None,
            temp: str | Path | None = None) -> Path:
        """Record a run in flight; returns its token for :meth:`done` / :meth:`stopped`."""
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / f"{uuid.uuid4().hex}.json"
        data = {"run_id": run_id, "pgid": pgid,
                "started": _start_time(pgid) if pgid else "", "container": container,
                "temp": str(temp) if temp else None, "stopped": False, "pid": os.getpid()}
        atomic_write_text(path, json.dumps(data))  # a reader never sees half an entry
        return path

    def done(self, token: Path) -> None:
        """The run ended on its own: forget it."""
        with contextlib.suppress(OSError):
            token.unlink()

    def mark_stopped(self, token: Path) -> None:
        """The run was stopped by an interrupt: keep it, marked, for the session's count."""
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(token.read_text())
            data["stopped"] = True
            atomic_write_text(token, json.dumps(data))

    # -- the session's side ---------------------------------------------------------------
    def entries(self) -> list[Entry]:
        """Every run recorded (in flight, or stopped by an interrupt)."""
        out = []
        for path in sorted(self.root.glob("*.json")) if self.root.is_dir() else ():
            with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
                d: dict[str, Any] = json.loads(path.read_text())
                out.append(Entry(path, str(d["run_id"]), d.get("pgid"), d.get("started", ""),
                                 d.get("container"), d.get("temp"), bool(d.get("stopped"))))
        return out

    def stop_all(self, grace_s: float = STOP_GRACE_S) -> list[str]:
        """Mark the session stopping, stop every run in flight; their run ids (sorted)."""
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / STOPPING_FILE).touch()
        live = [e for e in self.entries() if not e.stopped]
        groups = [e.pgid for e in live if e.pgid and _same_process(e.pgid, e.started)]
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGTERM)
        containers = [e.container for e in live if e.container]
        if containers:
            _remove_containers(containers)
        deadline = time.monotonic() + grace_s
        while groups and time.monotonic() < deadline:
            groups = [g for g in groups if _group_alive(g)]
            time.sleep(0.05)
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
        for entry in live:
            if entry.temp:
                shutil.rmtree(entry.temp, ignore_errors=True)
            self.mark_stopped(entry.path)
        return sorted({e.run_id for e in live})

    def stopped_runs(self) -> list[str]:
        """Run ids stopped by an interrupt, by any process of the session (sorted)."""
        return sorted({e.run_id for e in self.entries() if e.stopped})

    def remove(self) -> None:
        """Forget the registry (the session is over)."""
        shutil.rmtree(self.root, ignore_errors=True)


def _same_process(pgid: int, started: str) -> bool:
    """Whether the group's leader is still the process recorded (no pid reuse)."""
    now = _start_time(pgid)
    return not started or not now or now == started


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_containers(names: list[str]) -> None:
    """Force-remove the docker runner's containers (the docker SDK, loaded only here)."""
    with contextlib.suppress(Exception):
        import docker.client

        client = docker.client.from_env()
        try:
            for name in names:
                with contextlib.suppress(Exception):
                    client.api.remove_container(name, force=True, v=True)
        finally:
            client.close()


_PROCESS: Inflight | None = None


def process_inflight() -> Inflight:
    """The registry of a ``skilllift`` command's own agent runs (one per process)."""
    global _PROCESS
    if _PROCESS is None:
        _PROCESS = Inflight.for_session(f"cli-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    return _PROCESS


def stopped_line(runs: list[str]) -> str:
    """What an interrupted session says it stopped (controller, after the workers): the
    runs :meth:`Inflight.stop_all` stopped, which the next session retries."""
    if not runs:
        return "interrupted: no run was in flight; the week resumes where it stopped"
    return (f"interrupted: {len(runs)} run{'s' * (len(runs) != 1)} in flight "
            f"{'were' if len(runs) != 1 else 'was'} stopped and will be retried: "
            + ", ".join(runs))
