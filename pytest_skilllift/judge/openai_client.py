"""The judge through OpenAI's Responses API (``--skill-lift-judge-model openai:MODEL``).

The same blind protocol as :class:`~pytest_skilllift.judge.client.Judge` — the request of
:func:`~pytest_skilllift.judge.protocol.build_judge_request` (shuffled, boundary-tagged
sections), one verdict per item through a forced function (``record_verdicts``, the same
JSON schema), the evidence check, our retry loop, the overall deadline and the scrubbing of
the key — sent through the official ``openai`` SDK (``client.responses.create``) built with
``max_retries=0``: the retry policy is ours (module docs of ``judge.client``).

Reached through ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` (or the ``api_key`` /
``base_url`` arguments); the key goes to the SDK and nowhere else. Priced by
:data:`~pytest_skilllift.judge.providers.OTHER_PRICES` (cached input at a tenth). With
``--skill-lift-judge-batch`` the same requests go through OpenAI's Batch API
(:class:`~pytest_skilllift.judge.foreign_batch.OpenAIBatchJudge`, at half the price).
"""

from __future__ import annotations

import json
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
from pytest_skilllift.model import OPENAI

__all__ = ["OpenAIJudge", "responses_kwargs"]


def responses_kwargs(request: JudgeRequest, model: str, max_tokens: int) -> dict[str, Any]:
    """``client.responses.create`` arguments for one judge request: the system prompt as
    ``instructions``, each section as its own ``input_text`` part, and in tool mode the
    verdict function forced (the reply is then read from the function call only)."""
    parts = [{"type": "input_text", "text": block["text"]}
             for message in request.messages for block in message["content"]
             if block.get("type") == "text"]
    kwargs: dict[str, Any] = {
        "model": model, "instructions": request.system,
        "input": [{"role": "user", "content": parts}],
        "max_output_tokens": max_tokens, "store": False,
    }
    if request.reply_mode == "tool":
        kwargs["tools"] = [{"type": "function", "name": TOOL_NAME, "strict": False,
                            "description": "Record one verdict per rubric item, with verbatim "
                                           "evidence.", "parameters": VERDICTS_SCHEMA}]
        kwargs["tool_choice"] = {"type": "function", "name": TOOL_NAME}
    return kwargs


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def responses_content(response: Any) -> list[dict[str, Any]]:
    """The Responses API ``output`` as Messages content blocks: a function call becomes a
    ``tool_use`` block (its JSON-string arguments kept as the input), message text a
    ``text`` block."""
    blocks: list[dict[str, Any]] = []
    for item in _field(response, "output") or []:
        kind = _field(item, "type")
        if kind == "function_call":
            raw = _field(item, "arguments")
            try:
                tool_input: Any = json.loads(raw) if isinstance(raw, str) else raw
            except ValueError:
                tool_input = raw  # unparseable: the protocol reports it as no payload
            blocks.append({"type": "tool_use", "name": _field(item, "name"),
                           "input": tool_input})
        elif kind == "message":
            for part in _field(item, "content") or []:
                if _field(part, "type") in ("output_text", "text"):
                    blocks.append({"type": "text", "text": str(_field(part, "text") or "")})
    return blocks


class OpenAIJudge(ForeignJudge):
    """The blind judge through the OpenAI Responses API (see the module docs)."""

    sdk_module = "openai"
    key_vars = KEY_VARS[OPENAI]
    provider = OPENAI
    batch_api = BATCH_APIS[OPENAI]

    def _get_client(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(api_key=self._api_key, base_url=self.base_url,
                                         timeout=self.timeout_s, max_retries=0)
        return self._client

    def _request_kwargs(self, request: JudgeRequest) -> dict[str, Any]:
        kwargs = responses_kwargs(request, self.api_model, self.max_tokens)
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        return kwargs

    def _attempt_on(self, client: Any, kwargs: dict[str, Any]) -> Any:
        return client.responses.create(**kwargs)

    def _read_reply(self, message: Any) -> ReplyParts:
        replied = str(_field(message, "model") or self.api_model)
        usage = _field(message, "usage")
        cost, note = self._list_price(replied, None if usage is None else (
            int(_field(usage, "input_tokens") or 0),
            int(_field(_field(usage, "input_tokens_details") or {}, "cached_tokens") or 0),
            int(_field(usage, "output_tokens") or 0)))
        details = _field(message, "incomplete_details")
        cut_off = (_field(message, "status") == "incomplete"
                   and _field(details, "reason") == "max_output_tokens")
        return ReplyParts(responses_content(message), f"{OPENAI}:{replied}", cost, note,
                          cut_off)

    def _classify_error(self, err: BaseException) -> tuple[bool, str, float | None]:
        import openai

        if isinstance(err, _TruncatedReply | DeadlineExceeded):
            return True, str(err), None
        if isinstance(err, openai.APIStatusError):
            body = err.body if isinstance(err.body, Mapping) else {}
            detail = body.get("error", body) if isinstance(body, Mapping) else {}
            kind = (detail.get("type") or detail.get("code") if isinstance(detail, Mapping)
                    else None) or type(err).__name__
            return status_failure(err.status_code, str(kind),
                                  getattr(err.response, "headers", None))
        if isinstance(err, openai.APITimeoutError):
            return True, f"timed out after {self.timeout_s:g}s", None
        if isinstance(err, openai.APIConnectionError):
            cause = err.__cause__ or err.__context__
            what = type(cause).__name__ if cause else "no detail"
            return True, f"connection error ({what})", None
        if isinstance(err, openai.APIResponseValidationError):
            return True, "malformed response body", None
        if isinstance(err, openai.OpenAIError) and "api_key" in str(err):
            return False, "no credentials for the judge (set OPENAI_API_KEY)", None
        import httpx2

        if isinstance(err, httpx2.TransportError):
            return True, f"truncated stream ({type(err).__name__})", None
        if isinstance(err, ValueError):
            return True, f"undecodable response ({type(err).__name__})", None
        if isinstance(err, openai.OpenAIError):
            return False, f"{type(err).__name__}: {err}", None
        raise err  # not an API failure: a bug
