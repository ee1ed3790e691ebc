"""Rate-limit retries in an agent's output: how many, and how long the CLI waited for them.

A run that was rate limited is not a failed run — the CLI retries — but it is a run whose
timing changed, and qdrant/skills SCORING.md warns that at 4 or more concurrent runs "a
rate-limited run can change results". So each run's retries are counted (the manifest's
``rate_limit_retries`` and ``rate_limit_wait_ms`` columns) and, while it runs, fed to the
session's concurrency limit (:mod:`pytest_skilllift.run.concurrency`).

Each agent's module reads its own retries (``agents/<name>.py``'s outage readers, the ones
``runners.outage`` reads too): a retry whose status is 429 "rate limited" or 529
"overloaded" is a rate limit (``OutageSignal.rate_limited``). Claude Code announces each in
a stream-json ``api_retry`` event with its delay (``retry_delay_ms``, honouring the API's
``retry-after``); Codex in an ``error`` event "Reconnecting... 1/5 (unexpected status 429 …)"
and Gemini CLI on stderr "Attempt 2 failed with status 429. Retrying with backoff...", both
without a delay (counted, wait 0); OpenCode retries without a word on its output, so its
rate limits are not seen here.

Other retries (a reset connection, a 500) are not rate limits and are not counted. No
pytest here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_skilllift.agents.base import RATE_LIMIT_STATUSES, OutageSignal
from pytest_skilllift.agents.registry import stderr_signal, stdout_signal

__all__ = ["RATE_LIMIT_STATUSES", "RateLimits", "Retry", "count_run", "rate_limit_columns",
           "stderr_retry", "stdout_retry"]


@dataclass(frozen=True)
class Retry:
    """One rate-limit retry a CLI reported: its HTTP status and the wait it announced (ms;
    0 when the CLI does not say)."""

    status: int
    wait_ms: int


def _retry(said: OutageSignal | None) -> Retry | None:
    if said is None or not said.rate_limited or said.status is None:
        return None
    return Retry(said.status, said.wait_ms)


def stdout_retry(line: bytes | str, agent: str | None = None) -> Retry | None:
    """The rate-limit retry one line of an agent's stdout reports, or None (``agent``: whose
    reader; None: every agent's)."""
    return _retry(stdout_signal(line, agent))


def stderr_retry(line: bytes | str, agent: str | None = None) -> Retry | None:
    """The rate-limit retry one line of an agent's stderr reports (Gemini CLI), or None."""
    return _retry(stderr_signal(line, False, agent))


@dataclass(frozen=True)
class RateLimits:
    """A run's rate-limit retries and the total wait they announced."""

    retries: int = 0
    wait_ms: int = 0


def count_run(stdout: Path, stderr: Path | None = None,
              agent: str | None = None) -> RateLimits:
    """Count a finished run's rate-limit retries from its transcript (and stderr), read by
    ``agent``'s readers (None: every agent's)."""
    retries = wait = 0
    for path, parse in ((stdout, stdout_retry), (stderr, stderr_retry)):
        if path is None:
            continue
        try:
            with open(path, "rb") as fh:
                for line in fh:
                    hit = parse(line, agent)
                    if hit is not None:
                        retries += 1
                        wait += hit.wait_ms
        except OSError:
            continue
    return RateLimits(retries, wait)


def rate_limit_columns(counted: RateLimits) -> dict[str, int]:
    """The manifest's ``rate_limit_retries`` and ``rate_limit_wait_ms`` of a run."""
    return {"rate_limit_retries": counted.retries, "rate_limit_wait_ms": counted.wait_ms}
