"""Activation / trigger misses: how each with-skill run reached (or missed) its skill.

Activation sources in precedence order skill_tool > file_read > web_fetch > none (qdrant/skills
SCORING.md); a with-skill run with activation ``none`` is a trigger miss.  Only with-skill runs
that completed count: an invalid install, an outage, a timeout, a budget cap or a CLI that never
started says nothing about the skill's description, so such a run is counted here as excluded
(and named in the trajectory audit), never as a trigger miss.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.report import stats
from pytest_skilllift.report.context import json_float
from pytest_skilllift.report.markdown import cap_note, fmt, md_table
from pytest_skilllift.week.columns import ACTIVATIONS
from pytest_skilllift.week.identity import skills_site

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

MAX_ACTIVATION_ROWS = 20000


class ActivationRow(TypedDict):
    """``activation[]``: one prompt's with-skill runs by activation source."""

    prompt: str
    skill_family: str
    with_skill_runs: int
    activated_runs: int
    #: Runs per source in ``ACTIVATIONS``, plus ``unknown`` when any value was not one.
    counts: dict[str, int]
    reached_leaf: int
    never_triggered: bool


class ActivationSummary(TypedDict):
    """How the with-skill runs reached their skill: trigger misses with their 95% intervals,
    site fetches."""
    with_skill_runs: int
    trigger_misses: int
    trigger_miss_rate_wilson95: list[float | None]
    #: The same rate's 95% interval resampling whole prompts (misses cluster in a few).
    trigger_miss_rate_cluster95: list[float | None]
    web_fetch_runs: int
    #: With-skill runs that fetched the published skills site (``fetched_site``), whatever
    #: their activation source: the runs whose lift may come from the site, not SKILL.md.
    site_fetch_runs: int
    #: The published site's host ("" none configured: no site line; None: the week does not
    #: say, shown as before).
    site: str | None
    reached_leaf_runs: int
    reached_leaf_rate_wilson95: list[float | None]
    #: The same rate's 95% interval resampling whole prompts (reps of a prompt agree).
    reached_leaf_rate_cluster95: list[float | None]
    never_triggered: list[str]
    unknown_activation_runs: int
    #: False when manifest.csv has no skill_activation column.
    available: bool
    #: With-skill runs that did not complete: not counted above (listed in audit.excluded_runs).
    excluded_runs: int


class Data(TypedDict):
    """The Activation section's keys in scorecard.json."""
    activation: list[ActivationRow]
    activation_summary: ActivationSummary


def build(ctx: Context) -> Data:
    """The Activation section's scorecard.json keys, from the week's numbers."""
    week = ctx.week
    n_src = len(ACTIVATIONS)
    ws = ctx.with_skill_runs
    reached = ctx.run_column("reached_leaf")
    activation: list[ActivationRow] = []
    act_total = np.zeros(n_src + 1, np.int64)
    cluster: tuple[float | None, float | None] = (None, None)
    leaf_cluster: tuple[float | None, float | None] = (None, None)
    if week.manifest.present and week.prompts:
        counts, runs, leaf, _ = stats.activation_counts(
            week.manifest.prompt, week.manifest.activation, reached,
            ctx.run_column("fetched_site"), ws, len(week.prompts), n_src)
        act_total = counts.sum(axis=0)
        none_i = ACTIVATIONS.index("none")
        cluster = stats.cluster_bootstrap_rate(counts[runs > 0, none_i], runs[runs > 0])
        leaf_cluster = stats.cluster_bootstrap_rate(leaf[runs > 0], runs[runs > 0])
        # The arrays as Python lists first: a week of 5,000 prompts read them a cell at a
        # time through numpy scalars (most of this section's time).
        shown = np.flatnonzero(runs > 0)
        counts_l, runs_l, leaf_l = (counts[shown].tolist(), runs[shown].tolist(),
                                    leaf[shown].tolist())
        for p, c, n_runs, n_leaf in zip(shown.tolist(), counts_l, runs_l, leaf_l, strict=True):
            by_source: dict[str, int] = {a: int(c[i]) for i, a in enumerate(ACTIVATIONS)}
            if c[n_src]:
                by_source["unknown"] = int(c[n_src])
            activation.append({
                "prompt": week.prompts[p],
                "skill_family": week.prompt_family.get(week.prompts[p], ""),
                "with_skill_runs": int(n_runs),
                "activated_runs": int(sum(c[i] for i in range(n_src) if i != none_i)),
                "counts": by_source,
                "reached_leaf": int(n_leaf),
                "never_triggered": bool(c[none_i] == int(n_runs)),
            })
    n_ws = int(np.count_nonzero(ws))
    misses = int(act_total[ACTIVATIONS.index("none")])
    leaf_total = int(np.count_nonzero(ws & (reached == 1)))
    site_total = int(np.count_nonzero(ws & (ctx.run_column("fetched_site") == 1)))
    return {
        "activation": activation,
        "activation_summary": {
            "with_skill_runs": n_ws, "trigger_misses": misses,
            "trigger_miss_rate_wilson95": [json_float(x)
                                           for x in stats.wilson_interval(misses, n_ws)],
            "trigger_miss_rate_cluster95": [json_float(x) for x in cluster],
            "web_fetch_runs": int(act_total[ACTIVATIONS.index("web_fetch")]),
            "site_fetch_runs": site_total, "site": skills_site(week.week_dir),
            "reached_leaf_runs": leaf_total,
            "reached_leaf_rate_wilson95": [json_float(x)
                                           for x in stats.wilson_interval(leaf_total, n_ws)],
            "reached_leaf_rate_cluster95": [json_float(x) for x in leaf_cluster],
            "never_triggered": [a["prompt"] for a in activation if a["never_triggered"]],
            "unknown_activation_runs": int(act_total[n_src]),
            "available": "skill_activation" in week.manifest.columns,
            "excluded_runs": int(np.count_nonzero(ctx.excluded_with_skill)),
        },
    }


def _excluded_note(s: ActivationSummary) -> list[str]:
    """One line: how many with-skill runs were left out, and where they are listed."""
    n = s.get("excluded_runs", 0)
    if not n:
        return []
    return [f"- with-skill runs that did not complete (outage, timeout, failed install, budget "
            f"cap, CLI never started): **{n}** — excluded, not trigger misses; listed under "
            "the trajectory audit"]


def render(card: Data) -> list[str]:
    """The Activation section of scorecard.md, as markdown lines."""
    L = ["## Activation / trigger misses\n"]
    s = card.get("activation_summary", {})
    if not s.get("available", True):
        L.append("_Not available: manifest.csv has no skill_activation column._\n")
        return L
    if not s.get("with_skill_runs"):
        L.append("_No completed with-skill runs._\n")
        return [*L, *_excluded_note(s), ""] if s.get("excluded_runs") else L
    lo, hi = s.get("trigger_miss_rate_wilson95", [None, None])
    L.append(f"- with-skill runs: **{s['with_skill_runs']}**")
    L.append("- **trigger misses** (activation=none — skill present but never reached): "
             f"**{s['trigger_misses']}**")
    if s.get("site") != "":  # only where the runs had a published site to fetch
        L.append("- lift sourced from the published site (with-skill runs that fetched the "
                 f"skills site, whatever else they read): **{s.get('site_fetch_runs', 0)}** "
                 f"({s['web_fetch_runs']} of them reached the skill through the site alone, "
                 "activation=web_fetch)")
    clo, chi = s.get("trigger_miss_rate_cluster95") or [None, None]
    cluster = "" if clo is None else f"; resampling prompts {fmt(clo)}–{fmt(chi)}"
    llo, lhi = s.get("reached_leaf_rate_wilson95") or [None, None]
    lclo, lchi = s.get("reached_leaf_rate_cluster95") or [None, None]
    leaf_ci = ("" if llo is None else f" (95% Wilson {fmt(llo)}–{fmt(lhi)}"
               + ("" if lclo is None else f"; resampling prompts {fmt(lclo)}–{fmt(lchi)}")
               + ")")
    L.append(f"- trigger-miss rate {fmt(s['trigger_misses'] / s['with_skill_runs'])} "
             f"(95% Wilson {fmt(lo)}–{fmt(hi)}{cluster}); reached leaf in "
             f"{s['reached_leaf_runs']} of {s['with_skill_runs']} runs{leaf_ci}")
    if s.get("unknown_activation_runs"):
        L.append(f"- runs with an unknown activation value: **{s['unknown_activation_runs']}**")
    L += _excluded_note(s)
    L.append("")
    acts = card.get("activation", [])
    shown = acts[:MAX_ACTIVATION_ROWS]
    rows = []
    for a in shown:
        items = sorted((k, v) for k, v in a["counts"].items() if v)
        text = ", ".join(f"{k}×{v}" for k, v in items)
        if a.get("never_triggered"):
            text += "  ⚠ never triggered"
        rows.append([a["prompt"], text, f"{a['reached_leaf']}/{a['with_skill_runs']}"])
    L += md_table(["prompt", "activations (with-skill)", "reached leaf"], rows)
    L += cap_note(len(shown), len(acts), "activation rows")
    L.append("")
    return L
