"""Markdown building blocks every scorecard section (and ``compare``) renders with.  Pure.

Tables are padded so the raw text reads as well as the rendered view; numbers that are
unknown read ``n/a``; a table that shows fewer rows than it has says so right under it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from pytest_skilllift.model import AGENTS

#: Characters that never reach a rendered report from untrusted text: C0/C1 controls (ANSI
#: escapes start with ESC), DEL, line and paragraph separators, and the bidirectional
#: overrides that make text read differently from what it is.
CONTROL_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f"
                           "\u202a-\u202e\u2066-\u2069]")
#: Markdown that could leave a cell or a quote: a table pipe, a code span, a link or image,
#: an escape, and a heading, quote or list marker at the start.
_MD_INLINE = re.compile(r"[\\`|\[\]]")
_MD_LEADING = re.compile(r"^(\s*\d*)([#>+\-=*.)])")


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
    if m.get("ci_excludes_zero") is None:
        return "not estimable (SE 0: every prompt's difference equal)"
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


def untrusted(text: object) -> str:
    """Untrusted text (model answers, judge quotes, reasons, file names) made inert for
    markdown: one line (controls and line breaks become spaces), HTML special characters as
    entities (no ``<img onerror=…>``, no comment that hides the rest of the card), and the
    markdown that could leave its cell or quote escaped (``|``, code spans, links, a leading
    ``#`` heading or ``>`` quote). The one escaping function of every report we write —
    scorecard.md, the GitHub step summary, ``compare`` — so no renderer is forgotten."""
    value = CONTROL_CHARS.sub(" ", str(text))
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    value = _MD_INLINE.sub(lambda m: "\\" + m[0], value)
    return _MD_LEADING.sub(lambda m: m[1] + "\\" + m[2], value)


#: Kept under its older name: a free-text value inside its table cell.
cell = untrusted


# -- a week whose labels run on more than one agent ----------------------------------------


def label_agents(card: Mapping[str, object]) -> dict[str, str]:
    """label → its agent when the week's labels run on more than one agent (from
    ``provenance.agents``), else empty: a one-agent week's tables are left as they were."""
    prov = cast("dict[str, Any]", card.get("provenance") or {})
    agents = cast("dict[str, list[str]]", prov.get("agents") or {})
    if len(agents) < 2:
        return {}
    return {label: agent for agent, labels in agents.items() for label in labels}


def by_agent(card: Mapping[str, object], headers: Sequence[str], rows: Sequence[Sequence[object]],
             ) -> tuple[list[str], list[list[object]]]:
    """A table with a ``model`` (label) column, grouped by agent when the week mixes agents:
    an ``agent`` column right after the label's, and — when the label is the first column,
    one row per label — the rows stably sorted by agent (``model.AGENTS`` order), so each
    agent's labels sit together in the order the section gave them. Unchanged otherwise."""
    of = label_agents(card)
    if not of or "model" not in headers:
        return list(headers), [list(r) for r in rows]
    at = list(headers).index("model")
    out = [[*r[:at + 1], of.get(str(r[at]), ""), *r[at + 1:]] for r in rows]
    if at == 0:
        rank = {a: i for i, a in enumerate(AGENTS)}
        out.sort(key=lambda r: rank.get(str(r[1]), len(rank)))
    return [*headers[:at + 1], "agent", *headers[at + 1:]], out
