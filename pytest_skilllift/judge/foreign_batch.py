"""Batch judging through OpenAI's Batch API and Gemini's batch mode.

The same pass as :class:`~pytest_skilllift.judge.batch.BatchJudge` (chunks, the batch ids on
file before the first poll, resume instead of a second submission, errored requests submitted
again then ungraded with the reason, never zero; the batch price) with each provider's own
transport, through its official SDK's public calls:

* **OpenAI** (:class:`OpenAIBatchJudge`): the requests as a JSONL file of ``/v1/responses``
  calls (``client.files.create(purpose="batch")``), one batch over it
  (``client.batches.create(endpoint="/v1/responses", completion_window="24h")``), polled with
  ``client.batches.retrieve``; its ``output_file_id`` and ``error_file_id`` read with
  ``client.files.content``. A request is the body a direct call sends
  (:func:`~pytest_skilllift.judge.openai_client.responses_kwargs`), keyed by its
  ``custom_id``. Limits: 50,000 requests and 200 MB per input file. Once a batch's results
  are read (whatever it ended as) its input, output and error files are deleted
  (``client.files.delete``, a 404 tolerated): the provider keeps the graded answers and the
  verdicts otherwise; what cannot be deleted is counted and named
  (:meth:`~pytest_skilllift.judge.batch.BatchJudge._tidy`).
* **Google** (:class:`GoogleBatchJudge`): inlined requests
  (``client.batches.create(model=…, src=[…])``: each the arguments a direct
  ``generate_content`` takes, :func:`~pytest_skilllift.judge.google_client.gemini_kwargs`,
  with the ``custom_id`` in its ``metadata``), polled with ``client.batches.get``, the
  inlined responses read from the finished job (matched by their ``metadata``, else by order,
  which the API keeps). Limit: 20 MB of inlined requests per batch. No file is uploaded,
  so none is left to delete.

A failure of the batch API itself is described with the direct judge's classifier
(``_classify_error``): a refused key — 401, or Google's 400 ``API_KEY_INVALID`` — reads
as a direct call's does, and opens the judge's circuit breaker the same way.

Each reply is read by the provider's direct judge (``_read_reply``: the same content blocks,
model name and list price), so a batch-graded run carries exactly the verdicts a direct call
would, priced at :data:`~pytest_skilllift.judge.batch.BATCH_PRICE_FACTOR` (both providers
publish a 50% batch discount).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_skilllift.judge.batch import BatchJudge, BatchRequest, BatchStore
from pytest_skilllift.judge.client import ReplyParts
from pytest_skilllift.judge.google_client import GoogleJudge, gemini_kwargs
from pytest_skilllift.judge.openai_client import OpenAIJudge
from pytest_skilllift.judge.protocol import EvidencePolicy, JudgeRequest
from pytest_skilllift.model import GOOGLE, OPENAI

__all__ = ["GoogleBatchJudge", "OpenAIBatchJudge"]

#: OpenAI's Batch API: one input file holds at most 50,000 requests and 200 MB.
OPENAI_MAX_REQUESTS = 50_000
OPENAI_MAX_BYTES = 200 * 1024 * 1024
#: The endpoint every line of the input file calls.
OPENAI_ENDPOINT = "/v1/responses"
#: A batch that reached one of these has its output (or none will come).
OPENAI_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
#: Gemini's batch mode: inlined requests up to 20 MB per batch (larger ones need a file).
GOOGLE_MAX_BYTES = 20 * 1024 * 1024
GOOGLE_MAX_REQUESTS = 100_000
#: The job states after which the job changes no more.
GOOGLE_ENDED = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED",
                          "JOB_STATE_EXPIRED", "JOB_STATE_PARTIALLY_SUCCEEDED"})
#: The ``metadata`` key an inlined request carries its ``custom_id`` under.
GOOGLE_KEY = "custom_id"


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _errored(kind: str, message: str) -> dict[str, Any]:
    """A failed request in the shape :func:`~pytest_skilllift.judge.batch._why_not` reads."""
    return {"type": "errored", "error": {"type": kind, "message": message}}


class _ForeignBatchJudge(BatchJudge):
    """What both share: the direct judge that builds each request and reads each reply."""

    direct: Any

    def __init__(self, week_dir: Path, model: str, direct: Any, **kwargs: Any) -> None:
        super().__init__(week_dir, model, **kwargs)
        self.direct = direct
        self.model = direct.model  # ``provider:model``, what grades.json records
        #: Per batch id, what its last poll said (file ids, inlined responses, a failure).
        self._polled: dict[str, Any] = {}

    def _reply_parts(self, message: Any) -> ReplyParts:
        parts: ReplyParts = self.direct._read_reply(message)
        return parts

    def _failure_reason(self, exc: BaseException) -> str:
        return str(self.direct._classify_error(exc)[1])

    def _scrub(self, text: str) -> str:
        return str(self.direct._scrub(text))

    def close(self) -> None:
        super().close()
        self.direct.close()


class OpenAIBatchJudge(_ForeignBatchJudge):
    """Judge requests through OpenAI's Batch API (module docs); ``model`` without the
    ``openai:`` prefix."""

    provider = OPENAI
    api_name = "OpenAI Batch"
    batch_word = "OpenAI batch"

    def __init__(self, week_dir: Path, model: str, *, api_key: str | None = None,
                 base_url: str | None = None, max_tokens: int = 4096,
                 evidence: EvidencePolicy = "reject", store: BatchStore | None = None,
                 **kwargs: Any) -> None:
        kwargs.setdefault("max_requests", OPENAI_MAX_REQUESTS)
        kwargs.setdefault("max_bytes", OPENAI_MAX_BYTES)
        direct = OpenAIJudge(model, api_key=api_key, base_url=base_url, max_tokens=max_tokens,
                             evidence=evidence)
        super().__init__(week_dir, model, direct, api_key=api_key, base_url=base_url,
                         max_tokens=max_tokens, evidence=evidence, store=store, **kwargs)

    def request(self, cid: str, request: JudgeRequest) -> BatchRequest:
        return BatchRequest(cid, request, self.direct._request_kwargs(request))

    def _api(self) -> Any:
        if self._client is None:
            import openai

            # Control-plane calls: the SDK's own backoff covers 429/5xx (as for Anthropic's).
            self._client = openai.OpenAI(api_key=self._api_key, base_url=self.base_url,
                                         max_retries=4)
        return self._client

    def _api_errors(self) -> tuple[type[BaseException], ...]:
        import openai

        return (openai.OpenAIError,)

    def _create(self, chunk: Sequence[BatchRequest]) -> str:
        api = self._api()
        lines = "".join(json.dumps({"custom_id": r.custom_id, "method": "POST",
                                    "url": OPENAI_ENDPOINT, "body": r.params},
                                   ensure_ascii=False) + "\n" for r in chunk)

        def create() -> str:
            uploaded = api.files.create(
                file=("skilllift-judge-batch.jsonl", lines.encode("utf-8"),
                      "application/jsonl"), purpose="batch")
            try:
                batch = api.batches.create(input_file_id=uploaded.id,
                                           endpoint=OPENAI_ENDPOINT, completion_window="24h")
            except BaseException:
                # No batch will ever name this upload: delete it now, or say it stayed.
                self._drop_upload(str(uploaded.id))
                raise
            return str(batch.id)

        return str(self._bounded(create))

    def _drop_upload(self, file_id: str) -> None:
        try:
            self._delete_file(file_id)
        except self._api_errors() as exc:
            self.undeleted[file_id] = self._describe(exc)
            self._log(f"input file {file_id} of a batch that was not created could not be "
                      f"deleted ({self.undeleted[file_id]}); it stays on the provider's "
                      "storage")
        else:
            self.deleted.append(file_id)

    def _files_of(self, batch_id: str) -> list[str]:
        batch = self._polled.get(batch_id)
        ids = [_field(batch, k) for k in ("input_file_id", "output_file_id", "error_file_id")
               ] if batch is not None else []
        return list(dict.fromkeys(str(i) for i in ids if i))

    def _delete_file(self, file_id: str) -> None:
        import openai

        api = self._api()
        # A file already gone (an earlier session deleted it, or it expired): nothing stays.
        with contextlib.suppress(openai.NotFoundError):
            self._bounded(lambda: api.files.delete(file_id))

    def _retrieve(self, batch_id: str) -> tuple[str, dict[str, int]]:
        api = self._api()
        batch = self._bounded(lambda: api.batches.retrieve(batch_id))
        self._polled[batch_id] = batch
        counts = _field(batch, "request_counts")
        shown = {k: int(_field(counts, k) or 0) for k in ("total", "completed", "failed")
                 } if counts is not None else {}
        status = str(batch.status)
        return ("ended" if status in OPENAI_ENDED else status), shown

    def _results(self, batch_id: str) -> dict[str, dict[str, Any]]:
        batch = self._polled.get(batch_id)
        if batch is None:
            self._retrieve(batch_id)
            batch = self._polled[batch_id]
        api = self._api()
        out: dict[str, dict[str, Any]] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            text = self._file_text(api, str(file_id))
            for line in text.splitlines():
                if line.strip():
                    entry = json.loads(line)
                    out[str(entry.get("custom_id"))] = self._one(entry)
        if batch.status == "failed":
            # The whole batch was refused (its input file did not validate): each request
            # is named with the reasons, and submitted again or left ungraded.
            errors = [f"{_field(e, 'code')}: {_field(e, 'message')}"
                      for e in (_field(batch.errors, "data") or [])] if batch.errors else []
            why = "; ".join(errors) or "the batch failed"
            for cid in self.store.requests_of(batch_id):
                out.setdefault(cid, _errored("batch_failed", why))
        elif batch.status in ("expired", "cancelled"):
            for cid in self.store.requests_of(batch_id):
                out.setdefault(cid, {"type": "expired" if batch.status == "expired"
                                     else "canceled"})
        return out

    def _file_text(self, api: Any, file_id: str) -> str:
        """An output or error file's JSONL, within the control-plane deadline; "" for a
        file that is gone (deleted after an earlier session read it, then stopped before
        writing the grades): its requests read as not listed and are submitted again."""
        import openai

        try:
            return str(self._bounded(lambda: api.files.content(file_id).text))
        except openai.NotFoundError:
            self._log(f"file {file_id}: no longer on the provider's storage; its requests "
                      "are submitted again")
            return ""

    @staticmethod
    def _one(entry: dict[str, Any]) -> dict[str, Any]:
        """One line of the output or error file → the Message Batches result shape."""
        response = entry.get("response") or {}
        error = entry.get("error")
        status = int(response.get("status_code") or 0) if isinstance(response, dict) else 0
        if error is None and status == 200:
            return {"type": "succeeded", "message": response.get("body") or {}}
        if isinstance(error, dict) and error.get("code") == "batch_expired":
            return {"type": "expired"}
        body = response.get("body") if isinstance(response, dict) else None
        inner = (body or {}).get("error") if isinstance(body, dict) else None
        detail = error if isinstance(error, dict) else inner if isinstance(inner, dict) else {}
        kind = str(detail.get("code") or detail.get("type") or f"HTTP {status}")
        return _errored(kind, str(detail.get("message") or "no message"))


class GoogleBatchJudge(_ForeignBatchJudge):
    """Judge requests through Gemini's batch mode with inlined requests (module docs);
    ``model`` without the ``google:`` prefix."""

    provider = GOOGLE
    api_name = "Gemini Batch Mode"
    batch_word = "Gemini batch"

    def __init__(self, week_dir: Path, model: str, *, api_key: str | None = None,
                 base_url: str | None = None, max_tokens: int = 4096,
                 evidence: EvidencePolicy = "reject", store: BatchStore | None = None,
                 **kwargs: Any) -> None:
        kwargs.setdefault("max_requests", GOOGLE_MAX_REQUESTS)
        kwargs.setdefault("max_bytes", GOOGLE_MAX_BYTES)
        direct = GoogleJudge(model, api_key=api_key, base_url=base_url, max_tokens=max_tokens,
                             evidence=evidence)
        super().__init__(week_dir, model, direct, api_key=api_key, base_url=base_url,
                         max_tokens=max_tokens, evidence=evidence, store=store, **kwargs)

    def request(self, cid: str, request: JudgeRequest) -> BatchRequest:
        return BatchRequest(cid, request, gemini_kwargs(
            request, self.direct.api_model, self.max_tokens, self.direct.temperature))

    def _api(self) -> Any:
        if self._client is None:
            from google import genai
            from google.genai import types

            from pytest_skilllift.judge.google_client import _NoCredentials

            key = self._api_key or next(
                (os.environ[v] for v in self.direct.key_vars if os.environ.get(v)), None)
            if not key:
                raise _NoCredentials()
            # Control-plane calls: the SDK's own retries cover 429/5xx (as for Anthropic's).
            options = types.HttpOptions(base_url=self.base_url,
                                        retry_options=types.HttpRetryOptions(attempts=5))
            self._client = genai.Client(api_key=key, http_options=options)
        return self._client

    def _api_errors(self) -> tuple[type[BaseException], ...]:
        from google.genai import errors

        from pytest_skilllift.judge.google_client import _NoCredentials

        return (errors.APIError, _NoCredentials)

    def _create(self, chunk: Sequence[BatchRequest]) -> str:
        api = self._api()
        model = str(chunk[0].params["model"])
        src = [{"contents": r.params["contents"], "config": r.params["config"],
                "metadata": {GOOGLE_KEY: r.custom_id}} for r in chunk]
        job = self._bounded(lambda: api.batches.create(
            model=model, src=src, config={"display_name": "skilllift-judge"}))
        return str(job.name)

    def _retrieve(self, batch_id: str) -> tuple[str, dict[str, int]]:
        api = self._api()
        job = self._bounded(lambda: api.batches.get(name=batch_id))
        self._polled[batch_id] = job
        state = str(getattr(job.state, "value", job.state) or "")
        ended = state in GOOGLE_ENDED
        counts: dict[str, int] = {}
        if ended:
            responses = (job.dest.inlined_responses if job.dest is not None else None) or []
            failed = sum(1 for r in responses if r.error is not None)
            counts = {"succeeded": len(responses) - failed, "errored": failed}
        return ("ended" if ended else state), counts

    def _results(self, batch_id: str) -> dict[str, dict[str, Any]]:
        job = self._polled.get(batch_id)
        if job is None:
            self._retrieve(batch_id)
            job = self._polled[batch_id]
        sent = self.store.requests_of(batch_id)
        responses = (job.dest.inlined_responses if job.dest is not None else None) or []
        out: dict[str, dict[str, Any]] = {}
        for k, got in enumerate(responses):
            cid = (got.metadata or {}).get(GOOGLE_KEY) or (sent[k] if k < len(sent) else None)
            if cid is None:
                continue
            if got.error is not None:
                out[str(cid)] = _errored(f"code {got.error.code}",
                                         str(got.error.message or "no message"))
            elif got.response is not None:
                out[str(cid)] = {"type": "succeeded", "message": got.response}
        state = str(getattr(job.state, "value", job.state) or "")
        if state != "JOB_STATE_SUCCEEDED":
            word = {"JOB_STATE_EXPIRED": "expired", "JOB_STATE_CANCELLED": "canceled"}.get(state)
            for cid in sent:
                out.setdefault(cid, {"type": word} if word else _errored(
                    state.removeprefix("JOB_STATE_").lower() or "failed",
                    f"the Gemini batch job ended as {state}"))
        return out
