"""The stand-in's Message Batches endpoints: create, retrieve, results (JSONL).

Each request of a batch is answered by the same scripted handlers as a direct call (the judge
script for judge requests), when the batch ends. A :class:`BatchScript` makes the batch
behave like the real service under test: ``polls_before_end`` retrieves answer
``in_progress`` before the batch ends, and chosen ``custom_id`` values come back ``errored`` or
``expired`` (the first ``times`` submissions of each; 0 = every one), so a client's retry and
"ungraded, never zero" paths can be driven deterministically.

Wire shapes follow the API reference: ``message_batch`` objects with ``processing_status``,
``request_counts``, ``results_url``; results as one JSON object per line
``{"custom_id", "result": {"type": "succeeded", "message": ...} | {"type": "errored", "error":
...} | {"type": "expired"}}``, in no particular order.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_skilllift.judge.batch import CUSTOM_ID_PATTERN


@dataclass
class BatchScript:
    """How the stand-in's batches behave (see the module docstring)."""

    polls_before_end: int = 0
    errored: frozenset[str] = frozenset()
    expired: frozenset[str] = frozenset()
    times: int = 1


def _iso(t: dt.datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


@dataclass
class _Batch:
    id: str
    requests: list[dict[str, Any]]
    created: dt.datetime
    #: Per request: which submission of its custom_id this is (drives ``BatchScript.times``).
    nth: list[int] = field(default_factory=list)
    polls: int = 0
    ended: dt.datetime | None = None
    results: list[dict[str, Any]] = field(default_factory=list)


class BatchQueue:
    """The batches one stand-in holds. ``answer(params)`` returns a message JSON for one
    request (raising to make it ``errored``); ``base_url`` builds ``results_url``."""

    def __init__(self, script: BatchScript, answer: Callable[[dict[str, Any]], dict[str, Any]],
                 ) -> None:
        self.script = script
        self._answer = answer
        self._lock = threading.Lock()
        self._batches: dict[str, _Batch] = {}
        self._seen: Counter[str] = Counter()  # submissions per custom_id (drives ``times``)

    @property
    def created(self) -> list[str]:
        """Ids of every batch created so far, in order."""
        with self._lock:
            return list(self._batches)

    def submitted(self, cid: str) -> int:
        """How many batches carried ``cid``."""
        with self._lock:
            return self._seen[cid]

    # -- endpoints: each returns (HTTP status, JSON-able body or bytes) ---------------------------

    def create(self, body: dict[str, Any], base_url: str) -> tuple[int, Any]:
        """``POST /v1/messages/batches``: queue the requests; ``(status, body)``, 400 for a
        malformed batch."""
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return 400, _error("invalid_request_error", "requests: must be a non-empty list")
        ids = [r.get("custom_id") if isinstance(r, dict) else None for r in requests]
        bad = [i for i in ids if not isinstance(i, str) or not CUSTOM_ID_PATTERN.match(i)]
        if bad:
            return 400, _error("invalid_request_error",
                               f"custom_id {bad[0]!r} must match ^[a-zA-Z0-9_-]{{1,64}}$")
        dup = [i for i, n in Counter(ids).items() if n > 1]
        if dup:
            return 400, _error("invalid_request_error",
                               f"custom_id {dup[0]!r} appears more than once in the batch")
        batch = _Batch(id="msgbatch_01" + uuid.uuid4().hex[:22], requests=list(requests),
                       created=dt.datetime.now(dt.UTC))
        with self._lock:
            self._seen.update(str(i) for i in ids)
            batch.nth = [self._seen[str(i)] for i in ids]
            self._batches[batch.id] = batch
        return 200, self._view(batch, base_url)

    def retrieve(self, batch_id: str, base_url: str) -> tuple[int, Any]:
        """``GET /v1/messages/batches/<id>``: the batch, ended after the script's number of
        polls."""
        with self._lock:
            batch = self._batches.get(batch_id)
            if batch is None:
                return 404, _error("not_found_error", f"no message batch {batch_id!r}")
            batch.polls += 1
            end_now = batch.ended is None and batch.polls > self.script.polls_before_end
        if end_now:
            self._process(batch)
        return 200, self._view(batch, base_url)

    def results(self, batch_id: str) -> tuple[int, Any]:
        """``GET .../results``: the ended batch's results as JSON lines (400 before it ends)."""
        with self._lock:
            batch = self._batches.get(batch_id)
        if batch is None:
            return 404, _error("not_found_error", f"no message batch {batch_id!r}")
        if batch.ended is None:
            return 400, _error("invalid_request_error",
                               f"message batch {batch_id} is still in progress")
        lines = (json.dumps(r) for r in reversed(batch.results))  # any order is allowed
        return 200, ("\n".join(lines) + "\n").encode()

    # -- internals -----------------------------------------------------------------------------

    def _fails(self, cid: str, nth: int, which: frozenset[str]) -> bool:
        return cid in which and (self.script.times == 0 or nth <= self.script.times)

    def _process(self, batch: _Batch) -> None:
        results = []
        for req, nth in zip(batch.requests, batch.nth, strict=True):
            cid = str(req["custom_id"])
            if self._fails(cid, nth, self.script.expired):
                results.append({"custom_id": cid, "result": {"type": "expired"}})
                continue
            if self._fails(cid, nth, self.script.errored):
                results.append(_errored(cid, "Internal error (injected by StandIn)"))
                continue
            try:
                message = self._answer(dict(req.get("params") or {}))
            except Exception as exc:  # a broken script is an errored request, not a hang
                results.append(_errored(cid, f"{type(exc).__name__}: {exc}"))
                continue
            results.append({"custom_id": cid, "result": {"type": "succeeded",
                                                         "message": message}})
        with self._lock:
            batch.results = results
            batch.ended = dt.datetime.now(dt.UTC)

    def _view(self, batch: _Batch, base_url: str) -> dict[str, Any]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if batch.ended is None:
            counts["processing"] = len(batch.requests)
        else:
            for r in batch.results:
                counts[r["result"]["type"]] += 1
        ended = batch.ended is not None
        return {
            "id": batch.id, "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "created_at": _iso(batch.created),
            "expires_at": _iso(batch.created + dt.timedelta(hours=24)),
            "ended_at": _iso(batch.ended) if batch.ended else None,
            "archived_at": None, "cancel_initiated_at": None,
            "results_url": (f"{base_url}/v1/messages/batches/{batch.id}/results"
                            if ended else None),
        }


def _errored(cid: str, message: str) -> dict[str, Any]:
    return {"custom_id": cid, "result": {"type": "errored", "error": _error("api_error",
                                                                          message)}}


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}
