"""The stand-in's OpenAI Batch API and Gemini batch mode, for the judges' batch path.

Each request of a batch is answered, when the batch ends, by the same scripted judge a direct
call reaches (through :mod:`~pytest_skilllift.testing.judge_dialects`); the same
:class:`~pytest_skilllift.testing.batches.BatchScript` as the Message Batches endpoints drives
the polls before the end and the injected errored / expired requests (by ``custom_id``).

Wire shapes, as the official SDKs read them:

* **OpenAI** — ``POST /v1/files`` (multipart: ``file``, ``purpose=batch``) → a ``file``
  object; ``POST /v1/batches`` ``{input_file_id, endpoint, completion_window}`` → a ``batch``
  (``validating``, then ``in_progress``, then ``completed`` — or ``expired`` when a request
  expired — with ``output_file_id`` / ``error_file_id`` and ``request_counts``);
  ``GET /v1/batches/{id}``; ``GET /v1/files/{id}/content`` → the JSONL: one line per request
  ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``
  (an expired request: ``response`` null, ``error.code`` ``batch_expired``);
  ``GET /v1/files/{id}`` → the file object and ``DELETE /v1/files/{id}`` →
  ``{"id", "object": "file", "deleted": true}``, both (and the content) 404 once deleted.
  A refused key: 401 ``invalid_api_key``.
* **Gemini** — ``POST /v1beta/models/{model}:batchGenerateContent`` ``{"batch":
  {"displayName", "inputConfig": {"requests": {"requests": [{"request", "metadata"}]}}}}``
  → an operation ``{"name": "batches/…", "metadata": {GenerateContentBatch}, "done"}``;
  ``GET /v1beta/batches/{id}`` → the same, ``state`` ``BATCH_STATE_PENDING`` until it ends
  ``BATCH_STATE_SUCCEEDED`` with ``output.inlinedResponses.inlinedResponses`` in request order
  (an errored request: ``{"error": {"code", "message"}, "metadata"}``). A refused key: 400
  ``INVALID_ARGUMENT`` with the reason ``API_KEY_INVALID`` in its details, as Google answers
  (not 401).
"""

from __future__ import annotations

import datetime as dt
import email.parser
import email.policy
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_skilllift.testing.batches import BatchScript

__all__ = ["GeminiBatches", "OpenAIBatches", "multipart_fields"]

#: ``answer(body, model)`` → the provider's native response body for one judge request
#: (raising makes the request errored).
Answer = Callable[[dict[str, Any], str], dict[str, Any]]


def multipart_fields(content_type: str, raw: bytes) -> dict[str, bytes]:
    """The fields of a ``multipart/form-data`` body (name → bytes)."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
    fields: dict[str, bytes] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            fields[name] = payload
    return fields


def _openai_error(message: str, code: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None,
                      "code": code}}


@dataclass
class _Job:
    id: str
    requests: list[dict[str, Any]]
    created: float
    nth: list[int]
    model: str = ""
    polls: int = 0
    ended: float | None = None
    results: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


class _Queue:
    """What both providers' batches share: the script, the submissions per id, the lock."""

    def __init__(self, script: BatchScript, answer: Answer) -> None:
        self.script = script
        self._answer = answer
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}
        self._seen: Counter[str] = Counter()

    @property
    def created(self) -> list[str]:
        """Ids of every batch created so far, in order."""
        with self._lock:
            return list(self._jobs)

    def submitted(self, cid: str) -> int:
        """How many batches carried ``cid``."""
        with self._lock:
            return self._seen[cid]

    def _add(self, job: _Job, ids: list[str]) -> None:
        with self._lock:
            self._seen.update(ids)
            job.nth = [self._seen[i] for i in ids]
            self._jobs[job.id] = job

    def _poll(self, job_id: str) -> tuple[_Job | None, bool]:
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                return None, False
            job.polls += 1
            return job, job.ended is None and job.polls > self.script.polls_before_end

    def _fate(self, cid: str, nth: int) -> str:
        """``expired``, ``errored`` or ``answer`` for the nth submission of ``cid``."""
        def fails(which: frozenset[str]) -> bool:
            return cid in which and (self.script.times == 0 or nth <= self.script.times)

        return "expired" if fails(self.script.expired) else (
            "errored" if fails(self.script.errored) else "answer")


class OpenAIBatches(_Queue):
    """OpenAI's files and batches (see the module docstring)."""

    def __init__(self, script: BatchScript, answer: Answer) -> None:
        super().__init__(script, answer)
        self._files: dict[str, tuple[str, bytes]] = {}  # id → (purpose, content)
        #: Answer ``DELETE /v1/files/{id}`` with 403, as for a key without the files
        #: write permission (the file stays).
        self.refuse_deletes = False

    @property
    def files(self) -> list[str]:
        """Ids of every file held now (uploaded inputs, batch outputs, not yet deleted)."""
        with self._lock:
            return list(self._files)

    def upload(self, content_type: str, raw: bytes) -> tuple[int, Any]:
        """``POST /v1/files``: store the multipart upload; ``(status, file object)``, 400
        without file and purpose."""
        fields = multipart_fields(content_type, raw)
        if "file" not in fields or "purpose" not in fields:
            return 400, _openai_error("file and purpose are required")
        purpose = fields["purpose"].decode()
        file_id = "file-" + uuid.uuid4().hex[:24]
        with self._lock:
            self._files[file_id] = (purpose, fields["file"])
        return 200, self._file_view(file_id, purpose, len(fields["file"]))

    def _file_view(self, file_id: str, purpose: str, size: int) -> dict[str, Any]:
        return {"id": file_id, "object": "file", "bytes": size, "created_at": int(time.time()),
                "filename": f"{file_id}.jsonl", "purpose": purpose, "status": "processed"}

    def content(self, file_id: str) -> tuple[int, Any]:
        """``GET /v1/files/{id}/content``: the stored bytes; 404 for a file not (or no longer)
        there."""
        with self._lock:
            got = self._files.get(file_id)
        if got is None:
            return 404, _openai_error(f"No such File object: {file_id}", "file_not_found")
        return 200, got[1]

    def retrieve_file(self, file_id: str) -> tuple[int, Any]:
        """``GET /v1/files/{id}``: the file object, 404 once deleted."""
        with self._lock:
            got = self._files.get(file_id)
        if got is None:
            return 404, _openai_error(f"No such File object: {file_id}", "file_not_found")
        return 200, self._file_view(file_id, got[0], len(got[1]))

    def delete(self, file_id: str) -> tuple[int, Any]:
        """``DELETE /v1/files/{id}``: ``{"id", "object": "file", "deleted": true}``; 404 for
        a file that is not (or no longer) there; 403 with ``refuse_deletes``."""
        if self.refuse_deletes:
            return 403, _openai_error("You have insufficient permissions for this operation. "
                                      "Missing scopes: api.files.write", "permission_denied")
        with self._lock:
            got = self._files.pop(file_id, None)
        if got is None:
            return 404, _openai_error(f"No such File object: {file_id}", "file_not_found")
        return 200, {"id": file_id, "object": "file", "deleted": True}

    def create(self, body: dict[str, Any]) -> tuple[int, Any]:
        """``POST /v1/batches``: a batch over an uploaded JSONL input file; 400 naming what is
        wrong."""
        with self._lock:
            got = self._files.get(str(body.get("input_file_id")))
        if got is None:
            return 400, _openai_error(f"input_file_id {body.get('input_file_id')!r}: no "
                                      "such file")
        endpoint = body.get("endpoint")
        if endpoint not in ("/v1/responses", "/v1/chat/completions"):
            return 400, _openai_error(f"endpoint {endpoint!r} is not supported")
        if body.get("completion_window") != "24h":
            return 400, _openai_error("completion_window must be 24h")
        try:
            lines = [json.loads(line) for line in got[1].decode().splitlines() if line.strip()]
        except ValueError as exc:
            return 400, _openai_error(f"input file is not JSONL: {exc}")
        ids = [str(line.get("custom_id")) for line in lines]
        bad = [line for line in lines if line.get("method") != "POST"
               or line.get("url") != endpoint or not isinstance(line.get("body"), dict)]
        if bad or not lines or len(set(ids)) != len(ids):
            return 400, _openai_error("every line needs a unique custom_id, method POST, the "
                                      "batch's endpoint as url and a body")
        job = _Job(id="batch_" + uuid.uuid4().hex[:24], requests=lines, created=time.time(),
                   nth=[], model=str(lines[0]["body"].get("model", "")),
                   extra={"input_file_id": body["input_file_id"], "endpoint": endpoint})
        self._add(job, ids)
        return 200, self._view(job)

    def retrieve(self, batch_id: str) -> tuple[int, Any]:
        """``GET /v1/batches/{id}``: the batch, processed once the script's polls are over."""
        job, end_now = self._poll(batch_id)
        if job is None:
            return 404, _openai_error(f"No batch found with id '{batch_id}'", "not_found")
        if end_now:
            self._process(job)
        return 200, self._view(job)

    def _process(self, job: _Job) -> None:
        out: list[str] = []
        err: list[str] = []
        expired = 0
        for line, nth in zip(job.requests, job.nth, strict=True):
            cid = str(line["custom_id"])
            entry: dict[str, Any] = {"id": "batch_req_" + uuid.uuid4().hex[:24],
                                     "custom_id": cid, "response": None, "error": None}
            fate = self._fate(cid, nth)
            if fate == "expired":
                expired += 1
                entry["error"] = {"code": "batch_expired", "message": "This request could "
                                  "not be executed before the completion window expired."}
                err.append(json.dumps(entry))
                continue
            try:
                if fate == "errored":
                    raise RuntimeError("Internal error (injected by StandIn)")
                body = self._answer(dict(line["body"]), str(line["body"].get("model", "")))
            except Exception as exc:
                entry["response"] = {"status_code": 500, "request_id": uuid.uuid4().hex,
                                     "body": {"error": {"message": str(exc),
                                                        "type": "server_error"}}}
                err.append(json.dumps(entry))
                continue
            entry["response"] = {"status_code": 200, "request_id": uuid.uuid4().hex,
                                 "body": body}
            out.append(json.dumps(entry))
        files = {}
        for name, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                file_id = "file-" + uuid.uuid4().hex[:24]
                with self._lock:
                    self._files[file_id] = ("batch_output", ("\n".join(rows) + "\n").encode())
                files[name] = file_id
        with self._lock:
            job.extra.update(files, completed=len(out), failed=len(err),
                             status="expired" if expired else "completed")
            job.ended = time.time()

    def _view(self, job: _Job) -> dict[str, Any]:
        ended = job.ended is not None
        end = int(job.ended or 0)
        status = job.extra.get("status", "completed") if ended else (
            "validating" if job.polls == 0 else "in_progress")
        done = job.extra.get("completed", 0)
        failed = job.extra.get("failed", 0)
        return {
            "id": job.id, "object": "batch", "endpoint": job.extra["endpoint"],
            "errors": None, "input_file_id": job.extra["input_file_id"],
            "completion_window": "24h", "status": status,
            "output_file_id": job.extra.get("output_file_id"),
            "error_file_id": job.extra.get("error_file_id"),
            "created_at": int(job.created), "in_progress_at": int(job.created),
            "expires_at": int(job.created) + 86400,
            "completed_at": end if ended and status == "completed" else None,
            "expired_at": end if ended and status == "expired" else None,
            "request_counts": {"total": len(job.requests), "completed": done,
                               "failed": failed},
            "metadata": None, "model": job.model,
        }


class GeminiBatches(_Queue):
    """Gemini's batch mode with inlined requests (see the module docstring)."""

    def create(self, model: str, body: dict[str, Any]) -> tuple[int, Any]:
        """``POST /v1beta/models/{model}:batchGenerateContent``: a batch job of inlined requests."""
        got = body.get("batch")
        batch: dict[str, Any] = got if isinstance(got, dict) else {}
        config = batch.get("inputConfig") or {}
        requests = ((config.get("requests") or {}).get("requests")
                    if isinstance(config, dict) else None)
        if not isinstance(requests, list) or not requests:
            return 400, {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message":
                                   "batch.input_config.requests: must not be empty"}}
        ids = [str((r.get("metadata") or {}).get("custom_id") or f"#{k}")
               for k, r in enumerate(requests)]
        job = _Job(id=uuid.uuid4().hex[:20], requests=requests, created=time.time(), nth=[],
                   model=model, extra={"displayName": str(batch.get("displayName") or "")})
        self._add(job, ids)
        return 200, self._view(job)

    def get(self, job_id: str) -> tuple[int, Any]:
        """``GET /v1beta/batches/{id}``: the job, processed once the script's polls are over."""
        job, end_now = self._poll(job_id)
        if job is None:
            return 404, {"error": {"code": 404, "status": "NOT_FOUND",
                                   "message": f"batches/{job_id} not found"}}
        if end_now:
            self._process(job)
        return 200, self._view(job)

    def _process(self, job: _Job) -> None:
        results = []
        for req, nth in zip(job.requests, job.nth, strict=True):
            metadata = req.get("metadata") or {}
            cid = str(metadata.get("custom_id") or "")
            fate = self._fate(cid, nth)
            if fate == "expired":
                results.append({"error": {"code": 4, "message": "Deadline exceeded (injected "
                                          "by StandIn)"}, "metadata": metadata})
                continue
            try:
                if fate == "errored":
                    raise RuntimeError("Internal error (injected by StandIn)")
                response = self._answer(dict(req.get("request") or {}), job.model)
            except Exception as exc:
                results.append({"error": {"code": 13, "message": str(exc)},
                                "metadata": metadata})
                continue
            results.append({"response": response, "metadata": metadata})
        with self._lock:
            job.results = results
            job.ended = time.time()

    def _view(self, job: _Job) -> dict[str, Any]:
        ended = job.ended is not None
        stamp = dt.datetime.fromtimestamp(job.created, dt.UTC).isoformat().replace(
            "+00:00", "Z")
        failed = sum(1 for r in job.results if "error" in r)
        meta: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1main."
                     "GenerateContentBatch",
            "name": f"batches/{job.id}", "model": f"models/{job.model}",
            "displayName": job.extra["displayName"], "createTime": stamp,
            "updateTime": stamp,
            "state": "BATCH_STATE_SUCCEEDED" if ended else (
                "BATCH_STATE_PENDING" if job.polls == 0 else "BATCH_STATE_RUNNING"),
            "batchStats": {"requestCount": str(len(job.requests)),
                           "successfulRequestCount": str(len(job.results) - failed),
                           "failedRequestCount": str(failed),
                           "pendingRequestCount": "0" if ended else str(len(job.requests))},
        }
        if ended:
            meta["endTime"] = stamp
            meta["output"] = {"inlinedResponses": {"inlinedResponses": job.results}}
        view: dict[str, Any] = {"name": f"batches/{job.id}", "metadata": meta, "done": ended}
        if ended:
            view["response"] = dict(meta, **{"@type": meta["@type"]})
        return view
