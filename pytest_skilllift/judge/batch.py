"""Grading through a provider's batch API: half the price, results within 24 hours.

:class:`BatchJudge` grades through Anthropic's Message Batches API; its subclasses in
:mod:`~pytest_skilllift.judge.foreign_batch` through OpenAI's Batch API and Gemini's batch mode,
with everything below the same (the transport is four hooks: create, retrieve, results, and
how one reply is read). :class:`BatchJudge` grades a list of judge requests — each the same request
:func:`~pytest_skilllift.judge.protocol.build_judge_request` makes for a direct call, keyed by
a ``custom_id`` (the run id, plus the sample when a run is judged more than once) — and maps
the results back by ``custom_id`` (the API returns them in any order).

* **Within the API's limits.** Requests are submitted in chunks of at most
  :data:`MAX_BATCH_REQUESTS` requests and :data:`MAX_BATCH_BYTES` of request body per batch.
* **Resumable, never paid twice.** Each batch id is written to ``<week>/judge-batches.json``
  (with the ``custom_id`` and a digest of each request it carries) the moment the API returns
  it, before any polling. A session that is interrupted and started again finds its requests
  there and polls those batches instead of submitting them again; a changed request (another
  judge model, an edited rubric) does not match its digest and is submitted anew.
  ``--fresh`` starts a new *epoch*: older batches are kept on file but no longer reused.
* **Errored, never zero.** A request that comes back ``errored``, ``expired`` or ``canceled``
  is submitted again in a new batch, up to ``retries`` more times (counted across sessions, so
  resuming does not reset the count); after that its run is ungraded, with the reason, and is
  never scored as zero (Drupal ai_eval's scoring rules: a null score is excluded).
* **Priced at the batch rate.** The cost of each reply is computed from the usage the API
  returned, at :data:`BATCH_PRICE_FACTOR` of the list price (each provider's published batch
  discount: 50% for Anthropic's Message Batches, OpenAI's Batch API and Gemini's batch mode).

The whole pass runs under a lock on the week's batch file, so under pytest-xdist one worker
submits and polls while the others wait for it (and then find their runs graded).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilllift.judge.client import ReplyParts, default_judge_model, estimate_cost
from pytest_skilllift.judge.protocol import (
    EVIDENCE_POLICIES,
    EvidencePolicy,
    JudgeRequest,
    ReplyMode,
    parse_judge_reply,
)
from pytest_skilllift.model import ANTHROPIC, JudgeResult
from pytest_skilllift.week.files import BATCHES_FILE, atomic_write_json, file_lock, utc_stamp

__all__ = [
    "BATCH_PRICE_FACTOR",
    "MAX_BATCH_BYTES",
    "MAX_BATCH_REQUESTS",
    "BatchJudge",
    "BatchRequest",
    "BatchStore",
    "custom_id",
]

#: Batches are billed at 50% of the standard API prices: Anthropic's Message Batches, OpenAI's
#: Batch API and Gemini's batch mode publish the same discount.
BATCH_PRICE_FACTOR = 0.5
#: Limits of one Message Batch: 100,000 requests or 256 MB, whichever is reached first.
MAX_BATCH_REQUESTS = 100_000
MAX_BATCH_BYTES = 256 * 1024 * 1024
#: Overall deadline of one control-plane call (create, retrieve, results), in seconds.
CONTROL_DEADLINE_S = 600.0
#: What the API accepts as a ``custom_id`` (the stand-in, ``testing.batches``, enforces it).
CUSTOM_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_LOCK_SUFFIX = ".lock"


def custom_id(run_id: str, sample: int | str = 1) -> str:
    """The request's ``custom_id``: the run id (``<run id>__s<k>`` for judge sample k > 1,
    ``<run id>__<name>`` for a named extra call such as ``"tie"``, the tie-break).

    A run id the API would refuse (over 64 characters, or characters outside
    ``[A-Za-z0-9_-]``) is shortened and cleaned, with a digest of the whole id appended so
    two runs never share one; the batch file keeps the mapping either way."""
    base = (run_id if sample == 1 else f"{run_id}__s{sample}" if isinstance(sample, int)
            else f"{run_id}__{sample}")
    if CUSTOM_ID_PATTERN.match(base):
        return base
    digest = hashlib.sha256(base.encode()).hexdigest()[:12]
    clean = re.sub(r"[^A-Za-z0-9_-]", "-", base)[: 64 - len(digest) - 1]
    return f"{clean}-{digest}"


def _digest(params: dict[str, Any], boundary: str = "") -> str:
    """What identifies a request across sessions: its body, with the request's random section
    boundary (drawn anew each time a request is built) masked out."""
    body = json.dumps(params, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    if boundary:
        body = body.replace(boundary, "<boundary>")
    return hashlib.sha256(body.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class BatchRequest:
    """One judge request of a batch: the id, the request (to read its reply) and its params."""

    custom_id: str
    request: JudgeRequest
    params: dict[str, Any]

    @property
    def digest(self) -> str:
        """The request's content digest (its parameters and item boundary)."""
        return _digest(self.params, self.request.boundary)

    @property
    def size(self) -> int:
        """Bytes this request adds to a batch's body."""
        return len(json.dumps({"custom_id": self.custom_id, "params": self.params}).encode())


# ---------------------------------------------------------------------------------------------
# The batch file


class BatchStore:
    """``<week>/judge-batches.json``: every batch submitted for the week's grading.

    ``{"epoch": e, "batches": [{"id", "api", "epoch", "created_utc", "status", "counts",
    "requests": {custom_id: digest}}]}`` (``api``: the provider whose batch it is, absent —
    Anthropic — in files written before other providers batched); written atomically after
    each change. One store may serve several judges at once (a panel's, one thread each):
    its changes are serialized, and :meth:`locked` is held once for all of them."""

    def __init__(self, week_dir: Path) -> None:
        self.path = Path(week_dir) / BATCHES_FILE
        self.data: dict[str, Any] = {"epoch": 0, "batches": []}
        self._mutex = threading.RLock()
        self._depth = 0

    @contextlib.contextmanager
    def locked(self) -> Iterator[BatchStore]:
        """Exclusive across processes for the whole pass; loads the file on entry. Taken
        again while held (a panel's judges inside one grading step) it is not locked twice
        (``flock`` on a second descriptor of the same file would wait for itself)."""
        if self._depth:
            yield self
            return
        with file_lock(self.path.with_name(self.path.name + _LOCK_SUFFIX)):
            self.load()
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1

    def load(self) -> None:
        """Read the batch file (empty when absent; ValueError, naming it, when unreadable)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            data = {}
        except (OSError, ValueError) as exc:
            raise ValueError(
                f"{self.path}: cannot be read ({exc}); it lists the Message Batches already "
                "paid for. Restore it, or delete it to submit every ungraded run again"
            ) from None
        batches = data.get("batches") if isinstance(data, dict) else None
        self.data = {"epoch": int(data.get("epoch", 0)) if isinstance(data, dict) else 0,
                     "batches": batches if isinstance(batches, list) else []}

    def save(self) -> None:
        """Write the batch file atomically."""
        with self._mutex:
            atomic_write_json(self.path, self.data)

    @property
    def epoch(self) -> int:
        """The store's epoch (``--fresh`` starts a new one: older batches are not reused)."""
        return int(self.data["epoch"])

    @property
    def batches(self) -> list[dict[str, Any]]:
        """The batches on file (a copy of the list)."""
        return list(self.data["batches"])

    def attempts(self, cid: str, digest: str, api: str = ANTHROPIC) -> list[dict[str, Any]]:
        """Batches of the current epoch (of provider ``api``) that carried this exact request,
        oldest first."""
        with self._mutex:
            return [b for b in self.data["batches"]
                    if b.get("epoch") == self.epoch and b.get("api", ANTHROPIC) == api
                    and b.get("requests", {}).get(cid) == digest]

    def requests_of(self, batch_id: str) -> list[str]:
        """The ``custom_id`` values a batch on file carried, in the order it was sent."""
        with self._mutex:
            return [str(c) for b in self.data["batches"] if b.get("id") == batch_id
                    for c in b.get("requests", {})]

    def add(self, batch_id: str, requests: Sequence[BatchRequest],
            api: str = ANTHROPIC) -> None:
        """Record a submitted batch and the requests it carries."""
        with self._mutex:
            self.data["batches"].append({
                "id": batch_id, "api": api, "epoch": self.epoch, "created_utc": utc_stamp(),
                "status": "in_progress", "counts": {},
                "requests": {r.custom_id: r.digest for r in requests}})
            self.save()

    def mark(self, batch_id: str, status: str, counts: dict[str, int]) -> None:
        """Record a batch's status and request counts (written only when they changed)."""
        with self._mutex:
            for b in self.data["batches"]:
                if b.get("id") == batch_id and (b.get("status"), b.get("counts")) != (
                        status, counts):
                    b["status"], b["counts"] = status, counts
                    self.save()

    def files(self, batch_id: str, deleted: Sequence[str], left: dict[str, str]) -> None:
        """Record what became of the files the provider kept for a batch: ``deleted`` ids,
        and ``left`` (id → why it could not be deleted), so a file left on the provider's
        storage is named in the week, not only in one session's log."""
        with self._mutex:
            for b in self.data["batches"]:
                if b.get("id") != batch_id:
                    continue
                record = b.get("files") if isinstance(b.get("files"), dict) else {}
                gone = sorted({*record.get("deleted", []), *deleted})
                still = {k: v for k, v in dict(record.get("left") or {}, **left).items()
                         if k not in gone}
                b["files"] = {"deleted": gone, "left": still}
                self.save()

    def files_left(self) -> dict[str, str]:
        """Every provider file of the current epoch's batches that could not be deleted
        (id → why), for the session's batch line."""
        with self._mutex:
            return {str(k): str(v) for b in self.data["batches"]
                    if b.get("epoch") == self.epoch and isinstance(b.get("files"), dict)
                    for k, v in (b["files"].get("left") or {}).items()}

    def new_epoch(self) -> None:
        """``--fresh``: keep the record of what was paid, stop reusing it."""
        self.data["epoch"] = self.epoch + 1
        self.save()


def forget_batches(week_dir: Path) -> bool:
    """Start a new epoch in the week's batch file, if it has one (a fresh regrade)."""
    store = BatchStore(week_dir)
    if not store.path.exists():
        return False
    with store.locked():
        store.new_epoch()
    return True


# ---------------------------------------------------------------------------------------------
# The judge


def _plain(obj: Any) -> Any:
    """SDK models → plain dicts (the JSONL lines arrive as SDK objects)."""
    return obj.model_dump() if hasattr(obj, "model_dump") else obj


def _why_not(result: dict[str, Any] | None) -> str:
    """A person's words for a result that carries no message."""
    if result is None:
        return "the batch's results do not list this request"
    kind = result.get("type", "unknown")
    if kind == "errored":
        err = result.get("error") or {}
        inner = err.get("error", err) if isinstance(err, dict) else {}
        return (f"batch request errored ({inner.get('type', 'error')}: "
                f"{inner.get('message', 'no message')})")
    if kind == "expired":
        return "batch request expired (the batch ended before it was processed)"
    if kind == "canceled":
        return "batch request canceled"
    return f"batch request ended as {kind!r}"


class BatchJudge:
    """Grades judge requests through the Message Batches API, resumably (module docstring).

    A provider's batch judge (``judge.foreign_batch``) overrides the class attributes below
    and the transport hooks (``request``, ``_api``, ``_create``, ``_retrieve``, ``_results``,
    ``_reply_parts``, ``_api_errors``); the pass, the batch file, the retries and the price
    are this class's. ``store`` shares one batch file (and its lock) between the judges of a
    panel.

    ``model`` defaults to :func:`default_judge_model`; ``api_key``/``base_url`` to the SDK's own
    resolution. ``poll_s`` is the wait between polls of a pending batch, ``retries`` how many
    more batches an errored/expired request may be submitted in, ``max_requests`` and
    ``max_bytes`` the chunk limits (the API's by default), ``log`` receives one line per event
    (submitted, polled, ended, retried). ``evidence`` is the policy for a met/violated whose
    quote is not in the answer, as for the direct judge."""

    def __init__(
        self,
        week_dir: Path,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 4096,
        reply_mode: ReplyMode = "tool",
        poll_s: float = 30.0,
        retries: int = 1,
        max_requests: int = MAX_BATCH_REQUESTS,
        max_bytes: int = MAX_BATCH_BYTES,
        sleep: Callable[[float], None] = time.sleep,
        log: Callable[[str], None] | None = None,
        evidence: EvidencePolicy = "reject",
        store: BatchStore | None = None,
    ) -> None:
        if evidence not in EVIDENCE_POLICIES:
            raise ValueError(f"evidence must be one of {', '.join(EVIDENCE_POLICIES)}, "
                             f"not {evidence!r}")
        self.evidence: EvidencePolicy = evidence
        if retries < 0 or max_requests < 1 or max_bytes < 1 or poll_s < 0:
            raise ValueError("retries >= 0, max_requests >= 1, max_bytes >= 1, poll_s >= 0")
        self.store = store if store is not None else BatchStore(week_dir)
        self.model = model or default_judge_model()
        self.max_tokens = max_tokens
        self.reply_mode: ReplyMode = reply_mode
        self.poll_s = poll_s
        self.retries = retries
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self._sleep = sleep
        self._log = log or (lambda _line: None)
        self.__api_key = api_key  # never echoed (see Judge)
        self.base_url = base_url
        self._client: Any = None
        #: What the last ``grade`` did: batches submitted / polled, requests retried.
        self.submitted: list[str] = []
        self.resumed: list[str] = []
        self.retried: list[str] = []
        #: Provider files (a batch's input, output and error files) deleted once the results
        #: were read, and those that could not be (id → why): never a silent leftover.
        self.deleted: list[str] = []
        self.undeleted: dict[str, str] = {}

    #: The provider (``judge-batches.json``'s ``api``), the API's name (the terminal's and
    #: the cost note's words) and one batch's name in the log.
    provider = ANTHROPIC
    api_name = "Message Batches"
    batch_word = "Message Batch"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def _api_key(self) -> str | None:
        return self.__api_key

    def request(self, cid: str, request: JudgeRequest) -> BatchRequest:
        """The batch entry for one judge request (the same body a direct call sends)."""
        return BatchRequest(cid, request, request.api_kwargs(self.model, self.max_tokens))

    # -- the API -------------------------------------------------------------------------------

    def _api(self) -> Any:
        if self._client is None:
            import anthropic

            # Control-plane calls (create, retrieve, results) are few and idempotent to
            # retry except create; the SDK's own backoff covers 429/5xx for them.
            self._client = anthropic.Anthropic(api_key=self.__api_key, base_url=self.base_url,
                                               max_retries=4)
        return self._client

    def close(self) -> None:
        """Close the API client, if one was opened."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def _bounded(self, call: Callable[[], Any]) -> Any:
        """``call()`` within :data:`CONTROL_DEADLINE_S` (the SDK's timeout is per read: a
        server trickling its reply would hold the pass forever); ``DeadlineExceeded``."""
        from pytest_skilllift.judge.client import call_with_deadline

        client = self._client

        def abandon() -> None:
            self._client = None
            if client is not None:
                client.close()

        return call_with_deadline(call, CONTROL_DEADLINE_S, abandon)

    def _create(self, chunk: Sequence[BatchRequest]) -> str:
        api = self._api()
        batch = self._bounded(lambda: api.messages.batches.create(
            requests=[{"custom_id": r.custom_id, "params": r.params} for r in chunk]))
        return str(batch.id)

    def _retrieve(self, batch_id: str) -> tuple[str, dict[str, int]]:
        api = self._api()
        batch = self._bounded(lambda: api.messages.batches.retrieve(batch_id))
        counts = _plain(batch.request_counts) or {}
        return str(batch.processing_status), {k: int(v) for k, v in counts.items()}

    def _results(self, batch_id: str) -> dict[str, dict[str, Any]]:
        """``custom_id`` → ``{"type": "succeeded", "message": …}`` or ``{"type": "errored" |
        "expired" | "canceled", "error": {"type", "message"}}`` (the Message Batches shape,
        which the other providers' hooks translate into)."""
        import anthropic

        api = self._api()

        def read() -> dict[str, dict[str, Any]]:
            out: dict[str, dict[str, Any]] = {}
            for line in api.messages.batches.results(batch_id):
                entry = _plain(line)
                out[str(entry["custom_id"])] = _plain(entry["result"])
            return out

        try:
            return dict(self._bounded(read))
        except anthropic.NotFoundError:
            # Results are kept 29 days: older ones read as "not listed" and are resubmitted.
            self._log(f"Message Batch {batch_id}: its results are no longer available")
            return {}

    def _api_errors(self) -> tuple[type[BaseException], ...]:
        """The SDK's errors that mean the service refused or could not be reached."""
        import anthropic

        return (anthropic.APIError,)

    def _files_of(self, batch_id: str) -> list[str]:
        """The files the provider keeps for an ended batch (its input, output and error
        files), deleted once its results are read; none for Message Batches (no files) and
        Gemini's inlined requests."""
        return []

    def _delete_file(self, file_id: str) -> None:
        """Delete one provider file; a file already gone (404) is no failure."""
        raise NotImplementedError(f"{self.api_name} keeps no files")

    def _tidy(self, batch_id: str) -> None:
        """Delete the files an ended batch left on the provider's storage (the graded
        answers, the verdicts) now that its results are read. What cannot be deleted is
        logged, counted (``undeleted``) and recorded in the batch file."""
        from pytest_skilllift.judge.client import DeadlineExceeded

        refused: tuple[type[BaseException], ...] = (*self._api_errors(), DeadlineExceeded)
        gone: list[str] = []
        left: dict[str, str] = {}
        for file_id in self._files_of(batch_id):
            try:
                self._delete_file(file_id)
            except refused as exc:
                left[file_id] = self._describe(exc)
                self._log(f"{self.batch_word} {batch_id}: file {file_id} could not be "
                          f"deleted ({left[file_id]}); it stays on the provider's storage")
            else:
                gone.append(file_id)
        if gone or left:
            self.store.files(batch_id, gone, left)
            self.deleted += gone
            self.undeleted.update(left)
        if gone:
            self._log(f"{self.batch_word} {batch_id}: deleted its {len(gone)} file(s) from "
                      "the provider's storage")

    def _failure_reason(self, exc: BaseException) -> str:
        """The reason a direct call gives for the same failure: the direct judge's
        classifier, so a refused key, a missing model or an unreachable API reads the same
        (and trips the judge's breaker the same) whichever path met it."""
        from pytest_skilllift.judge.client import _classify

        return _classify(exc, CONTROL_DEADLINE_S)[1]

    def _scrub(self, text: str) -> str:
        """``text`` with the key masked (a second line of defence, as for the direct judge)."""
        return text.replace(self.__api_key, "***") if self.__api_key else text

    def _describe(self, exc: BaseException) -> str:
        """An API failure in words: the direct classifier's reason, then the SDK's own."""
        detail = f"{type(exc).__name__}: {exc}"
        try:
            reason = self._failure_reason(exc)
        except Exception:  # not a failure the classifier knows: the SDK's words alone
            reason = ""
        return self._scrub(f"{reason} — {detail}" if reason else detail)

    def _reply_parts(self, message: Any) -> ReplyParts:
        """One succeeded request's reply (a Messages API message, as a dict): content blocks,
        the model that answered, its list-price cost, whether it was cut off."""
        model = str(message.get("model") or self.model)
        cost, price_note = estimate_cost(model, message.get("usage"))
        return ReplyParts(list(message.get("content") or []), model, cost, price_note,
                          message.get("stop_reason") == "max_tokens")

    # -- the pass ------------------------------------------------------------------------------

    def chunks(self, requests: Sequence[BatchRequest]) -> list[list[BatchRequest]]:
        """Split into batches within ``max_requests`` and ``max_bytes`` (a single request
        larger than ``max_bytes`` goes alone, and the API says what it thinks of it)."""
        out: list[list[BatchRequest]] = []
        size = 0
        for r in requests:
            n = r.size
            if not out or len(out[-1]) >= self.max_requests or size + n > self.max_bytes:
                out.append([])
                size = 0
            out[-1].append(r)
            size += n
        return out

    def grade(self, requests: Sequence[BatchRequest]) -> dict[str, JudgeResult]:
        """Every request's result by ``custom_id`` (an ungraded result with ``error`` for
        those that failed every attempt). Blocks until the batches end."""
        self.submitted, self.resumed, self.retried = [], [], []
        self.deleted, self.undeleted = [], {}
        want = {r.custom_id: r for r in requests}
        if len(want) != len(requests):
            raise ValueError("custom_id values must be unique within one grading pass")
        results: dict[str, JudgeResult] = {}
        from pytest_skilllift.judge.client import DeadlineExceeded

        refused: tuple[type[BaseException], ...] = (*self._api_errors(), DeadlineExceeded)
        try:
            self._pass(want, results)
        except refused as exc:
            # The service itself refused or stayed unreachable through the SDK's retries:
            # every request without a result is ungraded, with the reason (never zero). The
            # batches already on file are polled again by the next session.
            why = f"{self.api_name} API error: {self._describe(exc)}"
            self._log(why)
            for cid, req in want.items():
                results.setdefault(cid, self._failed(req, why))
        return results

    @contextlib.contextmanager
    def locked(self) -> Iterator[BatchJudge]:
        """Hold the week's batch lock across a whole grading step (plan, grade, write), so
        another process waiting for it finds the runs graded instead of fetching the same
        results again. ``grade`` inside it does not lock a second time (nor does another
        judge sharing the store)."""
        with self.store.locked():
            yield self

    def _pass(self, want: dict[str, BatchRequest], results: dict[str, JudgeResult]) -> None:
        with self.locked():
            store = self.store
            waiting: dict[str, list[str]] = {}
            submit: list[str] = []
            for cid, req in want.items():
                tries = store.attempts(cid, req.digest, self.provider)
                if tries:
                    waiting.setdefault(str(tries[-1]["id"]), []).append(cid)
                else:
                    submit.append(cid)
            self.resumed = sorted(waiting)
            for bid in self.resumed:
                self._log(f"resuming {self.batch_word} {bid} ({len(waiting[bid])} request(s) "
                          "already submitted): polling, not submitting again")
            while submit or waiting:
                for chunk in self.chunks([want[c] for c in submit]):
                    bid = self._create(chunk)
                    store.add(bid, chunk, self.provider)  # on file before the first poll
                    self.submitted.append(bid)
                    waiting[bid] = [r.custom_id for r in chunk]
                    self._log(f"submitted {self.batch_word} {bid}: {len(chunk)} request(s)")
                submit = []
                self._wait(store, list(waiting))
                for bid, cids in waiting.items():
                    got = self._results(bid)
                    for cid in cids:
                        res = got.get(cid)
                        if res is not None and res.get("type") == "succeeded":
                            results[cid] = self._read(want[cid], _plain(res["message"]))
                            continue
                        why = _why_not(res)
                        n_tries = len(store.attempts(cid, want[cid].digest, self.provider))
                        if n_tries <= self.retries:
                            submit.append(cid)
                            self.retried.append(cid)
                            self._log(f"{cid}: {why}; submitting it again (attempt "
                                      f"{n_tries + 1} of {self.retries + 1})")
                        else:
                            results[cid] = self._failed(want[cid], f"{why}; ungraded after "
                                                        f"{n_tries} batch attempt(s)", n_tries)
                    self._tidy(bid)  # its results are read: nothing of it stays stored
                waiting = {}

    def _wait(self, store: BatchStore, batch_ids: list[str]) -> None:
        pending = list(batch_ids)
        while pending:
            still = []
            for bid in pending:
                status, counts = self._retrieve(bid)
                store.mark(bid, status, counts)
                if status != "ended":
                    still.append(bid)
                    shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v)
                    self._log(f"{self.batch_word} {bid}: {status}" + (f" ({shown})" if shown
                                                                     else ""))
            pending = still
            if pending:
                self._sleep(self.poll_s)

    def _read(self, req: BatchRequest, message: Any) -> JudgeResult:
        """A succeeded request's message → the run's result, priced at the batch rate."""
        import dataclasses

        reply = self._reply_parts(message)
        result = parse_judge_reply(req.request, reply.content, model=reply.model,
                                   cost_usd=reply.cost_usd * BATCH_PRICE_FACTOR,
                                   evidence=self.evidence)
        notes = [f"graded through the {self.api_name} API (custom_id {req.custom_id}), "
                 f"priced at {BATCH_PRICE_FACTOR:.0%} of the list price"]
        if reply.price_note:
            notes.append(reply.price_note)
        error = result.error
        if reply.cut_off:
            notes.append(f"judge reply cut off at max_tokens={self.max_tokens}")
            if error:
                error = f"judge reply cut off at max_tokens={self.max_tokens}: {error}"
        return dataclasses.replace(result, error=error, notes=(*notes, *result.notes), calls=1)

    def _failed(self, req: BatchRequest, reason: str, calls: int = 0) -> JudgeResult:
        return JudgeResult(verdicts=(), cost_usd=0.0, model=self.model,
                           error=reason, ungraded=req.request.items, notes=(reason,),
                           calls=calls, evidence_policy=self.evidence)
