"""What a scripted model returns: a :class:`Reply` per turn, from a :data:`Handler`.

Shared by the stand-in server (which sends replies) and the scripts that make them (the
agent, the judge, the demo); it imports neither, so they never import each other.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Reply:
    """One scripted model turn.

    ``content`` holds Anthropic content blocks, e.g. ``{"type": "text", "text": "..."}`` or
    ``{"type": "tool_use", "id": "toolu_...", "name": "Skill", "input": {...}}`` (a missing
    tool_use ``id`` is filled in). ``usage`` overrides the estimated token counts;
    ``model`` overrides the echoed request model.
    """

    content: list[dict[str, Any]]
    stop_reason: str = "end_turn"
    usage: dict[str, Any] | None = None
    model: str | None = None

    @classmethod
    def text(cls, text: str, **kwargs: Any) -> Reply:
        """A single text block reply."""
        return cls(content=[{"type": "text", "text": text}], **kwargs)

    @classmethod
    def tool(cls, name: str, input: dict[str, Any], *, text: str | None = None) -> Reply:
        """A tool call (optionally preceded by a text block), stop_reason ``tool_use``."""
        blocks: list[dict[str, Any]] = []
        if text:
            blocks.append({"type": "text", "text": text})
        blocks.append({"type": "tool_use", "id": new_tool_id(), "name": name, "input": input})
        return cls(content=blocks, stop_reason="tool_use")


#: A scripted model: request JSON body -> the reply to send.
Handler = Callable[[dict[str, Any]], Reply]


def new_tool_id() -> str:
    """A fresh ``toolu_…`` id in the real API's shape."""
    return "toolu_01" + uuid.uuid4().hex[:22]
