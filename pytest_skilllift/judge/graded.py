"""The graded items of a week, read from its ``scores.csv`` for the judge's side doors.

``skilllift label`` samples them for a person to label and ``skilllift judge-check`` compares
the person's labels with them. A week is small for this purpose (hundreds to thousands of
items), so the ``csv`` module reads it whole. Both qdrant weeks (no ``item_index``) and ours
work: a missing ``item_index`` is the item's position among the run's items of its type, which
is how the rubric numbers them.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pytest_skilllift.week.columns import ITEM_TYPES, VERDICTS
from pytest_skilllift.week.files import SCORES_CSV

__all__ = ["GradedItem", "GradedWeekError", "ItemKey", "read_graded_items", "rep_key",
           "text_key"]

#: ``contested`` values that mean "not contested" (``week.tables.JUDGE_NOT_CONTESTED``).
_NOT_CONTESTED: frozenset[str] = frozenset({"", "0", "false", "no"})

#: (prompt, model, condition, rep, item_type, item_index) — how a label row names an item.
ItemKey = tuple[str, str, str, int, str, int]


class GradedWeekError(Exception):
    """The week has no readable graded items; the message names the file and the fix."""


@dataclass(frozen=True)
class GradedItem:
    """One rubric item of one run as the judge graded it (``verdict`` empty = ungraded)."""

    prompt: str
    model: str
    condition: str
    rep: int
    item_type: str
    item_index: int
    item_text: str
    verdict: str
    evidence: str = ""
    claimed_verdict: str = ""
    claimed_evidence: str = ""
    run_id: str = ""
    #: The judge's samples disagreed on the item (``contested`` column, any truthy value).
    contested: bool = False
    #: ``evidence_ok`` column as written: "1" quote found, "0" not found, "" not checked.
    evidence_ok: str = ""

    @property
    def key(self) -> ItemKey:
        """``(prompt, model, condition, rep, item_type, item_index)``: the item's identity."""
        return (self.prompt, self.model, self.condition, self.rep, self.item_type,
                self.item_index)

    @property
    def graded(self) -> bool:
        """Whether the judge gave a verdict of the item's vocabulary."""
        return self.item_type in VERDICTS and self.verdict in VERDICTS[self.item_type]

    @property
    def positive(self) -> bool:
        """met (must/bonus) or violated (avoid)."""
        return self.graded and self.verdict == VERDICTS[self.item_type][0]


def rep_key(value: str) -> int | None:
    """``"1"``, ``"1.0"`` → 1; anything else → None."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() and number >= 0 else None


def text_key(text: str) -> str:
    """Item text compared whitespace-insensitively (a label sheet may rewrap it)."""
    return " ".join(text.split())


def _rows(path: Path) -> Iterator[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in ("prompt", "model", "condition", "rep", "item_type", "verdict")
                   if c not in (reader.fieldnames or [])]
        if missing:
            raise GradedWeekError(f"{path}: column(s) {', '.join(missing)} missing from the "
                                  "header; is this a scores.csv?")
        yield from reader


def read_graded_items(week_dir: Path) -> list[GradedItem]:
    """Every item row of ``week_dir/scores.csv`` (graded or not), in file order."""
    path = Path(week_dir) / SCORES_CSV
    if not path.is_file():
        raise GradedWeekError(f"{path}: not found; grade the week first (pytest --skill-lift, "
                              "or skilllift judge WEEKDIR)")
    items: list[GradedItem] = []
    position: dict[tuple[str, str, str, int, str], int] = {}
    try:
        for row in _rows(path):
            rep = rep_key(row.get("rep", ""))
            item_type = (row.get("item_type") or "").strip()
            if rep is None or item_type not in ITEM_TYPES:
                continue  # summarize reports such rows; nothing here can match them
            group = (row["prompt"].strip(), row["model"].strip(), row["condition"].strip(), rep,
                     item_type)
            position[group] = position.get(group, 0) + 1
            index = rep_key(row.get("item_index") or "") or position[group]
            items.append(GradedItem(
                *group, item_index=index, item_text=(row.get("item_text") or "").strip(),
                verdict=(row.get("verdict") or "").strip(),
                evidence=row.get("evidence_quote") or "",
                claimed_verdict=(row.get("claimed_verdict") or "").strip(),
                claimed_evidence=row.get("claimed_evidence") or "",
                run_id=(row.get("run_id") or "").strip(),
                contested=(row.get("contested") or "").strip().lower() not in _NOT_CONTESTED,
                evidence_ok=(row.get("evidence_ok") or "").strip(),
            ))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise GradedWeekError(f"{path}: unreadable ({exc})") from exc
    return items
