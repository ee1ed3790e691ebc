"""The Claude-shaped events an agent's stream reader builds (:class:`EventBuilder`).

Each agent's event stream is rewritten as the Claude Code events it corresponds to (its
skill tool a ``Skill`` call with the delivered body after it, its file reads ``Read``, its
web tools ``WebFetch``), so one transcript reader serves every agent
(``trace/agent_streams.py``). Pure logic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

SKILL_BODY_PREFIX = "Base directory for this skill:"
_FRONTMATTER = re.compile(r"\A---\s*\n.*?\n---\s*\n?", re.S)


@dataclass
class EventBuilder:
    """The Claude-shaped events being built, and what the result event will say."""

    events: list[dict[str, Any]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    turns: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    duration_ms: int | None = None
    ended: bool = False
    error: str = ""

    def tool(self, tid: str, name: str, args: dict[str, Any]) -> None:
        """Add an assistant event calling tool ``name`` (id ``tid``) with ``args``."""
        self.events.append({"type": "assistant", "message": {"id": f"m_{tid}", "content": [
            {"type": "tool_use", "id": tid, "name": name, "input": args}]}})

    def result(self, tid: str, text: str, is_error: bool, body: str | None = None) -> None:
        """Add the user event carrying tool ``tid``'s result (and a skill tool's ``body``)."""
        blocks: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": tid,
                                         "content": text, "is_error": is_error}]
        if body is not None:  # a skill tool's body, delivered as Claude Code delivers it
            blocks.append({"type": "text", "text": body})
        self.events.append({"type": "user", "message": {"content": blocks}})

    def say(self, text: str) -> None:
        """Add an assistant text event (its text is kept for the final answer)."""
        self.texts.append(text)
        self.events.append({"type": "assistant", "message": {
            "id": f"t_{len(self.events)}", "content": [{"type": "text", "text": text}]}})

    def add_tokens(self, inp: Any, out: Any) -> None:
        """Add a reply's token counts; a count that is not an int is left out."""
        if isinstance(inp, int):
            self.input_tokens = (self.input_tokens or 0) + inp
        if isinstance(out, int):
            self.output_tokens = (self.output_tokens or 0) + out


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (event fields drift)."""
    return value if isinstance(value, dict) else {}


def body_text(base_dir: str, body: str) -> str:
    """A skill body as Claude Code delivers it: its base directory, then the SKILL.md
    without its frontmatter."""
    return f"{SKILL_BODY_PREFIX} {base_dir}\n\n{_FRONTMATTER.sub('', body, count=1)}"
