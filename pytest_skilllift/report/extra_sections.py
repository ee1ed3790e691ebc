"""Scorecard sections supplied by ``pytest_skilllift_scorecard_sections`` implementations.

An implementation returns ``None``, one section or a list of sections; a section is
``(title, markdown)`` or ``(title, markdown, data)`` with ``data`` JSON-serialisable. They are
appended to scorecard.md as ``## <title>`` sections, in hook-call order, and listed in
scorecard.json under ``extra`` (``title``, ``source``, ``markdown``, ``data``). Pure: no pytest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, cast

from pytest_skilllift.report.card import Scorecard
from pytest_skilllift.report.scorecard import render_json
from pytest_skilllift.week.files import SCORECARD_JSON, atomic_write_text, scorecard_md

__all__ = ["ExtendedScorecard", "ExtraSection", "Section", "append_sections", "sections_from"]


class ExtraSection(TypedDict):
    """One hook-supplied section as scorecard.json lists it under ``extra``."""

    title: str
    #: The implementation that returned it (``conftest.py:function``).
    source: str
    markdown: str
    #: Whatever JSON-serialisable value the implementation returned with it (or None).
    data: Any


class ExtendedScorecard(Scorecard, total=False):
    """scorecard.json after a session whose hooks added sections: ``extra`` comes last, and
    only when there is at least one (``skilllift summarize`` never writes it)."""

    extra: list[ExtraSection]


@dataclass(frozen=True)
class Section:
    title: str
    markdown: str
    data: Any = None
    source: str = ""


def _one(value: Any, source: str) -> Section:
    if not isinstance(value, (tuple, list)) or len(value) not in (2, 3):
        raise ValueError(f"returned {value!r}; return (title, markdown) or "
                         "(title, markdown, data), or a list of them")
    title, markdown = value[0], value[1]
    if not isinstance(title, str) or not title.strip() or not isinstance(markdown, str):
        raise ValueError(f"returned a section with title {title!r} and markdown of type "
                         f"{type(markdown).__name__}; both must be strings (a non-empty title)")
    data = value[2] if len(value) == 3 else None
    try:
        json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"section {title!r}: its data is not JSON-serialisable ({exc})") from None
    return Section(title.strip(), markdown, data, source)


def sections_from(result: Any, source: str) -> list[Section]:
    """Normalise one implementation's return value; ``ValueError`` says what is wrong."""
    if result is None:
        return []
    if isinstance(result, (tuple, list)) and result and isinstance(result[0], str):
        return [_one(result, source)]
    if not isinstance(result, (tuple, list)):
        raise ValueError(f"returned a {type(result).__name__}; return (title, markdown), "
                         "(title, markdown, data), or a list of them")
    return [_one(item, source) for item in result]


def append_sections(week_dir: Path, card: Scorecard, markdown: str,
                    sections: list[Section]) -> tuple[ExtendedScorecard, str]:
    """Add ``sections`` to the scorecard card and markdown and rewrite both files."""
    data = cast("ExtendedScorecard", card)
    if not sections:
        return data, markdown
    data["extra"] = [{"title": s.title, "source": s.source, "markdown": s.markdown,
                      "data": s.data} for s in sections]
    parts = [markdown.rstrip("\n"), ""]
    for s in sections:
        parts += [f"## {s.title}\n", s.markdown.rstrip("\n"), ""]
    markdown = "\n".join(parts)
    atomic_write_text(scorecard_md(Path(week_dir)), markdown)
    atomic_write_text(Path(week_dir) / SCORECARD_JSON, render_json(data))
    return data, markdown
