"""A local stand-in of the Anthropic Messages API, served on loopback.

The real Claude Code CLI (and the ``anthropic`` SDK, and our judge client) talk to it through
``ANTHROPIC_BASE_URL``. It speaks the wire format of the real API closely enough that the
official clients cannot tell: non-streaming JSON, server-sent events with the same event
sequence, the real error JSON shape, ``request-id`` headers. What it answers is decided by
plain Python callables (``Handler``), so a test scripts the model and the harness around it
is exercised for real.

Requests are routed into three kinds:

- ``judge``: the system prompt carries :data:`JUDGE_MARKER` (our judge puts it there);
- ``aux``: CLI housekeeping that is not the agent conversation (title/topic side calls,
  quota probes, token counting, any non-``/v1/messages`` path);
- ``agent``: everything else, i.e. the conversation the run is about.

Only ``agent`` and ``judge`` requests are subject to injected :class:`Faults`, so a fault
schedule is deterministic with respect to the calls a test cares about.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import socket
import struct
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The marker the judge puts in its system prompt: requests carrying it go to the judge.
from pytest_skilllift.judge.protocol import JUDGE_MARKER
from pytest_skilllift.testing import judge_dialects as jd
from pytest_skilllift.testing.agent_script import skill_agent
from pytest_skilllift.testing.batches import BatchQueue, BatchScript
from pytest_skilllift.testing.dialects import (
    CODEX,
    GEMINI,
    OPENCODE,
    CodexDialect,
    Dialect,
    GeminiDialect,
    gemini_chunks,
    responses_events,
)
from pytest_skilllift.testing.foreign_batches import GeminiBatches, OpenAIBatches
from pytest_skilllift.testing.replies import Handler, Reply, new_tool_id

#: Every fault kind the stand-in can inject.
FAULT_KINDS: tuple[str, ...] = ("429", "529", "500", "reset", "truncate", "timeout")

_DEFAULT_MODEL = "claude-sonnet-4-5-20250929"
#: Path of the Message Batches endpoints (requests answered inside a batch are recorded with it).
BATCH_PATH = "/v1/messages/batches"
#: Gemini's generate endpoints: the model is in the path (``/v1beta/models/M:…``).
#: One Gemini model looked up (``GET /v1beta/models/M``, no method after it).
_GEMINI_MODEL = re.compile(r"^/v1beta/models/[^/:]+$")
_GEMINI_PATH = re.compile(r"^/v1(?:beta)?/models/([^/:]+):(streamGenerateContent|generateContent)$")
#: OpenAI's Batch API (files and batches) and Gemini's batch mode (``testing.foreign_batches``).
OPENAI_BATCH_PATH = "/v1/batches"
OPENAI_FILES_PATH = "/v1/files"
_OPENAI_FILE_CONTENT = re.compile(r"^/v1/files/([^/]+)/content$")
_OPENAI_FILE = re.compile(r"^/v1/files/([^/]+)$")
_OPENAI_BATCH = re.compile(r"^/v1/batches/([^/]+)$")
_GEMINI_BATCH_CREATE = re.compile(r"^/v1(?:beta)?/models/([^/:]+):batchGenerateContent$")
_GEMINI_BATCH = re.compile(r"^/v1(?:beta)?/batches/([^/:]+)$")
#: The path a request answered inside a Gemini batch is recorded with.
GEMINI_BATCH_PATH = "/v1beta/batches"
#: The answer to Gemini CLI's side calls (a JSON-schema ``generateContent``: the next-speaker
#: check, the model router): both read their keys from one object.
_GEMINI_AUX = json.dumps({"reasoning": "The answer is complete.", "next_speaker": "user",
                          "complexity_reasoning": "A direct question.", "complexity_score": 10})


@dataclass
class Faults:
    """Injected failures, applied to ``agent``/``judge`` requests (never to ``aux``).

    ``rate`` is the probability that a request fails (drawn from a ``seed``-ed RNG, so a run
    is reproducible for a given request order); ``first_n`` fails the first N eligible
    requests deterministically regardless of ``rate``. ``kinds`` are cycled through for
    ``first_n`` failures and drawn at random otherwise. ``only`` restricts faults to one
    request kind. ``hang_s`` bounds the ``timeout`` fault (the stand-in sleeps that long,
    then drops the connection), so a test never hangs forever.
    """

    rate: float = 0.0
    kinds: tuple[str, ...] = FAULT_KINDS
    seed: int = 0
    retry_after: float = 0.0
    only: str | None = None
    first_n: int = 0
    hang_s: float = 30.0
    #: A rate limit on concurrency: an agent request that arrives while more than this many
    #: agent requests are in flight (itself included) is answered 429 with ``retry_after``,
    #: the way an API's concurrent-request limit answers. None: no such limit.
    max_concurrent: int | None = None

    def __post_init__(self) -> None:
        unknown = [k for k in self.kinds if k not in FAULT_KINDS]
        if unknown or not self.kinds:
            raise ValueError(
                f"unknown fault kind(s) {unknown!r}; expected a non-empty subset of {FAULT_KINDS}"
            )
        if self.only not in (None, "agent", "judge"):
            raise ValueError(f"Faults.only must be None, 'agent' or 'judge', not {self.only!r}")
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"Faults.rate must be within [0, 1], not {self.rate}")
        if self.max_concurrent is not None and self.max_concurrent < 1:
            raise ValueError(f"Faults.max_concurrent must be at least 1, not {self.max_concurrent}")


@dataclass(frozen=True)
class Recorded:
    """One request the stand-in received (bodies kept for assertions; headers never are)."""

    kind: str  # "agent" | "judge" | "aux"
    model: str
    path: str
    #: HTTP status sent; 0 when no response was sent (``reset`` / ``timeout`` faults).
    status: int
    ts: float
    stream: bool
    fault: str | None = None
    method: str = "POST"
    body: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    #: Which API the request spoke: ``messages`` (Claude Code, the judge), or another
    #: agent's (``codex``: Responses, ``gemini-cli``: streamGenerateContent, ``opencode``:
    #: Messages with OpenCode's tools; :mod:`~pytest_skilllift.testing.dialects`).
    api: str = "messages"

    @property
    def ok(self) -> bool:
        """Answered normally (2xx and no injected fault)."""
        return self.fault is None and 200 <= self.status < 300


def system_text(body: dict[str, Any]) -> str:
    """The request's system prompt as one string (it may be a string or a list of blocks)."""
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(
            str(b.get("text", "")) for b in system if isinstance(b, dict)
        )
    return ""


def estimate_tokens(obj: Any) -> int:
    """A rough token count (about four characters per token), never below 1.

    Realistic magnitudes matter: the CLI prices usage into ``total_cost_usd`` and budget
    tests depend on it growing with the conversation.
    """
    text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return max(1, len(text) // 4)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # Loopback only, chosen by the OS.
    standin: StandIn

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up (and our own injected resets) are routine, not tracebacks."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
            return
        super().handle_error(request, client_address)


class StandIn:
    """A threaded Messages API stand-in on ``127.0.0.1`` with an ephemeral port.

    >>> with StandIn(agent=lambda body: Reply.text("hello")) as api:
    ...     env = {"ANTHROPIC_BASE_URL": api.base_url}

    ``agent``/``judge`` script the two kinds of conversation; without an agent the default
    scripted agent (:func:`pytest_skilllift.testing.agent_script.skill_agent`) answers, and
    without a judge, judge requests get a 500 saying none is configured. ``latency_s`` /
    ``judge_latency_s`` delay each response; ``api_key`` (when set) must match the request's
    ``x-api-key`` or bearer token, else 401.
    """

    def __init__(
        self,
        agent: Handler | None = None,
        judge: Handler | None = None,
        *,
        latency_s: float = 0.0,
        judge_latency_s: float = 0.0,
        faults: Faults | None = None,
        api_key: str | None = None,
        aux: Handler | None = None,
        batch: BatchScript | None = None,
        models: frozenset[str] | None = None,
    ) -> None:
        #: The model ids ``GET /v1/models/{id}`` knows (None: every id, as before); an
        #: unknown one answers the real API's 404 ``not_found_error``.
        self.models = models
        #: The Message Batches endpoints (``testing.batches``); ``batch`` scripts their polls
        #: and injected errored/expired results.
        self.batches = BatchQueue(batch or BatchScript(), self._batch_answer)
        #: OpenAI's Batch API and Gemini's batch mode, scripted by the same ``batch``.
        self.openai_batches = OpenAIBatches(
            self.batches.script, lambda body, model: self._foreign_batch_answer(
                jd.RESPONSES, body, model))
        self.gemini_batches = GeminiBatches(
            self.batches.script, lambda body, model: self._foreign_batch_answer(
                jd.GEMINI, body, model))
        self.agent = agent
        self.judge = judge
        self.aux = aux
        self.latency_s = latency_s
        self.judge_latency_s = judge_latency_s
        self.faults = faults
        self.api_key = api_key
        self._lock = threading.Lock()
        self._requests: list[Recorded] = []
        self._eligible = 0  # agent/judge requests seen so far (drives Faults.first_n)
        #: Agent requests being answered now, and the most at once (``Faults.max_concurrent``).
        self.agent_inflight = 0
        self.peak_agent_inflight = 0
        self._rng = random.Random(faults.seed if faults else 0)
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> str:
        """Bind, serve in a background thread, and return the base URL."""
        if self._server is not None:
            return self.base_url
        server = _Server(("127.0.0.1", 0), _RequestHandler)
        server.standin = self
        self._server = server
        self._stopping.clear()
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05},
            name="skilllift-standin", daemon=True,
        )
        self._thread.start()
        host, port = server.server_address[:2]
        self.base_url = f"http://{host!s}:{port}"
        return self.base_url

    def stop(self) -> None:
        """Stop serving; wakes any request sleeping in latency or a ``timeout`` fault."""
        self._stopping.set()
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> StandIn:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- inspection ------------------------------------------------------------------------

    @property
    def requests(self) -> list[Recorded]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def count(self, kind: str | None = None, ok_only: bool = True) -> int:
        """How many requests of ``kind`` (any kind when None) were received; with
        ``ok_only``, only those answered normally."""
        return sum(
            1 for r in self.requests
            if (kind is None or r.kind == kind) and (r.ok or not ok_only)
        )

    def bodies(self, kind: str = "agent", api: str | None = None) -> list[dict[str, Any]]:
        """Request bodies of one kind (and, given ``api``, of one agent's API), in arrival
        order (for assertions on what was sent)."""
        return [r.body for r in self.requests if r.kind == kind and r.body is not None
                and (api is None or r.api == api)]

    # -- internals used by the request handler ---------------------------------------------

    def _record(self, rec: Recorded) -> None:
        with self._lock:
            self._requests.append(rec)

    def _pick_fault(self, kind: str) -> str | None:
        faults = self.faults
        if faults is None or kind == "aux":
            return None
        if faults.only is not None and faults.only != kind:
            return None
        with self._lock:
            n = self._eligible
            self._eligible += 1
            if n < faults.first_n:
                return faults.kinds[n % len(faults.kinds)]
            if faults.rate > 0 and self._rng.random() < faults.rate:
                return self._rng.choice(faults.kinds)
        return None

    def _arrive(self, kind: str) -> bool:
        """Count an agent request in flight; True when it is above ``Faults.max_concurrent``
        (it is then answered 429). The caller calls :meth:`_depart` when it is answered."""
        with self._lock:
            self.agent_inflight += 1
            self.peak_agent_inflight = max(self.peak_agent_inflight, self.agent_inflight)
            limit = self.faults.max_concurrent if self.faults else None
            return kind == "agent" and limit is not None and self.agent_inflight > limit

    def _depart(self) -> None:
        with self._lock:
            self.agent_inflight -= 1

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _batch_answer(self, params: dict[str, Any]) -> dict[str, Any]:
        """One request of a batch, answered by the same scripts as a direct call (recorded
        with the batch path, so tests tell batched calls from direct ones)."""
        kind = classify(params)
        handler = self._handler_for(kind)
        if handler is None:
            raise RuntimeError(f"no {kind} handler configured on this StandIn")
        reply = handler(params)
        self._record(Recorded(kind, str(params.get("model", "")), BATCH_PATH, 200, time.time(),
                              False, body=params))
        return _message_json(reply, params, "msg_01" + uuid.uuid4().hex[:22])

    def _foreign_batch_answer(self, judge_api: str, body: dict[str, Any],
                              model: str) -> dict[str, Any]:
        """One request of an OpenAI or Gemini batch, graded by the judge script as a direct
        call is, recorded as a judge request with the batch path (so tests tell batched calls
        from direct ones), answered in the API's own response body."""
        if not jd.is_judge_request(judge_api, body):
            raise RuntimeError("only judge requests are answered in a batch by this StandIn")
        handler = self.judge
        if handler is None:
            raise RuntimeError("no judge handler configured on this StandIn")
        reply = handler(jd.canonical_judge_body(judge_api, body, model))
        usage = {"input": estimate_tokens(body), "output": estimate_tokens(reply.content)}
        if reply.usage:
            usage["input"] = int(reply.usage.get("input_tokens", usage["input"]))
            usage["output"] = int(reply.usage.get("output_tokens", usage["output"]))
        responses = judge_api == jd.RESPONSES
        self._record(Recorded("judge", model, OPENAI_BATCH_PATH if responses
                              else GEMINI_BATCH_PATH, 200, time.time(), False, body=body,
                              api=CODEX.name if responses else GEMINI.name))
        return jd.native_judge_reply(judge_api, reply, reply.model or model, usage)

    def _handler_for(self, kind: str) -> Handler | None:
        if kind == "judge":
            return self.judge
        if kind == "aux":
            return self.aux or _aux_reply
        return self.agent if self.agent is not None else skill_agent


def classify(body: dict[str, Any]) -> str:
    """``judge``, ``aux`` or ``agent`` for a ``/v1/messages`` body.

    The CLI's side calls (title/topic generation, quota probes) carry no tools and a
    short single-purpose system prompt; the agent conversation always offers tools in
    ``-p`` mode. Judge calls are recognised by :data:`JUDGE_MARKER` first, whatever else
    they carry.
    """
    system = system_text(body)
    if JUDGE_MARKER in system:
        return "judge"
    if body.get("tools"):
        return "agent"
    return "aux"


def _aux_reply(body: dict[str, Any]) -> Reply:
    """A sensible answer to CLI housekeeping calls.

    Title/topic generators ask for JSON; quota probes only need any short reply.
    """
    system = system_text(body).lower()
    if "json" in system and "title" in system:
        return Reply.text('{"title": "Skilllift run"}')
    if "isnewtopic" in system.replace(" ", "").replace("_", ""):
        return Reply.text('{"isNewTopic": false, "title": null}')
    return Reply.text("OK")


def _error_body(err_type: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": err_type, "message": message}}).encode()


_STATUS_ERRORS: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _message_json(reply: Reply, body: dict[str, Any], msg_id: str) -> dict[str, Any]:
    content = []
    for block in reply.content:
        block = dict(block)
        if block.get("type") == "tool_use":
            block.setdefault("id", new_tool_id())
            block.setdefault("input", {})
        content.append(block)
    usage = {
        "input_tokens": estimate_tokens({k: body.get(k) for k in ("system", "messages", "tools")}),
        "output_tokens": estimate_tokens(content),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    if reply.usage:
        usage.update(reply.usage)
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model or body.get("model") or _DEFAULT_MODEL,
        "content": content,
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def _chunks(text: str, size: int) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i:i + size]


def sse_events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The real API's event sequence for a complete message: ``message_start``, ``ping``,
    per block ``content_block_start``/``_delta``.../``_stop``, ``message_delta`` (stop
    reason + output usage), ``message_stop``."""
    usage = message["usage"]
    start = dict(message, content=[], stop_reason=None, stop_sequence=None,
                 usage=dict(usage, output_tokens=1))
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(message["content"]):
        btype = block.get("type")
        begin: dict[str, Any] = block  # any other block is sent whole in its start event
        deltas: list[dict[str, Any]] = []
        if btype == "text":
            begin = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece}
                      for piece in _chunks(block.get("text", ""), 40)]
        elif btype == "tool_use":
            begin = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in
                      ("", *_chunks(json.dumps(block.get("input", {})), 24))]
        elif btype == "thinking":
            begin = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": block.get("thinking", "")},
                      {"type": "signature_delta",
                       "signature": block.get("signature", "c2lnbmF0dXJl")}]
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": begin}
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": usage["output_tokens"]},
    }
    yield "message_stop", {"type": "message_stop"}


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without TCP_NODELAY, Nagle plus delayed
    # ACKs add ~40 ms to every keep-alive response.
    disable_nagle_algorithm = True
    server: _Server
    # Idle keep-alive connections are dropped after this long (frees handler threads).
    timeout = 120
    #: This request is counted among the agent requests in flight (``StandIn._arrive``).
    _counted = False

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log (requests are recorded instead)."""

    # -- helpers ---------------------------------------------------------------------------

    @property
    def api(self) -> StandIn:
        return self.server.standin

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            # Some HTTP clients stream request bodies; decode the chunks.
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send_json(self, status: int, payload: bytes, headers: dict[str, str] | None = None,
                   ) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _send_error(self, status: int, message: str, headers: dict[str, str] | None = None,
                    ) -> None:
        err_type = _STATUS_ERRORS.get(status, "api_error")
        self._send_json(status, _error_body(err_type, message), headers)

    def _authorized(self) -> bool:
        key = self.api.api_key
        if key is None:
            return True
        given = self.headers.get("x-api-key")
        auth = self.headers.get("authorization") or ""
        if auth.lower().startswith("bearer "):
            given = given or auth[7:].strip()
        return given == key

    def _send_truncated(self, payload: bytes) -> None:
        """The ``truncate`` fault: a 200 whose body stops halfway, the connection closed."""
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload[: len(payload) // 2])
        self._hang_up()

    def _reset(self) -> None:
        """Abort the connection with a TCP RST (SO_LINGER 0), like a dropped upstream."""
        with contextlib.suppress(OSError):
            self.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
            )
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.close()

    def _hang_up(self) -> None:
        """Close the connection cleanly (FIN) mid-body: the client sees an incomplete
        message, as when an upstream proxy drops a stream (distinct from a reset)."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.connection.close()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    # -- verbs -----------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path.startswith(BATCH_PATH + "/"):
            self._batches()
            return
        if path.startswith(("/batches/", "/files/")):
            path = "/v1" + path  # an OpenAI client whose base URL has no /v1
        openai_batch = _OPENAI_BATCH.match(path)
        if (openai_batch and openai_batch.group(1).startswith("batch_")) or \
                _OPENAI_FILE_CONTENT.match(path) or _OPENAI_FILE.match(path):
            # /v1/batches/{id} is both APIs' path (Gemini's at /v1 too): OpenAI's ids are
            # batch_…, the Gemini stand-in's never are.
            self._openai_batch_api(path)
            return
        if _GEMINI_BATCH.match(path):
            self._gemini_batch_api(path)
            return
        # The Anthropic Models API (what the preflight asks; Anthropic clients send an
        # anthropic-version header). Another agent's model listing keeps the plain answer.
        if (path.rstrip("/") == "/v1/models" or path.startswith("/v1/models/")) and \
                self.headers.get("anthropic-version"):
            self._models(path)
            return
        # One model looked up in the OpenAI (Codex) or Gemini API: the preflight's question.
        # The Gemini API answers on v1 too (OpenCode's google provider, given a base URL,
        # asks there), told apart by its key header.
        if path.startswith("/v1/models/") and len(path) > len("/v1/models/"):
            self._foreign_model(urllib.parse.unquote(path[len("/v1/models/"):]),
                                gemini=self.headers.get("x-goog-api-key") is not None)
            return
        if _GEMINI_MODEL.match(path):
            self._foreign_model(urllib.parse.unquote(path[len("/v1beta/models/"):]),
                                gemini=True)
            return
        self._other()

    def _foreign_model(self, model: str, *, gemini: bool) -> None:
        """``GET /v1/models/{id}`` (OpenAI) or ``GET /v1beta/models/{id}`` (Gemini API),
        answered as those APIs do: the model, a 404 for an id outside ``StandIn.models``, a
        refused key as 401 (OpenAI) or 400 ``API_KEY_INVALID`` (Gemini)."""
        api = self.api
        status = (400 if gemini else 401) if not self._authorized_any() else (
            404 if api.models is not None and model not in api.models else 200)
        api._record(Recorded("aux", model, self.path, status, time.time(), False,
                             method="GET"))
        if gemini:
            body: dict[str, Any] = (
                {"name": f"models/{model}", "displayName": model} if status == 200 else
                {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message":
                           "API key not valid. Please pass a valid API key.",
                           "details": [{"reason": "API_KEY_INVALID"}]}} if status == 400 else
                {"error": {"code": 404, "status": "NOT_FOUND", "message":
                           f"models/{model} is not found for API version v1beta"}})
        else:
            body = ({"id": model, "object": "model", "owned_by": "skilllift"} if status == 200
                    else {"error": {"type": "invalid_request_error", "code": "invalid_api_key",
                                    "message": "Incorrect API key provided"}} if status == 401
                    else {"error": {"type": "invalid_request_error", "code": "model_not_found",
                                    "message": f"The model '{model}' does not exist"}})
        self._send_json(status, json.dumps(body).encode())

    def _models(self, path: str) -> None:
        """The Models API (``GET /v1/models``, ``GET /v1/models/{id}``): what the preflight
        asks. A refused key is 401, an id outside ``StandIn.models`` 404, as the real API."""
        api = self.api
        model = urllib.parse.unquote(path[len("/v1/models/"):]) if path.startswith(
            "/v1/models/") else ""
        status = (401 if not self._authorized() else
                  404 if model and api.models is not None and model not in api.models else 200)
        api._record(Recorded("aux", model, path, status, time.time(), False, method="GET"))
        if status == 401:
            self._send_error(401, "invalid x-api-key")
        elif status == 404:
            self._send_json(404, json.dumps({"type": "error", "error": {
                "type": "not_found_error", "message": f"model: {model}"}}).encode())
        elif model:
            self._send_json(200, json.dumps({"type": "model", "id": model,
                                             "display_name": model}).encode())
        else:
            ids = sorted(api.models) if api.models is not None else [_DEFAULT_MODEL]
            self._send_json(200, json.dumps({"data": [{"type": "model", "id": i} for i in ids],
                                             "has_more": False}).encode())

    def do_HEAD(self) -> None:
        self._other()

    def do_PUT(self) -> None:
        self._other()

    def do_DELETE(self) -> None:
        path = self.path.split("?", 1)[0]
        if path.startswith("/files/"):
            path = "/v1" + path  # an OpenAI client whose base URL has no /v1
        if _OPENAI_FILE.match(path):
            self._openai_batch_api(path)
        else:
            self._other()

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        if path.rstrip("/") in ("/v1/responses", "/responses"):
            self._dialect_call(CODEX, stream=True)
        elif _GEMINI_PATH.match(path):
            self._dialect_call(GEMINI, stream=path.endswith(":streamGenerateContent"))
        elif path.rstrip("/") == "/v1/messages":
            self._counted = False
            try:
                self._messages()
            finally:
                if self._counted:
                    self.api._depart()
        elif path.rstrip("/") == "/v1/messages/count_tokens":
            self._count_tokens()
        elif path.rstrip("/") == BATCH_PATH:
            self._batches()
        elif path.rstrip("/") in (OPENAI_BATCH_PATH, OPENAI_FILES_PATH, "/batches", "/files"):
            self._openai_batch_api("/v1" + path.rstrip("/").removeprefix("/v1"))
        elif _GEMINI_BATCH_CREATE.match(path):
            self._gemini_batch_api(path)
        else:
            self._other()

    def _openai_batch_api(self, path: str) -> None:
        """OpenAI's Batch API: upload, create, retrieve, file content
        (``testing.foreign_batches.OpenAIBatches``)."""
        api, ts = self.api, time.time()
        raw = self._read_body() if self.command == "POST" else b""
        status: int
        out: Any
        if not self._authorized_any():
            status, out = 401, {"error": {"message": "Incorrect API key provided",
                                          "type": "invalid_request_error", "param": None,
                                          "code": "invalid_api_key"}}
        elif self.command == "POST" and path == OPENAI_FILES_PATH:
            status, out = api.openai_batches.upload(self.headers.get("content-type") or "",
                                                    raw)
        elif self.command == "POST" and path == OPENAI_BATCH_PATH:
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            status, out = api.openai_batches.create(body if isinstance(body, dict) else {})
        elif (m := _OPENAI_BATCH.match(path)) is not None:
            status, out = api.openai_batches.retrieve(m.group(1))
        elif (m := _OPENAI_FILE_CONTENT.match(path)) is not None:
            status, out = api.openai_batches.content(m.group(1))
        elif self.command == "DELETE" and (m := _OPENAI_FILE.match(path)) is not None:
            status, out = api.openai_batches.delete(m.group(1))
        elif self.command == "GET" and (m := _OPENAI_FILE.match(path)) is not None:
            status, out = api.openai_batches.retrieve_file(m.group(1))
        else:
            status, out = 404, {"error": {"message": f"{self.command} {path}"}}
        api._record(Recorded("batch", "", path, status, ts, False, method=self.command,
                             api=jd.RESPONSES))
        if isinstance(out, bytes):
            self.send_response(status)
            self.send_header("content-type", "application/octet-stream")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        self._send_json(status, json.dumps(out).encode())

    def _gemini_batch_api(self, path: str) -> None:
        """Gemini's batch mode: ``models/M:batchGenerateContent`` and ``batches/{id}``
        (``testing.foreign_batches.GeminiBatches``)."""
        api, ts = self.api, time.time()
        raw = self._read_body() if self.command == "POST" else b""
        status: int
        out: Any
        model = ""
        if not self._authorized_any():
            status, out = 400, {"error": {
                "code": 400, "status": "INVALID_ARGUMENT",
                "message": "API key not valid. Please pass a valid API key.",
                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                             "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}
        elif self.command == "POST" and (m := _GEMINI_BATCH_CREATE.match(path)) is not None:
            model = urllib.parse.unquote(m.group(1))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            status, out = api.gemini_batches.create(model, body if isinstance(body, dict)
                                                    else {})
        elif self.command == "GET" and (m := _GEMINI_BATCH.match(path)) is not None:
            status, out = api.gemini_batches.get(m.group(1))
        else:
            status, out = 404, {"error": {"code": 404, "status": "NOT_FOUND",
                                          "message": f"{self.command} {path}"}}
        api._record(Recorded("batch", model, path, status, ts, False, method=self.command,
                             api=jd.GEMINI))
        self._send_json(status, json.dumps(out).encode())

    def _batches(self) -> None:
        """Message Batches: POST create, GET retrieve, GET .../results (``testing.batches``)."""
        api, ts = self.api, time.time()
        raw = self._read_body() if self.command == "POST" else b""
        path = self.path.split("?", 1)[0].rstrip("/")
        if not self._authorized():
            api._record(Recorded("batch", "", path, 401, ts, False, method=self.command))
            self._send_error(401, "invalid x-api-key")
            return
        rest = path[len(BATCH_PATH):].strip("/").split("/")
        status: int
        out: Any
        if self.command == "POST" and rest == [""]:
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            status, out = api.batches.create(body if isinstance(body, dict) else {},
                                             api.base_url)
        elif self.command == "GET" and len(rest) == 1:
            status, out = api.batches.retrieve(rest[0], api.base_url)
        elif self.command == "GET" and len(rest) == 2 and rest[1] == "results":
            status, out = api.batches.results(rest[0])
        else:
            status, out = 404, {"type": "error", "error": {
                "type": "not_found_error", "message": f"{self.command} {path}"}}
        api._record(Recorded("batch", "", path, status, ts, False, method=self.command))
        if isinstance(out, bytes):
            self.send_response(status)
            self.send_header("content-type", "application/binary")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
            return
        self._send_json(status, json.dumps(out).encode())

    def _other(self) -> None:
        """Any path the CLI probes besides the Messages API: a harmless empty answer."""
        raw = self._read_body() if self.command in ("POST", "PUT") else b""
        del raw
        self.api._record(Recorded(kind="aux", model="", path=self.path, status=200,
                                  ts=time.time(), stream=False, method=self.command))
        self._send_json(200, b"{}")

    def _count_tokens(self) -> None:
        raw = self._read_body()
        if not self._authorized():
            self.api._record(Recorded("aux", "", self.path, 401, time.time(), False))
            self._send_error(401, "invalid x-api-key")
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        self.api._record(Recorded("aux", str(body.get("model", "")), self.path, 200,
                                  time.time(), False, body=body))
        tokens = estimate_tokens({k: body.get(k) for k in ("system", "messages", "tools")})
        self._send_json(200, json.dumps({"input_tokens": tokens}).encode())

    def _messages(self) -> None:
        api = self.api
        raw = self._read_body()
        ts = time.time()
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as exc:
            api._record(Recorded("aux", "", self.path, 400, ts, False))
            self._send_error(400, f"request body is not valid JSON: {exc}")
            return
        kind = classify(body)
        model = str(body.get("model", ""))
        stream = bool(body.get("stream"))
        dialect = OPENCODE.name if kind == "agent" and OPENCODE.matches(body) else "messages"

        def record(status: int, fault: str | None = None) -> None:
            api._record(Recorded(kind, model, self.path, status, ts, stream, fault, body=body,
                                 api=dialect))

        if not self._authorized():
            record(401)
            self._send_error(401, "invalid x-api-key")
            return

        if kind == "agent":
            self._counted = True
            if api._arrive(kind):  # above Faults.max_concurrent: a rate limit, at once
                record(429, "429")
                wait = api.faults.retry_after if api.faults else 0
                self._send_error(429, "Too many concurrent requests (injected by StandIn).",
                                 {"retry-after": f"{wait:g}"})
                return

        api._sleep(api.judge_latency_s if kind == "judge" else api.latency_s)

        fault = api._pick_fault(kind)
        if fault in ("429", "529", "500"):
            status = int(fault)
            record(status, fault)
            headers = {}
            if status == 429:
                headers["retry-after"] = f"{api.faults.retry_after if api.faults else 0:g}"
            message = {
                429: "Number of requests has exceeded your rate limit (injected by StandIn).",
                529: "Overloaded (injected by StandIn).",
                500: "Internal server error (injected by StandIn).",
            }[status]
            if status == 529:
                headers["x-should-retry"] = "true"
            self._send_error(status, message, headers)
            return
        if fault == "reset":
            record(0, fault)
            self._reset()
            return
        if fault == "timeout":
            record(0, fault)
            api._sleep(api.faults.hang_s if api.faults else 30.0)
            self._reset()
            return

        handler = api._handler_for(kind)
        if handler is not None and dialect == OPENCODE.name:
            script = handler

            def handler(native: dict[str, Any]) -> Reply:
                return OPENCODE.native_reply(script(OPENCODE.canonical(native)))
        if handler is None:
            record(500)
            self._send_error(
                500, f"no {kind} handler configured on this StandIn "
                     f"(pass {kind}=... to StandIn)")
            return
        try:
            reply = handler(body)
        except Exception as exc:  # a broken script must surface as an API error, not a hang
            record(500)
            self._send_error(500, f"{kind} handler raised {type(exc).__name__}: {exc}")
            return
        msg_id = "msg_01" + uuid.uuid4().hex[:22]
        msg = _message_json(reply, body, msg_id)

        if not stream:
            payload = json.dumps(msg).encode()
            if fault == "truncate":
                record(200, fault)
                self._send_truncated(payload)
                return
            record(200)
            self._send_json(200, payload)
            return

        record(200, fault)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        self.end_headers()
        frames = [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                  for name, data in sse_events(msg)]
        # A truncated stream stops after message_start and part of the first block, the way a
        # dropped upstream connection does: no message_stop, no terminating chunk.
        self._stream_frames(frames, keep=3 if fault == "truncate" else None)

    def _stream_frames(self, frames: list[bytes], *, keep: int | None) -> None:
        """Send SSE ``frames`` as chunks and end the stream; with ``keep``, only that many
        (at most all but the last) and then hang up, as a dropped connection does."""
        cut = len(frames) if keep is None else min(keep, len(frames) - 1)
        try:
            for frame in frames[:cut]:
                self._write_chunk(frame)
            if keep is not None:
                self._hang_up()
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # -- the other agents' APIs ------------------------------------------------------------

    def _dialect_call(self, dialect: Dialect, *, stream: bool) -> None:
        """One Responses (Codex) or Gemini request: translated for the scripted agent
        (:mod:`~pytest_skilllift.testing.dialects`), answered in the API's own stream, with
        the same latency, faults and key check as the Messages API."""
        api, ts = self.api, time.time()
        raw = self._read_body()
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as exc:
            api._record(Recorded("aux", "", self.path, 400, ts, stream, api=dialect.name))
            self._send_error(400, f"request body is not valid JSON: {exc}")
            return
        gem = _GEMINI_PATH.match(self.path.split("?", 1)[0])
        model = gem.group(1) if gem else str(body.get("model", ""))
        # Gemini CLI's non-streaming calls are its side checks, never the conversation.
        kind = "aux" if isinstance(dialect, GeminiDialect) and not stream else "agent"
        judge_api = jd.GEMINI if isinstance(dialect, GeminiDialect) else jd.RESPONSES
        if jd.is_judge_request(judge_api, body):
            # An OpenAI or Google judge (our protocol's marker): graded by the judge script.
            kind = "judge"

        def record(status: int, fault: str | None = None) -> None:
            api._record(Recorded(kind, model, self.path, status, ts, stream, fault, body=body,
                                 api=dialect.name))

        if not self._authorized_any():
            record(401)
            self._send_error(401, "invalid API key")
            return
        api._sleep(api.judge_latency_s if kind == "judge" else api.latency_s)
        fault = api._pick_fault(kind)
        if fault in ("429", "529", "500"):
            record(int(fault), fault)
            self._send_error(int(fault), f"injected {fault} (StandIn)",
                             {"retry-after": "0"} if fault == "429" else None)
            return
        if fault in ("reset", "timeout"):
            record(0, fault)
            if fault == "timeout":
                api._sleep(api.faults.hang_s if api.faults else 30.0)
            self._reset()
            return
        if kind == "judge":
            self._judge_dialect_call(judge_api, body, model, fault, record)
            return
        # Gemini names the model in the path; scripts route on the body's model.
        canonical = dict(dialect.canonical(body), model=model) if kind == "agent" else {}
        if kind == "aux":
            reply = Reply.text(_GEMINI_AUX)
        else:
            handler = api._handler_for("agent")
            assert handler is not None
            try:
                reply = handler(canonical)
            except Exception as exc:  # a broken script is an API error, not a hang
                record(500)
                self._send_error(500, f"agent handler raised {type(exc).__name__}: {exc}")
                return
        usage = {"input": estimate_tokens(body),
                 "output": estimate_tokens(reply.content)}
        if reply.usage:
            usage["input"] = int(reply.usage.get("input_tokens", usage["input"]))
            usage["output"] = int(reply.usage.get("output_tokens", usage["output"]))
        served = reply.model or model
        if isinstance(dialect, CodexDialect):
            frames = [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                      for name, data in responses_events(reply, dialect, served, usage)]
        else:
            assert isinstance(dialect, GeminiDialect)
            chunks = list(gemini_chunks(reply, dialect, served, usage))
            if not stream:
                record(200)
                merged = dict(chunks[-1], candidates=[dict(
                    chunks[-1]["candidates"][0],
                    content={"role": "model", "parts": [p for c in chunks for p in
                                                        c["candidates"][0]["content"]["parts"]]})])
                self._send_json(200, json.dumps(merged).encode())
                return
            frames = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks]
        record(200, fault)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self._stream_frames(frames, keep=2 if fault == "truncate" else None)

    def _judge_dialect_call(self, judge_api: str, body: dict[str, Any], model: str,
                            fault: str | None, record: Any) -> None:
        """A judge request in the Responses or Gemini API: the judge script grades the
        translated body (:mod:`~pytest_skilllift.testing.judge_dialects`), the reply goes back
        as the API's non-streamed response (half of it, then a hang-up, for ``truncate``)."""
        api = self.api
        handler = api._handler_for("judge")
        if handler is None:
            record(500)
            self._send_error(500, "no judge handler configured on this StandIn "
                                  "(pass judge=... to StandIn)")
            return
        try:
            reply = handler(jd.canonical_judge_body(judge_api, body, model))
        except Exception as exc:  # a broken script is an API error, not a hang
            record(500)
            self._send_error(500, f"judge handler raised {type(exc).__name__}: {exc}")
            return
        usage = {"input": estimate_tokens(body), "output": estimate_tokens(reply.content)}
        if reply.usage:
            usage["input"] = int(reply.usage.get("input_tokens", usage["input"]))
            usage["output"] = int(reply.usage.get("output_tokens", usage["output"]))
        payload = json.dumps(jd.native_judge_reply(judge_api, reply, reply.model or model,
                                                   usage)).encode()
        record(200, fault)
        if fault == "truncate":
            self._send_truncated(payload)
            return
        self._send_json(200, payload)

    def _authorized_any(self) -> bool:
        """The key check for every API: ``x-api-key``, ``x-goog-api-key`` or a bearer token."""
        key = self.api.api_key
        if key is None:
            return True
        auth = self.headers.get("authorization") or ""
        given = {self.headers.get("x-api-key"), self.headers.get("x-goog-api-key"),
                 auth[7:].strip() if auth.lower().startswith("bearer ") else None}
        return key in given
