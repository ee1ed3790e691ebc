"""``avoid`` violations, the most damaging failures, each with the judge's evidence quote."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from pytest_skilllift.report.markdown import by_agent, cap_note, cell, md_table

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

#: The markdown shows at most this many; the JSON keeps all of them (and the cap is stated).
MAX_VIOLATION_ROWS = 500


class Violation(TypedDict):
    """One violated ``avoid`` item: its run's coordinates, the item and the judge's evidence."""
    prompt: str
    model: str
    condition: str
    rep: int
    item: str
    evidence: str


class Data(TypedDict):
    """The Avoid violations section's keys in scorecard.json."""
    avoid_violations: list[Violation]


def build(ctx: Context) -> Data:
    # The week lists them in scorecard order already (prompt, model, condition).
    """The Avoid violations section's scorecard.json keys, from the week's numbers."""
    v = ctx.week.violations
    return {"avoid_violations": [
        {"prompt": p, "model": m, "condition": c, "rep": r, "item": i, "evidence": e}
        for p, m, c, r, i, e in zip(v.prompt, v.model, v.condition, v.rep, v.item_text,
                                    v.evidence, strict=True)
    ]}


def render(card: Data) -> list[str]:
    """The Avoid violations section of scorecard.md, as markdown lines."""
    viol = card.get("avoid_violations", [])
    L = ["## `avoid` violations (most damaging failures)\n"]
    if not viol:
        L.append("_None._\n")
        return L
    shown = viol[:MAX_VIOLATION_ROWS]
    rows = [[v["prompt"], v["model"], v["condition"], cell(v["item"])[:80],
             cell(v["evidence"])[:120]] for v in shown]
    L += md_table(*by_agent(card, ["prompt", "model", "condition", "violated item", "evidence"],
                            rows))
    L += cap_note(len(shown), len(viol), "violations")
    L.append("")
    return L
