"""The circuit breaker: once the API is plainly down, no further run is started.

After ``threshold`` consecutive runs of a session fail with the same infrastructure cause
(``RunOutcome.outage``: API unreachable, key refused, model not found), every run not yet
started is reported ``not run: <cause>`` (counted, like the spend cap's) instead of spending
its timeout on the same failure; the session's coverage then falls short (exit status 1) and
the next session runs them. The judge has its own breaker, fed with its errors' causes.

The outcomes are one line each in a file of the session's registry directory, appended
(``O_APPEND``: whole lines, never interleaved), so xdist workers share one count.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from pytest_skilllift.config import option_default
from pytest_skilllift.judge.client import KEY_REFUSED

#: The tally status of a run the breaker did not start.
NOT_RUN_OUTAGE = "not_run_outage"
#: ``--skill-lift-breaker``'s default, stated once in the option table.
DEFAULT_THRESHOLD: int = option_default("breaker")


class CircuitBreaker:
    """Consecutive infrastructure failures of one session (shared through ``path``)."""

    def __init__(self, path: Path, threshold: int = DEFAULT_THRESHOLD) -> None:
        self.path = Path(path)
        self.threshold = threshold

    def record(self, cause: str) -> None:
        """One finished run's (or judge call's) infrastructure cause; ``""`` when none."""
        if self.threshold <= 0 or (not cause and not self.path.exists()):
            return  # a clean session writes nothing (a streak starts with a cause)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = (" ".join(cause.split()) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def open_cause(self) -> str | None:
        """The cause once the last ``threshold`` outcomes share it, else None."""
        if self.threshold <= 0:
            return None
        lines: list[str] = []
        with contextlib.suppress(OSError):
            lines = self.path.read_text(encoding="utf-8").splitlines()
        return streak_cause(lines, self.threshold)

    def reason(self) -> str | None:
        """What a run the breaker holds back reports (``not run: <cause>``), or None."""
        cause = self.open_cause()
        return None if cause is None else f"not run: {cause}"


def streak_cause(outcomes: Sequence[str], threshold: int) -> str | None:
    """The cause once the last ``threshold`` outcomes (each run's cause, ``""`` for none)
    share one, else None; never with ``threshold`` 0 (the breaker off). The rule of
    :class:`CircuitBreaker`, also kept in memory by a single process's runs (``skilllift
    score --depth deep``'s Monte Carlo runs)."""
    if threshold <= 0:
        return None
    last = [" ".join(c.split()) for c in outcomes[-threshold:]]
    if len(last) < threshold or not last[0] or len(set(last)) != 1:
        return None
    return last[0]


def judge_cause(error: str) -> str:
    """The infrastructure cause in a judge error (``judge.client``'s or a batch judge's words:
    both classify an API failure with the provider's direct classifier), or ``""``: a
    refused key (401, 403, Google's 400 ``API_KEY_INVALID``: :data:`~pytest_skilllift.judge.
    client.KEY_REFUSED`), a judge model that does not exist, an API that cannot be reached. A bad
    reply or a rate limit is no outage."""
    for marker, words in ((KEY_REFUSED, "the judge's API refused the key"),
                          ("HTTP 401", "the judge's API refused the key"),
                          ("HTTP 403", "the judge's API refused the key"),
                          ("HTTP 404", "the judge model was not found"),
                          ("connection error", "the judge's API is unreachable")):
        if marker in error:
            return f"{words} ({error})"
    return ""
