"""The estimate made before the runs (``estimate.json``, ``run.estimate``) beside what the
week spent and took, with the estimate's error — shown in Cost & time.

The week's estimate is the sum of its sessions' (each estimated what it was about to make);
the actual is what the week spent since the first estimate (the spend recorded before it is
taken off), generation and judge apart, and the week's wall-clock window.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from pytest_skilllift.intervals import EPS
from pytest_skilllift.report.markdown import money
from pytest_skilllift.report.sections import cost
from pytest_skilllift.week.files import ESTIMATE_FILE, read_text_nofollow

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context


class Compared(TypedDict):
    """One quantity, estimated (with its range) beside what was spent or taken."""
    estimate: float | None
    low: float | None
    high: float | None
    actual: float | None
    #: (actual − estimate) / estimate; None when either is unknown or the estimate is 0.
    error: float | None
    #: Whether the actual lies within [low, high].
    within: bool | None


class CostEstimate(TypedDict):
    """The sessions' estimates, summed, against the week's actual cost and wall time."""
    sessions: int
    source: list[str]
    generation_usd: Compared
    judge_usd: Compared
    total_usd: Compared
    wall_s: Compared


class Data(TypedDict):
    """The Estimate vs actual section's keys in scorecard.json."""
    cost_estimate: CostEstimate | None


def read_estimates(week_dir: Path) -> list[dict[str, Any]]:
    """The sessions' estimates in ``estimate.json`` (none: absent or unreadable)."""
    try:
        data = json.loads(read_text_nofollow(Path(week_dir) / ESTIMATE_FILE))
        sessions = data["sessions"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [s for s in sessions if isinstance(s, dict)] if isinstance(sessions, list) else []


def _sum(sessions: list[dict[str, Any]], key: str, part: str) -> float | None:
    total = 0.0
    for s in sessions:
        v = (s.get(key) or {}).get(part)
        if not isinstance(v, (int, float)):
            return None
        total += float(v)
    return total


def _compare(sessions: list[dict[str, Any]], key: str, actual: float | None) -> Compared:
    est, low, high = (_sum(sessions, key, p) for p in ("estimate", "low", "high"))
    error = (actual - est) / est if actual is not None and est else None
    within = (low - EPS <= actual <= high + EPS
              if actual is not None and low is not None and high is not None else None)
    return {"estimate": est, "low": low, "high": high, "actual": actual, "error": error,
            "within": within}


def build(ctx: Context) -> Data:
    """The Estimate vs actual section's scorecard.json keys, from the week's numbers."""
    sessions = read_estimates(ctx.week.week_dir)
    if not sessions:
        return {"cost_estimate": None}
    ct = cost.build(ctx)["cost_time"]
    first = sessions[0]
    before_gen = float(first.get("spent_before_generation_usd") or 0.0)
    before_judge = float(first.get("spent_before_judge_usd") or 0.0)
    gen = ct["generation_usd"]
    judge = ct["judge_usd"]
    gen_now = None if gen is None else max(0.0, gen - before_gen)
    judge_now = None if judge is None else max(0.0, judge - before_judge)
    total = None if gen_now is None and judge_now is None else (gen_now or 0.0) + (judge_now
                                                                                  or 0.0)
    sources = sorted({c.get("source", "") for s in sessions for c in s.get("cells", [])
                      if isinstance(c, dict)} - {"", "nothing to generate"})
    return {"cost_estimate": {
        "sessions": len(sessions), "source": sources,
        "generation_usd": _compare(sessions, "generation_usd", gen_now),
        "judge_usd": _compare(sessions, "judge_usd", judge_now),
        "total_usd": _compare(sessions, "total_usd", total),
        "wall_s": _compare(sessions, "wall_s", ct["wall_clock_s"]),
    }}


def _row(name: str, c: Compared, fmt: Any) -> str:
    if c["estimate"] is None:
        return f"| {name} | unknown | | {fmt(c['actual'])} | |"
    err = "n/a" if c["error"] is None else f"{c['error']:+.0%}"
    inside = {True: "yes", False: "**no**", None: "n/a"}[c["within"]]
    return (f"| {name} | {fmt(c['estimate'])} | {fmt(c['low'])}–{fmt(c['high'])} | "
            f"{fmt(c['actual'])} | {err} ({inside}) |")


def _mins(x: float | None) -> str:
    return "n/a" if x is None else f"{x / 60:.1f} min"


def render(card: Data) -> list[str]:
    """The Estimate vs actual section of scorecard.md, as markdown lines."""
    e = card.get("cost_estimate")
    if not e:
        return []
    n = e["sessions"]
    L = [f"**Estimate before the run vs actual** ({n} session{'s' * (n != 1)}; "
         f"from {'; '.join(e['source']) or 'nothing to make'}):", "",
         "| | estimate | range | actual | error (within range?) |", "|---|---|---|---|---|",
         _row("generation", e["generation_usd"], money), _row("judge", e["judge_usd"], money),
         _row("total", e["total_usd"], money), _row("wall time", e["wall_s"], _mins), ""]
    return L
