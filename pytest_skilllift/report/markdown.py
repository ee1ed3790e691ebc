"""Markdown building blocks every scorecard section (and ``compare``) renders with.  Pure.

Tables are padded so the raw text reads as well as the rendered view; numbers that are
unknown read ``n/a``; a table that shows fewer rows than it has says so right under it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def fmt(x: float | None, nd: int = 3) -> str:
    """Fixed decimals, or ``n/a`` for a missing number."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def signed(x: float | None, nd: int = 3) -> str:
    """Signed fixed decimals (``+0.319``), or ``n/a``."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.{nd}f}"


def money(x: float | None) -> str:
    """Dollars with cents (``$11.15``), or ``n/a``."""
    return "n/a" if x is None else f"${x:.2f}"


def ci_flag(m: Mapping[str, object]) -> str:
    """The "95% CI != 0?" cell of a model's lift: yes / no / why not computable."""
    if m.get("must_lift_se") is None:
        return "n/a (need >=2 prompts)"
    return "yes" if m.get("ci_excludes_zero") else "no"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A GitHub table with padded, aligned columns (readable as raw text)."""
    srows = [[str(c) for c in r] for r in rows]
    # Column-wise max of lengths (map/zip in C, not a Python loop per cell): tables have
    # ~10^4 rows on a large week.
    widths = [len(h) for h in headers]
    for i, col in enumerate(zip(*srows, strict=True)):
        widths[i] = max(widths[i], *map(len, col))
    fmt_line = "| " + " | ".join(f"{{:<{w}}}" for w in widths) + " |"
    out = [fmt_line.format(*headers), "| " + " | ".join("-" * w for w in widths) + " |"]
    out.extend(fmt_line.format(*r) for r in srows)
    return out


def cap_note(shown: int, total: int, what: str) -> list[str]:
    """The line under a capped table (no silent caps); nothing when every row is shown."""
    if shown >= total:
        return []
    return ["", f"_Showing the first {shown} of {total} {what}; all {total} are in "
            "`scorecard.json`._"]


def cell(text: str) -> str:
    """Keep a free-text value inside its table cell."""
    return text.replace("\r", " ").replace("\n", " ").replace("|", "\\|")
