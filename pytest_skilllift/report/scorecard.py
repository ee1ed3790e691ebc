"""Render the scorecard (markdown and JSON) from the ``scorecard.json`` card.  Pure.

The layout and wording follow the qdrant pipeline's ``scorecard.md`` (qdrant/skills
SCORING.md, "Skill Lift Scorecard") so a reader of either sees the same report; additions
(uncertainty detail, input problems, plots, rep ranges) are extra sections or trailing columns.
Each section renders itself (``report/sections/``); this module joins them in
``card.SECTIONS`` order and writes the JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from pytest_skilllift.report.card import Scorecard, render_sections


def render_markdown(card: Scorecard) -> str:
    """scorecard.md from the scorecard.json card."""
    return "\n".join(render_sections(card))


def render_json(card: Mapping[str, Any]) -> str:
    """scorecard.json text: :func:`render_json_bytes` decoded."""
    return render_json_bytes(card).decode("utf-8")


def render_json_bytes(card: Mapping[str, Any]) -> bytes:
    """scorecard.json as UTF-8 bytes, laid out like ``json.dumps(indent=2)``, newline-ended.

    One orjson call encodes the whole card: a bad week's card has ~165,000 rows (prompts,
    activation, every avoid violation), which per-row ``json.dumps`` took seconds to encode.
    Numbers are unknown as ``null`` (the builders turn NaN into None; orjson would write a
    stray NaN as ``null`` too, never as the invalid ``NaN``); floats are written in their
    shortest round-trip form (``0.00001`` where ``json`` writes ``1e-05`` — the same number).
    """
    return orjson.dumps(card, default=_json_default, option=_ORJSON_OPTIONS)


#: Indented; numpy scalars and arrays encoded natively; non-string keys written as strings
#: (as ``json.dumps`` does), so a section never has to care.
_ORJSON_OPTIONS = (orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY
                   | orjson.OPT_NON_STR_KEYS)


def _json_default(o: object) -> object:
    """numpy scalars that slipped through become plain Python numbers."""
    item = getattr(o, "item", None)
    if callable(item):
        return item()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


__all__ = ["render_json", "render_json_bytes", "render_markdown"]
