"""Rate-limit retries in an agent's output: how many, and how long the CLI waited for them.

A run that was rate limited is not a failed run — the CLI retries — but it is a run whose
timing changed, and qdrant/skills SCORING.md warns that at 4 or more concurrent runs "a
rate-limited run can change results". So each run's retries are counted (the manifest's
``rate_limit_retries`` and ``rate_limit_wait_ms`` columns) and, while it runs, fed to the
session's concurrency limit (:mod:`pytest_skilllift.run.concurrency`).

What each CLI says (a retry for HTTP 429 "rate limited" or 529 "overloaded"):

- Claude Code, stream-json on stdout: ``{"type": "system", "subtype": "api_retry",
  "attempt": 1, "retry_delay_ms": 3054, "error_status": 429, "error": "rate_limit", …}`` —
  one event per retry, its delay honouring the API's ``retry-after``;
- Codex (``exec --json``) on stdout: ``{"type": "error", "message": "Reconnecting... 1/5
  (unexpected status 429 Too Many Requests: …)"}`` — no delay is given (counted, wait 0);
- Gemini CLI on stderr: ``Attempt 2 failed with status 429. Retrying with backoff...`` —
  no delay is given either;
- OpenCode retries without a word on its output: its rate limits are not seen here.

Other retries (a reset connection, a 500) are not rate limits and are not counted. No
pytest here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pytest_skilllift.agents.base import status_in

#: The HTTP statuses that say "slow down": rate limited, overloaded.
RATE_LIMIT_STATUSES = frozenset({429, 529})


@dataclass(frozen=True)
class Retry:
    """One rate-limit retry a CLI reported: its HTTP status and the wait it announced (ms;
    0 when the CLI does not say)."""

    status: int
    wait_ms: int


def stdout_retry(line: bytes | str) -> Retry | None:
    """The rate-limit retry one line of an agent's stdout reports, or None."""
    raw = line.encode() if isinstance(line, str) else line
    if b"api_retry" not in raw and b"Reconnecting" not in raw:
        return None  # the common case, without parsing JSON
    try:
        event = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    if event.get("type") == "system" and event.get("subtype") == "api_retry":  # Claude Code
        status = event.get("error_status")
        if isinstance(status, int) and status in RATE_LIMIT_STATUSES:
            delay = event.get("retry_delay_ms")
            wait = int(delay) if isinstance(delay, (int, float)) and delay > 0 else 0
            return Retry(status, wait)
        return None
    message = event.get("message")
    if event.get("type") == "error" and isinstance(message, str) and message.startswith(
            "Reconnecting"):  # Codex
        status = status_in(message)
        if status in RATE_LIMIT_STATUSES:
            assert status is not None
            return Retry(status, 0)
    return None


def stderr_retry(line: bytes | str) -> Retry | None:
    """The rate-limit retry one line of an agent's stderr reports (Gemini CLI), or None."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.strip()
    if not (text.startswith("Attempt ") and "Retrying" in text):
        return None
    status = status_in(text)
    return Retry(status, 0) if status in RATE_LIMIT_STATUSES and status is not None else None


@dataclass(frozen=True)
class RateLimits:
    """A run's rate-limit retries and the total wait they announced."""

    retries: int = 0
    wait_ms: int = 0


def count_run(stdout: Path, stderr: Path | None = None) -> RateLimits:
    """Count a finished run's rate-limit retries from its transcript (and stderr)."""
    retries = wait = 0
    for path, parse in ((stdout, stdout_retry), (stderr, stderr_retry)):
        if path is None:
            continue
        try:
            with open(path, "rb") as fh:
                for line in fh:
                    hit = parse(line)
                    if hit is not None:
                        retries += 1
                        wait += hit.wait_ms
        except OSError:
            continue
    return RateLimits(retries, wait)


def rate_limit_columns(counted: RateLimits) -> dict[str, int]:
    """The manifest's ``rate_limit_retries`` and ``rate_limit_wait_ms`` of a run."""
    return {"rate_limit_retries": counted.retries, "rate_limit_wait_ms": counted.wait_ms}
