"""The judge through Google's Gemini API (``--skill-lift-judge-model google:MODEL``).

The same blind protocol as :class:`~pytest_skilllift.judge.client.Judge` (the request of
:func:`~pytest_skilllift.judge.protocol.build_judge_request`, one verdict per item through a
forced function call — ``record_verdicts``, the same JSON schema, function calling mode
``ANY`` —, the evidence check, our retry loop and overall deadline, the key scrubbed), sent
through the official ``google-genai`` SDK (``client.models.generate_content``) with its own
retries off (one attempt per call: the retry policy is ours).

Reached through ``GEMINI_API_KEY`` (or ``GOOGLE_API_KEY``) and ``GOOGLE_GEMINI_BASE_URL`` (or
the ``api_key`` / ``base_url`` arguments); the key goes to the SDK and nowhere else. Priced by
:data:`~pytest_skilllift.judge.providers.OTHER_PRICES`. With ``--skill-lift-judge-batch``
the same requests go through Gemini's batch mode
(:class:`~pytest_skilllift.judge.foreign_batch.GoogleBatchJudge`, at half the price).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from pytest_skilllift.judge.client import (
    DeadlineExceeded,
    ReplyParts,
    _TruncatedReply,
    status_failure,
)
from pytest_skilllift.judge.foreign import ForeignJudge
from pytest_skilllift.judge.protocol import TOOL_NAME, VERDICTS_SCHEMA, JudgeRequest
from pytest_skilllift.judge.providers import BATCH_APIS, KEY_VARS
from pytest_skilllift.model import GOOGLE

__all__ = ["GoogleJudge", "gemini_content", "gemini_kwargs"]


def gemini_kwargs(request: JudgeRequest, model: str, max_tokens: int,
                  temperature: float | None = None) -> dict[str, Any]:
    """``client.models.generate_content`` arguments for one judge request (plain dicts, which
    the SDK validates into its types): each section its own text part, the system prompt as
    ``system_instruction``, in tool mode the verdict function forced (mode ``ANY``)."""
    parts = [{"text": block["text"]} for message in request.messages
             for block in message["content"] if block.get("type") == "text"]
    config: dict[str, Any] = {"system_instruction": request.system,
                              "max_output_tokens": max_tokens}
    if temperature is not None:
        config["temperature"] = temperature
    if request.reply_mode == "tool":
        config["tools"] = [{"function_declarations": [{
            "name": TOOL_NAME,
            "description": "Record one verdict per rubric item, with verbatim evidence.",
            "parameters_json_schema": VERDICTS_SCHEMA}]}]
        config["tool_config"] = {"function_calling_config": {
            "mode": "ANY", "allowed_function_names": [TOOL_NAME]}}
    return {"model": model, "contents": [{"role": "user", "parts": parts}], "config": config}


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def gemini_content(response: Any) -> tuple[list[dict[str, Any]], str]:
    """The first candidate's parts as Messages content blocks (a function call becomes a
    ``tool_use`` block, text a ``text`` block), and its finish reason."""
    candidates = _field(response, "candidates") or []
    if not candidates:
        return [], ""
    first = candidates[0]
    reason = _field(first, "finish_reason")
    reason_text = str(getattr(reason, "value", reason) or "")
    blocks: list[dict[str, Any]] = []
    for part in _field(_field(first, "content") or {}, "parts") or []:
        call = _field(part, "function_call")
        if call is not None:
            blocks.append({"type": "tool_use", "name": _field(call, "name"),
                           "input": _field(call, "args")})
        elif _field(part, "text"):
            blocks.append({"type": "text", "text": str(_field(part, "text"))})
    return blocks, reason_text


class GoogleJudge(ForeignJudge):
    """The blind judge through the Gemini API (see the module docs)."""

    sdk_module = "google.genai"
    key_vars = KEY_VARS[GOOGLE]
    provider = GOOGLE
    batch_api = BATCH_APIS[GOOGLE]

    def _get_client(self) -> Any:
        if self._client is None:
            key = self._api_key or next(
                (os.environ[v] for v in self.key_vars if os.environ.get(v)), None)
            if not key:
                # The SDK raises a bare ValueError for a missing key: name the variables.
                raise _NoCredentials()
            from google import genai
            from google.genai import types

            options = types.HttpOptions(
                base_url=self.base_url, timeout=int(self.timeout_s * 1000),
                retry_options=types.HttpRetryOptions(attempts=1))
            self._client = genai.Client(api_key=key, http_options=options)
        return self._client

    def _request_kwargs(self, request: JudgeRequest) -> dict[str, Any]:
        return gemini_kwargs(request, self.api_model, self.max_tokens, self.temperature)

    def _attempt_on(self, client: Any, kwargs: dict[str, Any]) -> Any:
        return client.models.generate_content(**kwargs)

    def _read_reply(self, message: Any) -> ReplyParts:
        replied = str(_field(message, "model_version") or self.api_model)
        usage = _field(message, "usage_metadata")
        cost, note = self._list_price(replied, None if usage is None else (
            int(_field(usage, "prompt_token_count") or 0),
            int(_field(usage, "cached_content_token_count") or 0),
            int(_field(usage, "candidates_token_count") or 0)
            + int(_field(usage, "thoughts_token_count") or 0)))
        content, reason = gemini_content(message)
        return ReplyParts(content, f"{GOOGLE}:{replied}", cost, note, reason == "MAX_TOKENS")

    def _classify_error(self, err: BaseException) -> tuple[bool, str, float | None]:
        from google.genai import errors

        if isinstance(err, _TruncatedReply | DeadlineExceeded):
            return True, str(err), None
        if isinstance(err, _NoCredentials):
            return False, str(err), None
        if isinstance(err, errors.APIError):
            # A bad key is a 400 whose details say API_KEY_INVALID (not a 401): the body
            # goes to the shared rule so the breaker sees a refused key, not a bad request.
            return status_failure(int(err.code or 0), str(err.status or type(err).__name__),
                                  getattr(err.response, "headers", None),
                                  f"{err.message or ''} {json.dumps(err.details, default=str)}")
        import httpx2

        if isinstance(err, httpx2.TimeoutException):
            return True, f"timed out after {self.timeout_s:g}s", None
        if isinstance(err, httpx2.TransportError):
            return True, f"connection error ({type(err).__name__})", None
        if isinstance(err, ValueError):
            return True, f"undecodable response ({type(err).__name__})", None
        raise err  # not an API failure: a bug


class _NoCredentials(Exception):
    def __init__(self) -> None:
        super().__init__("no credentials for the judge (set GEMINI_API_KEY or GOOGLE_API_KEY)")
