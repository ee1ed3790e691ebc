"""The scorecard's head: which week, by what, the banner, and the input problems.

``problems`` and ``plots`` are filled in by ``summarize`` after every section is built (the
plots are drawn from the finished card); they sit here so scorecard.json keeps its key order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from pytest_skilllift import __version__

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context
    from pytest_skilllift.report.sections import coverage


class Plots(TypedDict):
    """File names of the drawn plots, beside scorecard.md (None: not drawn)."""

    forest: str | None
    trend: str | None


class Data(TypedDict):
    """scorecard.json's head keys."""

    week: str
    banner: str | None
    #: One plain line under the banner (the demo's labels whose agent CLI is missing).
    note: str | None
    #: The verdict sentence under the title (``verdicts.verdict_sentence``; "" for none).
    verdict: str
    generator: str
    model_order: list[str]
    #: Human-readable input problems; non-empty means the scorecard is partial.
    problems: list[str]
    plots: Plots


if TYPE_CHECKING:
    class Reads(Data, coverage.Data):
        """What ``render`` reads of the scorecard: these keys and coverage's (a failed week)."""


def build(ctx: Context) -> Data:
    """The head's scorecard.json keys, from the week's numbers."""
    return {
        "week": ctx.week.week_dir.name,
        "banner": ctx.banner,
        "note": None,
        "verdict": "",
        "generator": f"pytest-skilllift {__version__}",
        "model_order": list(ctx.week.models),
        "problems": [],
        "plots": {"forest": None, "trend": None},
    }


def render(card: Reads) -> list[str]:
    """The head of scorecard.md, as markdown lines."""
    L: list[str] = []
    from pytest_skilllift.report.sections.coverage import failed_headline

    failed = failed_headline(card["coverage"]) if "coverage" in card else None
    if failed:  # a week with nothing graded says why before anything else
        L.append(f"**{failed}**\n")
    if card.get("banner"):
        L.append(f"> **{card['banner']}**\n")
    if card.get("note"):
        L.append(f"_{card['note']}_\n")
    L.append(f"# Weekly Skill Scorecard — {card['week']}\n")
    if card.get("verdict"):
        L.append(f"**{card['verdict']}**\n")
    problems = card.get("problems") or []
    if problems:
        L.append("## ⚠ Input problems — this scorecard is partial\n")
        L += [f"- {p}" for p in problems]
        L.append("\nRows named above are excluded from every number below and counted under "
                 "Coverage / Run health; numbers that could not be computed read `n/a`.\n")
    return L
