"""Render the scorecard (markdown and JSON) from the ``scorecard.json`` card.  Pure.

The layout and wording follow the qdrant pipeline's ``scorecard.md`` (qdrant/skills
SCORING.md, "Skill Lift Scorecard") so a reader of either sees the same report; additions
(uncertainty detail, input problems, plots, rep ranges) are extra sections or trailing columns.
Each section renders itself (``report/sections/``); this module joins them in
``card.SECTIONS`` order and writes the JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pytest_skilllift.report.card import Scorecard, render_sections


def render_markdown(card: Scorecard) -> str:
    """scorecard.md from the scorecard.json card."""
    return "\n".join(render_sections(card))


def render_json(card: Mapping[str, Any]) -> str:
    """scorecard.json text (NaN never appears: numbers are None when unknown).

    Indented like ``json.dumps(indent=2)`` except that each element of a top-level list
    sits on one line: ``indent`` switches json to its pure-Python encoder, which takes
    seconds on a 10,000-row prompts table, while per-element compact dumps use the C one.
    """

    def dump(v: Any, indent: int | None) -> str:
        return json.dumps(v, indent=indent, ensure_ascii=False, allow_nan=False,
                          default=_json_default)

    parts = []
    for key, value in card.items():
        if isinstance(value, list) and value:
            body = ",\n".join("    " + dump(item, None) for item in value)
            text = "[\n" + body + "\n  ]"
        else:
            text = dump(value, 2).replace("\n", "\n  ")
        parts.append(f"  {dump(key, None)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _json_default(o: object) -> object:
    """numpy scalars that slipped through become plain Python numbers."""
    item = getattr(o, "item", None)
    if callable(item):
        return item()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


__all__ = ["render_json", "render_markdown"]
