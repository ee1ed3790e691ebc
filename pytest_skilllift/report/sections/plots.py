"""The Plots section: links to the PNGs ``summarize`` drew (its data is the head's ``plots``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_skilllift.report.sections.header import Data


def render(card: Data) -> list[str]:
    """The Plots section of scorecard.md, as markdown lines."""
    pl = card.get("plots", {})
    if not pl.get("forest") and not pl.get("trend"):
        return []
    L = ["## Plots\n"]
    if pl.get("forest"):
        L.append(f"![Per-prompt must-coverage lift with rep ranges, per model]({pl['forest']})")
        L.append("")
    if pl.get("trend"):
        L.append(f"![Weekly must-coverage lift ± SE per model]({pl['trend']})")
        L.append("")
    return L
