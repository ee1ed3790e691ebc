"""An outage named from the CLI's own events within seconds, not after the run's timeout.

Claude Code retries a failed Messages API call up to ten times with growing pauses (about
ten minutes in all), and says so on its stream-json output: one ``{"type": "system",
"subtype": "api_retry", "error_status": 401, "error": "authentication_failed", …}`` event per
retry. A run whose every call fails for a reason no retry can fix — nothing listening at the
base URL, a name that does not resolve, a TLS failure, a refused key (401/403), a model that
does not exist (404) — is an infrastructure failure, not the skill's: :class:`OutageWatch`
reads those events as they arrive and names the cause in words after a few of them, so the
runner stops the CLI and records the run ``errored`` with that cause (retried next session).

Retries without an HTTP status (``error_status: null``) are a connection that failed; they
are only called an outage once a direct connection to the API's host confirms it (a dropped
connection or a reset is the network's passing fault, and the CLI's retry is right).
Rate limits and overload (429, 529, 5xx) are never an outage here: the CLI's retries are
what they are for.
"""

from __future__ import annotations

import json
import socket
import ssl
from urllib.parse import urlsplit

DEFAULT_BASE_URL = "https://api.anthropic.com"
#: Retries with a refused key or a missing model before the run is stopped (never transient;
#: two, so one stray answer from a proxy is not enough).
REFUSED_AFTER = 2
#: Retries without an HTTP status before the API's host is probed (≈ 4 s of the CLI's back-off).
UNREACHABLE_AFTER = 3
PROBE_TIMEOUT_S = 5.0


def probe(base_url: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why ``base_url``'s host cannot be reached (``"connection refused"``, a DNS or TLS
    failure…), or None when a connection (and for https its TLS handshake) succeeds."""
    parts = urlsplit(base_url or DEFAULT_BASE_URL)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except socket.gaierror as exc:
        return f"DNS lookup of {host} failed ({exc.strerror or exc})"
    except ConnectionRefusedError:
        return "connection refused"
    except TimeoutError:
        return f"no connection within {timeout_s:g}s"
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        if parts.scheme == "https":
            try:
                with ssl.create_default_context().wrap_socket(sock, server_hostname=host):
                    pass
            except ssl.SSLError as exc:
                return f"TLS failure ({exc.reason or exc})"
            except OSError as exc:
                return f"TLS handshake failed ({exc.strerror or exc})"
    finally:
        sock.close()
    return None


def where(base_url: str) -> str:
    """``host:port`` of the API, for messages."""
    parts = urlsplit(base_url or DEFAULT_BASE_URL)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


class OutageWatch:
    """Fed the CLI's stdout line by line; :attr:`cause` is set once an outage is certain."""

    def __init__(self, base_url: str, model_id: str) -> None:
        self.base_url = base_url or DEFAULT_BASE_URL
        self.model_id = model_id
        self.cause: str | None = None
        self._status: object = None
        self._streak = 0
        self._probed_at = 0

    def feed(self, line: bytes) -> str | None:
        """Read one transcript line; the outage's cause once known, else None."""
        if self.cause is not None or b'"api_retry"' not in line:
            if b'"type":"assistant"' in line.replace(b" ", b""):
                self._streak = 0  # a call got through: earlier retries were passing faults
            return self.cause
        try:
            event = json.loads(line)
        except ValueError:
            return None
        if not isinstance(event, dict) or event.get("subtype") != "api_retry":
            return None
        status = event.get("error_status")
        self._streak = self._streak + 1 if status == self._status else 1
        self._status = status
        self.cause = self._judge(status, str(event.get("error") or ""))
        return self.cause

    def _judge(self, status: object, error: str) -> str | None:
        at = where(self.base_url)
        if status in (401, 403) and self._streak >= REFUSED_AFTER:
            return (f"API refused the key at {at} (HTTP {status} {error}); check "
                    "ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN")
        if status == 404 and self._streak >= REFUSED_AFTER:
            return (f"model {self.model_id!r} not found at {at} (HTTP 404 {error}); check "
                    "skill_lift_models")
        if status is None and self._streak >= UNREACHABLE_AFTER + self._probed_at:
            why = probe(self.base_url)
            if why is None:  # the host answers: the CLI's own retries handle it
                self._probed_at = self._streak
                return None
            return f"API unreachable at {at}: {why}; check ANTHROPIC_BASE_URL"
        return None
