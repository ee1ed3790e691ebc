"""Lift caveat: no-skill runs that fetched the published skill site on their own (their lift
understates the skill's value)."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.week.identity import skills_site
from pytest_skilllift.week.tables import distinct

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context


class SelfServed(TypedDict):
    #: The published site's host the runs watched for; "" when none was configured (the
    #: section is left out), None when the week does not say (shown, as before).
    """No-skill runs that fetched the published skill site on their own, and their prompts."""
    site: str | None
    no_skill_runs: int
    fetched_runs: int
    prompts: list[str]
    #: False when manifest.csv has no fetched_site column.
    available: bool


class Data(TypedDict):
    """The Self-served skill section's keys in scorecard.json."""
    baseline_self_served: SelfServed


def build(ctx: Context) -> Data:
    """The Self-served skill section's scorecard.json keys, from the week's numbers."""
    week = ctx.week
    ns = week.manifest.cond == 0
    served = ns & (ctx.run_column("fetched_site") == 1)
    prompts = sorted({week.prompts[p] for p in distinct(week.manifest.prompt[served]).tolist()
                      if p >= 0})
    return {"baseline_self_served": {
        "site": skills_site(week.week_dir),
        "no_skill_runs": int(np.count_nonzero(ns)), "fetched_runs": int(served.sum()),
        "prompts": prompts, "available": "fetched_site" in week.manifest.columns,
    }}


def render(card: Data) -> list[str]:
    """The Self-served skill section of scorecard.md, as markdown lines."""
    s = card.get("baseline_self_served", {})
    if s.get("site") == "":  # no published site configured: nothing to self-serve from
        return []
    L = ["## Lift caveat — baseline self-served the skill\n"]
    if not s.get("available", True):
        L.append("_Not available: manifest.csv has no fetched_site column._\n")
        return L
    if not s.get("no_skill_runs"):
        L.append("_No no-skill runs._\n")
        return L
    L.append(f"- no-skill runs that fetched `{s.get('site') or 'skills.qdrant.tech'}`: "
             f"**{s['fetched_runs']} of {s['no_skill_runs']}**")
    if s.get("prompts"):
        L.append(f"- affected prompts: {', '.join(s['prompts'])}")
        L.append("- For these, lift is measured against a baseline that reached the "
                 "published skill on its own — so it *understates* the skill's value.")
    L.append("")
    return L
