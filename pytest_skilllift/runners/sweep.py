"""The session's own sweeps of stale docker containers, and what they removed.

Under ``--skill-lift-runner=docker`` the controller sweeps stale skilllift containers (those
of a SIGKILLed session: see :func:`~pytest_skilllift.runners.docker.sweep_stale_names`) when
the runs start, before any worker makes a container (not when only listing tests), and again
when the session ends, which catches a container a dying session was still creating when the
start-up sweep ran. Every sweep that removed something is reported with the count and the
container names; a sweep that could not reach the engine is reported too. No pytest here.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SweepLog:
    """What this session's sweeps removed, for the terminal summary."""

    removed: list[tuple[str, list[str]]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def ran(self) -> bool:
        """Whether any sweep was attempted (none for ``--collect-only``: no run started)."""
        return bool(self.removed or self.failures)

    def sweep(self, when: str) -> list[str]:
        """Remove stale containers now; ``when`` names the moment (``start-up``…)."""
        try:
            import docker.client

            from pytest_skilllift.runners.docker import ENGINE_ERRORS, sweep_stale_names
        except ImportError as exc:
            self.failures.append(f"docker: {when} sweep skipped: {exc}")
            return []
        try:
            client = docker.client.from_env()
            try:
                names = sweep_stale_names(client)
            finally:
                client.close()
        except ENGINE_ERRORS as exc:  # a dropped connection too: a sweep never ends a session
            self.failures.append(f"docker: {when} sweep not done: the engine did not answer "
                                 f"({exc})")
            return []
        self.removed.append((when, names))
        return names

    def lines(self) -> list[str]:
        """One line per sweep that removed something, then the failures."""
        out = [f"docker: {when} sweep removed {len(names)} stale container(s) of a killed "
               f"session: {', '.join(names)}" for when, names in self.removed if names]
        return out + self.failures
