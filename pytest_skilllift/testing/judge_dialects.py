"""Judge requests in the Responses and Gemini APIs, translated for the scripted judges.

The scripted judges (:mod:`~pytest_skilllift.testing.judge_script`) read a Messages body
(``system``, the user turn's text blocks, the offered ``record_verdicts`` tool) and answer
with a :class:`~pytest_skilllift.testing.replies.Reply`. An OpenAI judge
(``client.responses.create``) and a Google judge (``client.models.generate_content``) send
the same request in their own API; :func:`canonical_judge_body` turns either into that
Messages body and :func:`native_judge_reply` the script's reply back into the API's own
non-streamed response (a ``function_call`` output item, a ``functionCall`` part), so every
provider's judge is graded by the same scripts through its real SDK.

Pure translation: no sockets (the server in :mod:`~pytest_skilllift.testing.server` sends).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from pytest_skilllift.judge.protocol import JUDGE_MARKER
from pytest_skilllift.testing.replies import Reply

__all__ = [
    "GEMINI",
    "RESPONSES",
    "canonical_judge_body",
    "is_judge_request",
    "native_judge_reply",
]

RESPONSES, GEMINI = "responses", "gemini"


def _gemini_system(body: dict[str, Any]) -> str:
    system = body.get("systemInstruction") or body.get("system_instruction") or {}
    if isinstance(system, str):
        return system
    parts = system.get("parts", []) if isinstance(system, dict) else []
    return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))


def _system(api: str, body: dict[str, Any]) -> str:
    return str(body.get("instructions") or "") if api == RESPONSES else _gemini_system(body)


def is_judge_request(api: str, body: dict[str, Any]) -> bool:
    """Whether a Responses / Gemini request is our judge's (its system prompt carries
    :data:`~pytest_skilllift.judge.protocol.JUDGE_MARKER`)."""
    return JUDGE_MARKER in _system(api, body)


def _texts(api: str, body: dict[str, Any]) -> list[str]:
    texts: list[str] = []
    if api == RESPONSES:
        turns = body.get("input")
        if isinstance(turns, str):
            return [turns]
        for turn in turns or []:
            content = turn.get("content") if isinstance(turn, dict) else None
            if isinstance(content, str):
                texts.append(content)
            for part in content if isinstance(content, list) else []:
                if isinstance(part, dict) and part.get("type") in ("input_text", "text"):
                    texts.append(str(part.get("text", "")))
        return texts
    for turn in body.get("contents") or []:
        for part in turn.get("parts", []) if isinstance(turn, dict) else []:
            if isinstance(part, dict) and "text" in part:
                texts.append(str(part["text"]))
    return texts


def _tools(api: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for tool in body.get("tools") or []:
        if api == RESPONSES:
            if tool.get("type") == "function":
                tools.append({"name": tool.get("name"),
                              "input_schema": tool.get("parameters") or {}})
            continue
        declarations = tool.get("functionDeclarations") or tool.get("function_declarations")
        for fn in declarations or []:
            tools.append({"name": fn.get("name"), "input_schema": (
                fn.get("parametersJsonSchema") or fn.get("parameters") or {})})
    return tools


def canonical_judge_body(api: str, body: dict[str, Any], model: str) -> dict[str, Any]:
    """The Messages body a scripted judge reads, from a Responses or Gemini judge request."""
    canonical: dict[str, Any] = {
        "model": model, "system": _system(api, body),
        "messages": [{"role": "user", "content": [{"type": "text", "text": t}
                                                   for t in _texts(api, body)]}],
    }
    tools = _tools(api, body)
    if tools:
        canonical["tools"] = tools
    return canonical


def native_judge_reply(api: str, reply: Reply, model: str,
                       usage: dict[str, int]) -> dict[str, Any]:
    """The scripted judge's reply as the API's non-streamed response body."""
    if api == RESPONSES:
        output: list[dict[str, Any]] = []
        for block in reply.content:
            if block.get("type") == "tool_use":
                output.append({"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:24],
                               "call_id": "call_" + uuid.uuid4().hex[:24],
                               "name": block.get("name"), "status": "completed",
                               "arguments": json.dumps(block.get("input") or {})})
            elif block.get("type") == "text":
                output.append({"type": "message", "id": "msg_" + uuid.uuid4().hex[:24],
                               "role": "assistant", "status": "completed",
                               "content": [{"type": "output_text", "annotations": [],
                                            "text": block.get("text", "")}]})
        cut = reply.stop_reason == "max_tokens"
        return {"id": "resp_" + uuid.uuid4().hex[:24], "object": "response",
                "created_at": int(time.time()), "model": model, "output": output,
                "status": "incomplete" if cut else "completed",
                "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
                "error": None, "parallel_tool_calls": False, "tool_choice": "auto",
                "tools": [], "usage": {
                    "input_tokens": usage["input"], "output_tokens": usage["output"],
                    "total_tokens": usage["input"] + usage["output"],
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0}}}
    parts: list[dict[str, Any]] = []
    for block in reply.content:
        if block.get("type") == "tool_use":
            parts.append({"functionCall": {"name": block.get("name"),
                                           "args": block.get("input") or {}}})
        elif block.get("type") == "text":
            parts.append({"text": block.get("text", "")})
    finish = "MAX_TOKENS" if reply.stop_reason == "max_tokens" else "STOP"
    return {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": finish, "index": 0}],
            "usageMetadata": {"promptTokenCount": usage["input"],
                              "candidatesTokenCount": usage["output"],
                              "totalTokenCount": usage["input"] + usage["output"]},
            "modelVersion": model}
