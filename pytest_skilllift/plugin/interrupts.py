"""Interrupts: Ctrl-C, SIGTERM and SIGHUP stop every agent CLI of the session.

pytest turns SIGINT into ``KeyboardInterrupt``; SIGTERM (a CI job cancelled, ``timeout``,
``kill``) and SIGHUP (the terminal closed) would end the process on the spot, leaving each
agent CLI running with parent PID 1 (it has its own process group) and its temporary HOME on
disk. So every process of a session — the controller and each xdist worker — turns those two
into ``KeyboardInterrupt`` as well, once: the runner in flight stops its CLI's process group
(or container), and :func:`pytest_keyboard_interrupt` stops the rest of the session's, those
of the other processes included (``runners.inflight``), and tells them to start no new run.
The controller says at the end what was stopped; pytest exits with its interrupted status.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from types import FrameType
from typing import Any

import pytest

from pytest_skilllift.plugin.session import SkillLiftSession
from pytest_skilllift.runners.inflight import stopped_line

#: Signals turned into KeyboardInterrupt (SIGINT already is, by Python).
SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None))
                if s is not None)


class InterruptPlugin:
    """Registered in every process of a skill-lift session."""

    def __init__(self, state: SkillLiftSession, *, controller: bool) -> None:
        self.state = state
        self.controller = controller
        self._old: dict[int, Any] = {}
        self._raised = False

    def install(self) -> None:
        """Turn SIGTERM/SIGHUP into KeyboardInterrupt (main thread only: Python's rule)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in SIGNALS:
            with contextlib.suppress(ValueError, OSError):
                self._old[sig] = signal.signal(sig, self._handle)

    def uninstall(self) -> None:
        """Put back the signal handlers that were installed before."""
        for sig, old in self._old.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, old)
        self._old.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        # Once: a second signal must not break the clean-up the first one started.
        if self._raised:
            return
        self._raised = True
        raise KeyboardInterrupt(f"{signal.Signals(signum).name} received")

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Stop the session's agents now (this process's and the others')."""
        self.state.inflight.stop_all()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Controller, after xdist shut its workers down: stop what a worker killed without
        its clean-up left running, and count what the interrupt stopped."""
        if not self.controller:
            return
        if exitstatus == pytest.ExitCode.INTERRUPTED or self.state.inflight.stopping:
            self.state.inflight.stop_all()
            self.state.stopped_runs = self.state.inflight.stopped_runs()

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The controller's line about the runs an interrupt stopped, when there were any."""
        if self.controller and self.state.stopped_runs is not None:
            terminalreporter.write_line(stopped_line(self.state.stopped_runs))

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Put the signal handlers back; the controller removes its registry of runs in flight."""
        self.uninstall()
        if self.controller:
            self.state.inflight.remove()


def register(config: pytest.Config, state: SkillLiftSession, *, controller: bool) -> None:
    """Install the handlers and the hooks for this process."""
    plugin = InterruptPlugin(state, controller=controller)
    plugin.install()
    config.pluginmanager.register(plugin, "skilllift-interrupts")
