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
what they are for. One failure Claude Code does not retry at all: a certificate it does not
trust (a TLS-inspecting proxy, a private CA). It ends at once with a result event
(``"api_error": "tls_untrusted_ca"``, "Unable to connect to API: …") and exit status 1, which
:meth:`OutageWatch.ended` names the same way (the probe says what the TLS failure is).

The other agents say it their own way, and some of it only on stderr: Codex (``exec --json``)
emits ``{"type": "error", "message": "Reconnecting... 1/5 (unexpected status 401
Unauthorized: …)"}`` or ``"Reconnecting... waiting for network (Connection failed: …)"`` on
stdout; Gemini CLI prints ``Attempt 2 failed. Retrying with backoff... Error: exception
TypeError: fetch failed sending request`` on stderr, and ``Error when talking to Gemini API``
with a ``status: 401`` line before it gives up; OpenCode ends with an ``error`` event whose
``statusCode`` is 401. Claude Code's stderr stays empty (its retries are on stdout). A CLI that
gave up on its own after a refused key or a missing model (one final error, exit status not
0) is named the same way when it ends. OpenCode against a port with nothing listening prints
nothing at all (it retries silently): a CLI silent for :data:`SILENT_PROBE_S` has the API's
host probed in the background (:meth:`OutageWatch.tick`, called by the runner's wait loop), and
a host that cannot be reached is that run's outage, in the same words.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from urllib.parse import urlsplit

from pytest_skilllift.agents.base import OutageSignal
from pytest_skilllift.agents.registry import AGENTS, agent, stderr_signal, stdout_signal
from pytest_skilllift.model import CLAUDE_CODE, split_agent

DEFAULT_BASE_URL = AGENTS[CLAUDE_CODE].default_url
#: Retries with a refused key or a missing model before the run is stopped (never transient;
#: two, so one stray answer from a proxy is not enough).
REFUSED_AFTER = 2
#: Retries without an HTTP status before the API's host is probed (≈ 4 s of the CLI's back-off).
UNREACHABLE_AFTER = 3
PROBE_TIMEOUT_S = 5.0
#: A CLI that printed nothing for this long has its API's host probed (a model thinking is
#: silent too, but its host answers: only a host that cannot be reached is an outage).
SILENT_PROBE_S = 10.0
#: OpenSSL's reasons when the far end answered a ClientHello with plain text (an HTTP server).
PLAIN_TEXT_REPLIES = frozenset({"WRONG_VERSION_NUMBER", "HTTP_REQUEST", "RECORD_LAYER_FAILURE",
                                "PACKET_LENGTH_TOO_LONG", "UNKNOWN_PROTOCOL"})


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
            except ssl.SSLCertVerificationError as exc:
                return (f"TLS failure: the server's certificate is not trusted "
                        f"({exc.verify_message or exc.reason or exc}); point SSL_CERT_FILE / "
                        "NODE_EXTRA_CA_CERTS at its CA, or use the right host")
            except ssl.SSLError as exc:
                reason = str(exc.reason or exc)
                if reason in PLAIN_TEXT_REPLIES:
                    return (f"TLS failure: the server does not speak TLS ({reason}: it "
                            "answered in plain text; is the URL http://, not https://?)")
                return f"TLS failure ({reason})"
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
    """Fed the CLI's stdout (and stderr) line by line; :attr:`cause` is set once an outage is
    certain. ``key_hint`` and ``url_hint`` name what to check (the agent's variables),
    ``agent`` whose outage readers read the lines."""

    def __init__(self, base_url: str, model_id: str, *,
                 key_hint: str = "ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN",
                 url_hint: str = "ANTHROPIC_BASE_URL", agent: str | None = None) -> None:
        #: Whose outage readers read its lines (None: every agent's, the first that reads).
        self.agent = agent
        self.base_url = base_url or DEFAULT_BASE_URL
        self.model_id = model_id
        self.key_hint = key_hint
        self.url_hint = url_hint
        self.cause: str | None = None
        self._status: object = None
        self._streak = 0
        self._probed_at = 0
        #: The last final error a CLI reported before giving up (status, words).
        self._final: tuple[int, str] | None = None
        self._stderr_error = False
        #: Claude Code's words when it gave up connecting on its own (a TLS failure).
        self._unreachable: str | None = None
        #: When the CLI last printed a line (or the last silent probe started).
        self._heard = time.monotonic()
        self._silent_probe: threading.Thread | None = None

    def feed(self, line: bytes) -> str | None:
        """Read one transcript line; the outage's cause once known, else None."""
        self._heard = time.monotonic()
        if self.cause is not None:
            return self.cause
        if b'"type":"assistant"' in line.replace(b" ", b""):
            self._streak = 0  # a call got through: earlier retries were passing faults
            return self.cause
        # Every retry and error event, read by the agent's own outage_event
        # (agents/<name>.py): Claude Code's api_retry and result events, Codex's retries and
        # final error, OpenCode's and Gemini CLI's final error events.
        said = stdout_signal(line, self.agent)
        if said is not None:
            self._signal(said)
        return self.cause

    def feed_stderr(self, line: bytes) -> str | None:
        """Read one line of the CLI's stderr (Gemini CLI reports its retries there)."""
        self._heard = time.monotonic()
        if self.cause is not None:
            return self.cause
        said = stderr_signal(line, self._stderr_error, self.agent)
        if said is not None:
            self._signal(said)
        return self.cause

    def tick(self) -> str | None:
        """Called by the runner while it waits for the CLI: after :data:`SILENT_PROBE_S`
        without a line, the API's host is probed once per silent stretch, in a thread (a
        probe may take :data:`PROBE_TIMEOUT_S`, and the runner must keep seeing a stop).
        The outage's cause once known, else None."""
        if (self.cause is None and time.monotonic() - self._heard >= SILENT_PROBE_S
                and (self._silent_probe is None or not self._silent_probe.is_alive())):
            self._heard = time.monotonic()  # the next probe after another silent stretch
            self._silent_probe = threading.Thread(target=self._probe_silence, daemon=True,
                                                  name="skilllift-probe")
            self._silent_probe.start()
        return self.cause

    def _probe_silence(self) -> None:
        why = probe(self.base_url)
        if why is not None and self.cause is None:
            self.cause = (f"API unreachable at {where(self.base_url)}: {why}; "
                          f"check {self.url_hint}")

    def _signal(self, said: OutageSignal) -> None:
        if said.kind == "retry":
            self._retry(said.status, said.words)
        elif said.kind == "unreachable":
            self._unreachable = said.words
        else:  # final, or an error report starting (arm), whose status may come later
            self._stderr_error = self._stderr_error or said.kind == "arm"
            if said.status:
                self._final = (said.status, said.words)

    def _retry(self, status: object, error: str) -> None:
        self._streak = self._streak + 1 if status == self._status else 1
        self._status = status
        self.cause = self._judge(status, error)

    def ended(self, exit_code: int | None) -> str | None:
        """The CLI ended on its own: a refused key or a missing model it gave up on (one
        final error is enough: the CLI already decided no retry helps) is an outage too."""
        if self.cause is None and exit_code not in (0, None) and self._final is not None:
            status, error = self._final
            self._streak = REFUSED_AFTER
            self.cause = self._judge(status, error, final=True)
        if self.cause is None and exit_code not in (0, None) and self._unreachable is not None:
            # The CLI could not connect and gave up: a direct connection says why in the
            # same words as the retried case (else the CLI's own words, cut short).
            why = probe(self.base_url)
            said = self._unreachable.strip().split(" · ")[0][:200]
            self.cause = (f"API unreachable at {where(self.base_url)}: "
                          f"{why or said or 'no connection'}; check {self.url_hint}")
        return self.cause

    def _judge(self, status: object, error: str, *, final: bool = False) -> str | None:
        at = where(self.base_url)
        shown = f"HTTP {status} {error}".strip()
        if status in (401, 403) and self._streak >= REFUSED_AFTER:
            return f"API refused the key at {at} ({shown}); check {self.key_hint}"
        if status == 404 and self._streak >= REFUSED_AFTER:
            return f"model {self.model_id!r} not found at {at} ({shown}); check skill_lift_models"
        if final:
            return None
        if status is None and self._streak >= UNREACHABLE_AFTER + self._probed_at:
            why = probe(self.base_url)
            if why is None:  # the host answers: the CLI's own retries handle it
                self._probed_at = self._streak
                return None
            return f"API unreachable at {at}: {why}; check {self.url_hint}"
        return None


def watch_for(name: str, model_id: str, env: dict[str, str]) -> OutageWatch:
    """The watch for one run of agent ``name`` (``env``: the session's environment, where the
    agent's base URL and key variables are read)."""
    if name == CLAUDE_CODE:  # its key may be an auth token too (the watch's default hint)
        return OutageWatch(env.get(AGENTS[name].base_url_var, ""), model_id, agent=name)
    defn = agent(name)
    return OutageWatch(env.get(defn.base_url_var) or defn.default_url, model_id,
                       key_hint=defn.key_var_for(split_agent(model_id)[1]),
                       url_hint=defn.base_url_var, agent=name)
