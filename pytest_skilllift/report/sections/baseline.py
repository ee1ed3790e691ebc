"""Provenance of a reused baseline (``--skill-lift-baseline-from``): how many no-skill runs were
copied in, from which week, which were generated instead and why, and the caveat that a reused
baseline shares its week's sampling noise.  Rendered inside the Provenance section."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy as np
import pyarrow as pa

from pytest_skilllift.model import ARMS, NO_SKILL
from pytest_skilllift.report.markdown import by_agent, cap_note, cell, md_table

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

_NO = ARMS.index(NO_SKILL)
MAX_ROWS = 100


class Regenerated(TypedDict):
    """No-skill runs of one (prompt, model) generated although a baseline was asked for."""

    prompt: str
    model: str
    runs: int
    reason: str


class BaselineReuse(TypedDict):
    """No-skill runs reused from other weeks, the weeks, the runs made again, and the caveat."""
    reused_runs: int
    no_skill_runs: int
    source_weeks: list[str]
    regenerated: list[Regenerated]
    caveat: str


class Data(TypedDict):
    """The Reused baseline section's keys in scorecard.json."""
    baseline: BaselineReuse | None


def _strings(arr: pa.Array | None, rows: np.ndarray) -> list[str]:
    if arr is None or rows.size == 0:
        return [""] * rows.size
    return [str(v or "").strip() for v in arr.take(pa.array(rows)).to_pylist()]


def build(ctx: Context) -> Data:
    """The Reused baseline section's scorecard.json keys, from the week's numbers."""
    week = ctx.week
    n = week.n_runs
    if n == 0 or (week.manifest.baseline_from is None and week.manifest.baseline_reason is None):
        return {"baseline": None}
    reused = week.manifest.reused if week.manifest.reused.size == n else np.zeros(n, bool)
    no_skill = week.manifest.cond == _NO
    reason_rows = np.flatnonzero(no_skill & ~reused)
    reasons = _strings(week.manifest.baseline_reason, reason_rows)
    asked = [(r, why) for r, why in zip(reason_rows.tolist(), reasons, strict=True) if why]
    if not reused.any() and not asked:
        return {"baseline": None}
    sources = sorted(set(_strings(week.manifest.baseline_from, np.flatnonzero(reused))) - {""})
    groups: dict[tuple[str, str, str], int] = {}
    for r, why in asked:
        p, m = week.manifest.prompt[r], week.manifest.model[r]
        key = (week.prompts[p] if p >= 0 else "", week.models[m] if m >= 0 else "", why)
        groups[key] = groups.get(key, 0) + 1
    regenerated: list[Regenerated] = [
        {"prompt": p, "model": m, "runs": k, "reason": why}
        for (p, m, why), k in sorted(groups.items())]
    named = ", ".join(sources) or "an earlier week"
    return {"baseline": {
        "reused_runs": int(reused.sum()), "no_skill_runs": int(no_skill.sum()),
        "source_weeks": sources, "regenerated": regenerated,
        "caveat": (f"a reused baseline shares {named}'s sampling noise: the no-skill answers "
                   "are the same draws, so this week's lift and that week's are not "
                   "independent measurements, and a week-over-week change between them "
                   "reflects the with-skill arm alone"),
    }}


def render(card: Data) -> list[str]:
    """The Reused baseline section of scorecard.md, as markdown lines."""
    b = card.get("baseline")
    if not b:
        return []
    weeks = ", ".join(f"`{w}`" for w in b["source_weeks"]) or "_(none)_"
    L = ["### Baseline reused from an earlier week\n",
         f"- no-skill runs reused: **{b['reused_runs']} of {b['no_skill_runs']}**, from week "
         f"{weeks} (`--skill-lift-baseline-from`): copied in with their grades, no agent or "
         "judge call made for them this week",
         f"- ⚠ caveat: {b['caveat']}."]
    regen = b["regenerated"]
    if regen:
        runs = sum(r["runs"] for r in regen)
        L += ["", f"Generated this week instead ({runs} run(s)), and why:", ""]
        shown = regen[:MAX_ROWS]
        L += md_table(*by_agent(card, ["prompt", "model", "runs", "why not reused"],
                      [[r["prompt"], r["model"], r["runs"], cell(r["reason"])] for r in shown]))
        L += cap_note(len(shown), len(regen), "regenerated (prompt, model) rows")
    L.append("")
    return L
