"""The judge's API side: one Messages API call per run, retried, priced.

Talks to Anthropic (or any Messages-API-compatible endpoint: ``base_url`` or
``ANTHROPIC_BASE_URL``) through the official ``anthropic`` SDK. The protocol itself (what is
sent, how the reply is read) is :mod:`pytest_skilllift.judge.protocol`.

Retry policy
    One logical call per run. Transient failures are retried by *our* loop, not the SDK's
    (the client is built with ``max_retries=0``): the SDK's backoff constants are module
    globals (0.5 s doubling to 8 s) that cannot be set per client, it retries silently, and it
    does not cover a body cut off mid-read or a stream that ends without ``message_stop``.
    One loop keeps the attempt count bounded, every retry logged, and tests fast.

    Retried: HTTP 408, 409, 429, 5xx (including 529 overloaded) unless the server says
    ``x-should-retry: false``; connection errors and resets; timeouts; truncated bodies and
    truncated streams. Not retried: other 4xx (bad request, auth, not found) — they will not
    heal. Delay before retry ``n`` (1-based) is ``min(backoff_max_s, backoff_base_s * 2**(n-1))``
    scaled by a jitter factor drawn from [0.5, 1.0], and never shorter than the server's
    ``retry-after``/``retry-after-ms`` (capped at ``max_retry_after_s``). After
    ``max_retries`` retries the run's result is ``JudgeResult(error=<reason>)``: its items stay
    unscored and flagged, never zero (Drupal ai_eval's scoring rules:
    a null score is excluded, not counted as zero).

Deadline
    The SDK's timeout bounds each read, not the call: a server that trickles its headers a byte
    at a time would hold a call forever. Every attempt also has an overall deadline
    (``deadline_s``, twice ``timeout_s`` unless given); an attempt past it is abandoned (its
    connection closed) and counts as a retryable timeout.

Cost
    USD from the reply's ``usage`` and :data:`PRICES` (list prices per million tokens; cache
    writes at 1.25x input, cache reads at 0.1x input). A model the table does not know is
    priced as the newest Opus, and the result says so in ``notes``.

The API key is handed to the SDK and nowhere else: it is never written, logged or put in a
result (error texts are scrubbed of it as a second line of defence).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from pytest_skilllift.judge.protocol import (
    EVIDENCE_POLICIES,
    EvidencePolicy,
    JudgeRequest,
    ReplyMode,
    build_judge_request,
    parse_judge_reply,
)
from pytest_skilllift.model import JudgeResult, RubricItem, key_refused

__all__ = [
    "KEY_REFUSED",
    "PRICES",
    "Judge",
    "ReplyParts",
    "default_judge_model",
    "estimate_cost",
    "status_failure",
]

log = logging.getLogger("pytest_skilllift.judge.protocol")

#: File in a run directory holding the judge's spend for that run (qdrant name).


# ---------------------------------------------------------------------------------------------
# Prices

#: List prices in USD per million tokens, ``(input, output)``, by family and the first version
#: a price applies from (Anthropic pricing page; check when a new generation ships).
#: Lookup takes the family's entry with the highest version <= the model's version, so a
#: newer model than the table knows is priced like the newest listed one of its family.
#: A model of a newer *major* version than its family's last row is priced by that row, and
#: the result's ``notes`` say the price is assumed.
PRICES: dict[str, tuple[tuple[tuple[int, int], float, float], ...]] = {
    "opus": (((3, 0), 15.0, 75.0), ((4, 0), 15.0, 75.0), ((4, 5), 5.0, 25.0)),
    "sonnet": (((3, 0), 3.0, 15.0), ((3, 7), 3.0, 15.0), ((4, 0), 3.0, 15.0),
               ((4, 5), 3.0, 15.0)),
    "haiku": (((3, 0), 0.25, 1.25), ((3, 5), 0.80, 4.0), ((4, 5), 1.0, 5.0)),
}
CACHE_WRITE_FACTOR = 1.25  # 5-minute cache writes
CACHE_READ_FACTOR = 0.10

# claude-opus-4-5-20251101, claude-sonnet-4, claude-haiku-4-5 (family first) ...
_NEW_STYLE = re.compile(r"claude-(opus|sonnet|haiku)-(\d+)(?:-(\d{1,2}))?(?:-(\d{8}))?(?:$|[-@:])")
# ... and claude-3-5-haiku-20241022, claude-3-opus-20240229 (version first).
_OLD_STYLE = re.compile(r"claude-(\d+)(?:-(\d{1,2}))?-(opus|sonnet|haiku)")


def _parse_model(model: str) -> tuple[str, tuple[int, int], str] | None:
    """``(family, (major, minor), date)`` of a Claude model id, or None."""
    name = model.lower()
    m = _NEW_STYLE.search(name)
    if m:
        return m[1], (int(m[2]), int(m[3] or 0)), m[4] or ""
    m = _OLD_STYLE.search(name)
    if m:
        return m[3], (int(m[1]), int(m[2] or 0)), ""
    return None


def _rates(model: str) -> tuple[float, float, str | None]:
    """``(input, output, note)`` rates per million tokens for ``model``."""
    parsed = _parse_model(model)
    if parsed is None:
        _version, rate_in, rate_out = PRICES["opus"][-1]
        return rate_in, rate_out, (
            f"judge model {model!r} is not in the price table; priced as the newest Opus "
            f"(${rate_in:g}/${rate_out:g} per MTok)"
        )
    family, version, _date = parsed
    applicable = [row for row in PRICES[family] if row[0] <= version] or [PRICES[family][0]]
    listed, rate_in, rate_out = applicable[-1]
    if version[0] > listed[0]:
        return rate_in, rate_out, (
            f"judge model {model!r} is newer than the price table; priced as "
            f"{family} {listed[0]}.{listed[1]} (${rate_in:g}/${rate_out:g} per MTok)"
        )
    return rate_in, rate_out, None


def _usage_field(usage: Any, name: str) -> int:
    value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
    return int(value or 0)


def estimate_cost(model: str, usage: Any) -> tuple[float, str | None]:
    """USD cost of one reply from its ``usage`` (SDK object or dict), and a pricing note.

    The note is None when the model's family is in :data:`PRICES`.
    """
    rate_in, rate_out, note = _rates(model)
    if usage is None:
        return 0.0, "the reply carried no usage; cost recorded as 0"
    tokens_in = _usage_field(usage, "input_tokens")
    tokens_out = _usage_field(usage, "output_tokens")
    cache_write = _usage_field(usage, "cache_creation_input_tokens")
    cache_read = _usage_field(usage, "cache_read_input_tokens")
    cost = (
        tokens_in * rate_in
        + cache_write * rate_in * CACHE_WRITE_FACTOR
        + cache_read * rate_in * CACHE_READ_FACTOR
        + tokens_out * rate_out
    ) / 1_000_000
    return cost, note


# ---------------------------------------------------------------------------------------------
# Model choice


def default_judge_model() -> str:
    """The judge model when none is given: the id pinned in ``config.OPTIONS``
    (``judge-model``). A pinned id, not "the newest the installed SDK lists": a measurement
    must not change its judge because a dependency was upgraded."""
    from pytest_skilllift.config import option_default

    return str(option_default("judge-model"))


# ---------------------------------------------------------------------------------------------
# The client


@dataclasses.dataclass(frozen=True)
class ReplyParts:
    """What :meth:`Judge.grade` needs of one provider reply, in one shape."""

    content: list[Any]
    model: str
    cost_usd: float
    price_note: str | None
    cut_off: bool


class _CallFailed(Exception):
    """The judge call failed for good; ``reason`` is what the result will say."""

    def __init__(self, reason: str, notes: Sequence[str] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.notes = tuple(notes)


class _TruncatedReply(Exception):
    """A reply that arrived incomplete (a stream without ``message_stop``)."""


def _parse_retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds form), else None."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except (TypeError, ValueError):
            continue  # an HTTP-date: rare from this API; the backoff applies instead
        if value >= 0:
            return value
    return None


#: What a judge error says when the API refused the key, whichever way the provider says it
#: (401, 403, Google's 400 ``API_KEY_INVALID``): the judge's circuit breaker reads it
#: (:func:`~pytest_skilllift.run.breaker.judge_cause`), for direct calls and batches alike.
KEY_REFUSED = "the API refused the key"


def status_failure(status: int, kind: str, headers: Any,
                   body: str = "") -> tuple[bool, str, float | None]:
    """``(retryable, reason, retry_after_s)`` of an HTTP error status, for every provider:
    408, 409, 429 and 5xx are retried unless the server says ``x-should-retry: false``. A
    refused key (:func:`~pytest_skilllift.model.key_refused`: ``body`` is the error body as
    text, where Google names ``API_KEY_INVALID`` in a 400) is never retried and its reason
    says :data:`KEY_REFUSED`."""
    reason = f"HTTP {status} {kind}"
    if key_refused(status, body):
        return False, f"{reason} ({KEY_REFUSED})", None
    if headers is not None and headers.get("x-should-retry") == "false":
        return False, reason, None
    return status in (408, 409, 429) or status >= 500, reason, _parse_retry_after(headers)


def _classify(err: BaseException, timeout_s: float) -> tuple[bool, str, float | None]:
    """``(retryable, reason, retry_after_s)`` for an exception raised by one attempt."""
    import anthropic

    if isinstance(err, _TruncatedReply):
        return True, f"truncated reply: {err}", None
    if isinstance(err, DeadlineExceeded):
        return True, str(err), None
    if isinstance(err, anthropic.APIStatusError):
        status = err.status_code
        headers = getattr(err.response, "headers", None)
        body = err.body if isinstance(err.body, Mapping) else {}
        detail = body.get("error", {}) if isinstance(body.get("error"), Mapping) else {}
        kind = detail.get("type") or type(err).__name__
        return status_failure(status, str(kind), headers)
    if isinstance(err, anthropic.APITimeoutError):
        return True, f"timed out after {timeout_s:g}s", None
    if isinstance(err, anthropic.APIConnectionError):
        cause = err.__cause__ or err.__context__
        return True, f"connection error ({type(cause).__name__ if cause else 'no detail'})", None
    if isinstance(err, anthropic.APIResponseValidationError):
        return True, "malformed response body", None
    import httpx2  # the SDK's HTTP library, present whenever the SDK is

    if isinstance(err, httpx2.TransportError):
        # Raised while reading a streamed body: the connection dropped mid-reply.
        return True, f"truncated stream ({type(err).__name__})", None
    if isinstance(err, ValueError):
        # A body cut short decodes as invalid JSON.
        return True, f"undecodable response ({type(err).__name__})", None
    if isinstance(err, anthropic.AnthropicError):
        return False, f"{type(err).__name__}: {err}", None
    if isinstance(err, TypeError) and "authentication method" in str(err):
        # The SDK raises a bare TypeError at request time when it has no credentials.
        return False, "no credentials for the judge (set ANTHROPIC_API_KEY)", None
    raise err  # not an API failure: a bug, which must not be disguised as a judge outage


#: Called with the wait (seconds) each time a judge call is rate limited (HTTP 429/529) and
#: retried: the session's concurrency limit (``run.concurrency``) backs off on it too.
RATE_LIMIT_LISTENERS: list[Callable[[float], None]] = []


class DeadlineExceeded(Exception):
    """An attempt got no complete reply within its overall deadline."""


_T = TypeVar("_T")


def call_with_deadline(fn: Callable[[], _T], deadline_s: float,
                       abandon: Callable[[], None] = lambda: None) -> _T:
    """``fn()``'s result, or :class:`DeadlineExceeded` once ``deadline_s`` seconds passed.

    The SDK's timeout is per read: a server that trickles a header byte every few seconds
    never trips it, and the call never returns. ``fn`` runs in a daemon thread that the
    caller stops waiting for at the deadline (``abandon`` then closes its connection); a
    daemon thread never keeps the interpreter from exiting."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="skilllift-judge-call", daemon=True)
    thread.start()
    thread.join(deadline_s)
    if thread.is_alive():
        with contextlib.suppress(Exception):
            abandon()
        raise DeadlineExceeded(f"no complete reply within {deadline_s:g}s (overall deadline)")
    if "error" in box:
        raise box["error"]
    return cast("_T", box.get("value"))  # no "error": target() stored fn()'s value


class Judge:
    """The blind LLM judge: :meth:`grade` makes one Messages API call per run.

    ``model`` defaults to :func:`default_judge_model`; ``api_key`` / ``base_url`` default to the
    SDK's own resolution (``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL``). The keyword-only
    knobs after ``max_tokens`` exist for tests and unusual endpoints: ``reply_mode="text"``
    for an endpoint without tool support, small ``backoff_*`` values for fast tests,
    ``stream=True`` to read the reply as server-sent events. ``evidence`` is the policy for a
    met/violated whose quote is not in the answer (``reject``, the default, or ``flag``).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 6,
        timeout_s: float = 120.0,
        deadline_s: float | None = None,
        max_tokens: int = 4096,
        reply_mode: ReplyMode = "tool",
        stream: bool = False,
        temperature: float | None = None,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 60.0,
        max_retry_after_s: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        evidence: EvidencePolicy = "reject",
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, not {max_retries}")
        if evidence not in EVIDENCE_POLICIES:
            raise ValueError(f"evidence must be one of {', '.join(EVIDENCE_POLICIES)}, "
                             f"not {evidence!r}")
        self.evidence: EvidencePolicy = evidence
        self.model = model or default_judge_model()
        self.base_url = base_url
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        #: The whole of one attempt (connect, headers, body), whatever the reads do.
        self.deadline_s = deadline_s if deadline_s is not None else 2 * timeout_s
        self.max_tokens = max_tokens
        self.reply_mode: ReplyMode = reply_mode
        self.stream = stream
        self.temperature = temperature
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.max_retry_after_s = max_retry_after_s
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.__api_key = api_key  # name-mangled and excluded from repr: never echoed
        self._client: Any = None

    def __repr__(self) -> str:
        return (
            f"Judge(model={self.model!r}, base_url={self.base_url!r}, "
            f"max_retries={self.max_retries}, timeout_s={self.timeout_s:g})"
        )

    # -- public ----------------------------------------------------------------------------

    def grade(
        self,
        prompt_text: str,
        answer: str,
        items: Sequence[RubricItem],
        seed: int | str,
    ) -> JudgeResult:
        """Grade one run's final answer against its rubric: one API call, blind, shuffled.

        Never raises for an API failure: the result carries ``error`` and lists every item as
        ungraded. An empty answer is not sent (nothing to grade, nothing to pay for).
        """
        items = tuple(items)
        if not items:
            return JudgeResult(verdicts=(), cost_usd=0.0, model=self.model,
                               evidence_policy=self.evidence)
        if not answer.strip():
            return JudgeResult(
                verdicts=(), cost_usd=0.0, model=self.model,
                error="no gradeable answer (the final answer is empty)", ungraded=items,
                evidence_policy=self.evidence,
            )
        request = build_judge_request(prompt_text, answer, items, seed,
                                      reply_mode=self.reply_mode)
        kwargs = self._request_kwargs(request)
        try:
            message, retry_notes = self._call(kwargs)
        except _CallFailed as failed:
            return JudgeResult(
                verdicts=(), cost_usd=0.0, model=self.model,
                error=self._scrub(failed.reason), ungraded=items,
                notes=tuple(self._scrub(n) for n in failed.notes),
                calls=1, evidence_policy=self.evidence,
            )
        reply = self._read_reply(message)
        result = parse_judge_reply(request, reply.content, model=reply.model,
                                   cost_usd=reply.cost_usd, evidence=self.evidence)
        notes = list(retry_notes)
        if reply.price_note:
            notes.append(reply.price_note)
        error = result.error
        if reply.cut_off:
            # A cut-off reply may still carry some verdicts; the rest are ungraded, and the
            # cause must be visible (raise max_tokens), not read as a judge that skipped items.
            notes.append(f"judge reply cut off at max_tokens={self.max_tokens}")
            if error:
                error = f"judge reply cut off at max_tokens={self.max_tokens}: {error}"
        return dataclasses.replace(
            result, error=error, notes=tuple(self._scrub(n) for n in (*notes, *result.notes)),
            calls=1,
        )

    def prepare(self) -> None:
        """Import the provider's SDK now (≈ 3,500 modules, seconds of CPU on a small machine)
        instead of in the first :meth:`grade`: a judge built ahead of use (the judge
        service's warm-up under xdist) is then ready when the first runs are. A missing
        SDK is still reported by that first grade, as before."""
        with contextlib.suppress(ImportError):
            importlib.import_module(self.sdk_module)

    def close(self) -> None:
        """Close the SDK client's connection pool (a later :meth:`grade` opens a new one)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- internals -------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        for key in (self.__api_key, *(os.environ.get(var) for var in self.key_vars)):
            if key:
                text = text.replace(key, "***")
        return text

    @property
    def _api_key(self) -> str | None:
        """The key handed to the SDK (None: the SDK reads its own variables)."""
        return self.__api_key

    # -- what a provider's judge overrides (the rest is the same protocol) -----------------

    #: The module :meth:`prepare` imports, and the variables whose values are scrubbed.
    sdk_module = "anthropic"
    key_vars: tuple[str, ...] = ("ANTHROPIC_API_KEY",)
    #: The batch API this judge can grade through, "" when it grades directly only.
    batch_api = "Message Batches"

    def _request_kwargs(self, request: JudgeRequest) -> dict[str, Any]:
        """The SDK call's keyword arguments for one blind request (Messages API)."""
        kwargs = request.api_kwargs(self.model, self.max_tokens)
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        return kwargs

    def _read_reply(self, message: Any) -> ReplyParts:
        """The reply as content blocks (the Messages shape :func:`parse_judge_reply` reads),
        the model that answered, its cost and whether it was cut off at ``max_tokens``."""
        replied_model = str(getattr(message, "model", "") or self.model)
        cost, price_note = estimate_cost(replied_model, getattr(message, "usage", None))
        content = [
            block.model_dump() if hasattr(block, "model_dump") else block
            for block in getattr(message, "content", []) or []
        ]
        return ReplyParts(content, replied_model, cost, price_note,
                          getattr(message, "stop_reason", None) == "max_tokens")

    def _classify_error(self, err: BaseException) -> tuple[bool, str, float | None]:
        """``(retryable, reason, retry_after_s)`` of one failed attempt (re-raises a bug)."""
        return _classify(err, self.timeout_s)

    def _get_client(self) -> Any:
        if self._client is None:
            import anthropic

            self._client = anthropic.Anthropic(
                api_key=self._api_key,
                base_url=self.base_url,
                timeout=self.timeout_s,
                max_retries=0,  # our loop retries; see the module docstring
            )
        return self._client

    def _attempt(self, kwargs: dict[str, Any]) -> Any:
        """One call, bounded by an overall deadline (``deadline_s``, default twice the
        per-read timeout): a connection that never completes its reply is abandoned."""
        client = self._get_client()

        def abandon() -> None:
            self._client = None  # the next attempt opens a new connection pool
            client.close()

        return call_with_deadline(lambda: self._attempt_on(client, kwargs),
                                  self.deadline_s, abandon)

    def _attempt_on(self, client: Any, kwargs: dict[str, Any]) -> Any:
        if not self.stream:
            return client.messages.create(**kwargs)
        with client.messages.stream(**kwargs) as stream:
            for _event in stream:
                pass
            message = stream.get_final_message()
        if getattr(message, "stop_reason", None) is None:
            raise _TruncatedReply("stream ended before message_stop")
        return message

    def _delay(self, retry: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        backoff = min(self.backoff_max_s, self.backoff_base_s * 2 ** (retry - 1))
        delay: float = backoff * (0.5 + 0.5 * self._rng.random())
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_retry_after_s))
        return delay

    def _call(self, kwargs: dict[str, Any]) -> tuple[Any, list[str]]:
        """The message, and one note per retry taken; raises :class:`_CallFailed`."""
        notes: list[str] = []
        attempts = self.max_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return self._attempt(kwargs), notes
            except Exception as err:
                # _classify re-raises anything that is not an API/transport failure.
                retryable, reason, retry_after = self._classify_error(err)
            reason = self._scrub(reason)
            if not retryable or attempt == attempts:
                final = (f"judge call failed: {reason} (not retryable)" if not retryable else
                         f"judge call failed after {attempts} attempts; last error: {reason}")
                log.error("%s; the run's items stay ungraded", final)
                raise _CallFailed(final, notes)
            delay = self._delay(attempt, retry_after)
            if reason.startswith(("HTTP 429", "HTTP 529")):
                for listener in RATE_LIMIT_LISTENERS:  # the session's concurrency limit
                    with contextlib.suppress(Exception):
                        listener(delay)
            log.warning(
                "judge call attempt %d/%d failed (%s); retrying in %.2fs",
                attempt, attempts, reason, delay,
            )
            notes.append(f"attempt {attempt} failed ({reason}); retried after {delay:.2f}s")
            self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover
