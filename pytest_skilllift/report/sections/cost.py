"""Cost & time: actual $ spent (generation per model, judge), and the generation phase's time."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.report import stats
from pytest_skilllift.report.markdown import money

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context
    from pytest_skilllift.report.sections import coverage


class CostTime(TypedDict):
    """Dollars spent (generation per model, judge, total) and the generation phase's time."""
    generation_usd: float | None
    generation_usd_per_model: dict[str, float]
    generation_runs_with_cost: int
    judge_usd: float | None
    judge_runs_with_cost: int
    total_usd: float | None
    #: runs_timed, total_s, mean_s, median_s, max_s (``stats.duration_summary``).
    time: dict[str, float | int | None]
    wall_clock_s: float | None
    speedup: float | None
    #: No-skill runs copied in from an earlier week (--skill-lift-baseline-from): paid there,
    #: so left out of this week's spend and time.
    reused_runs: int


class Data(TypedDict):
    """The Cost & time section's keys in scorecard.json."""
    cost_time: CostTime


if TYPE_CHECKING:
    class Reads(Data, coverage.Data):
        """What ``render`` reads of the scorecard: these keys and coverage's (the run count)."""


def build(ctx: Context) -> Data:
    """The Cost & time section's scorecard.json keys, from the week's numbers."""
    week = ctx.week
    M = len(week.models)
    reused = (week.manifest.reused if week.manifest.reused.size == week.n_runs
              else np.zeros(week.n_runs, bool))
    cost_all = ctx.run_column("total_cost_usd")
    has_cost = ~np.isnan(cost_all) & (week.manifest.model >= 0) & ~reused
    per_model_gen = np.bincount(week.manifest.model[has_cost], weights=cost_all[has_cost],
                                minlength=M) if M else np.zeros(0)
    gen_total = float(per_model_gen.sum()) if has_cost.any() else None
    reused_ids = set(week.run_ids(np.flatnonzero(reused).tolist()))
    judge_costs = {r: c for r, c in week.judge_costs.items() if r not in reused_ids}
    judge_total = sum(judge_costs.values()) if judge_costs else None
    dur = stats.duration_summary(np.where(reused, np.nan, ctx.run_column("duration_ms")))
    total_s = dur["total_s"]
    wall = week.wall_clock_s
    return {"cost_time": {
        "generation_usd": gen_total,
        "generation_usd_per_model": {label: float(per_model_gen[i])
                                     for i, label in enumerate(week.models)
                                     if np.any(has_cost & (week.manifest.model == i))},
        "generation_runs_with_cost": int(has_cost.sum()),
        "judge_usd": judge_total, "judge_runs_with_cost": len(judge_costs),
        "total_usd": (gen_total or 0.0) + (judge_total or 0.0)
        if gen_total is not None or judge_total is not None else None,
        "time": dur,
        "wall_clock_s": wall,
        "speedup": (total_s / wall) if (isinstance(total_s, float) and wall) else None,
        "reused_runs": int(reused.sum()),
    }}


def _dur(s: float | int | None) -> str:
    return f"{s:.0f}s"


def render(card: Reads) -> list[str]:
    """The Cost & time section of scorecard.md, as markdown lines."""
    ct = card.get("cost_time", {})
    # A week with a banner is a simulated one (the demo, a dry run): the stand-in reports
    # scripted prices, and nothing was paid.
    L = ["## Cost & time\n", "**Spend (simulated $: the scripted stand-in's prices, nothing "
         "was paid; all runs):**" if card.get("banner") else "**Spend (actual $ spent, all "
         "runs):**"]
    per = ct.get("generation_usd_per_model", {})
    per_txt = ", ".join(f"{k} {money(per[k])}" for k in sorted(per))
    L.append(f"- generation: {money(ct.get('generation_usd'))}" + (f"  ({per_txt})"
                                                                    if per_txt else ""))
    reused = ct.get("reused_runs", 0)
    total_runs = card.get("coverage", {}).get("total_runs", 0) - reused
    n_judge = ct.get("judge_runs_with_cost", 0)
    judge_usd = ct.get("judge_usd")
    if judge_usd is None:
        L.append(f"- judge (Opus): not recorded (0 of {total_runs} runs have a "
                 "judge_cost.txt)")
        L.append(f"- **total: {money(ct.get('total_usd'))}** (generation only; judge $ "
                 "unknown)")
    else:
        partial = "" if n_judge >= total_runs else (
            f"  (from {n_judge} of {total_runs} runs; the rest not recorded)")
        L.append(f"- judge (Opus): {money(judge_usd)}{partial}")
        L.append(f"- **total: {money(ct.get('total_usd'))}**"
                 + (" (judge $ partial)" if partial else ""))
    if reused:
        L.append(f"- not counted: {reused} no-skill run(s) reused from an earlier week (their "
                 "generation and judge $ were spent there; see Provenance)")
    L.append("")
    t = ct.get("time", {})
    L.append("**Time (generation phase):**")
    L.append(f"- runs timed: {t.get('runs_timed', 0)}")
    total_s = t.get("total_s")
    if total_s is not None:
        L.append(f"- compute-time (Σ per-run): {total_s / 60:.1f} min  (mean "
                 f"{_dur(t['mean_s'])}, median {_dur(t['median_s'])}, max {_dur(t['max_s'])})")
    wall = ct.get("wall_clock_s")
    if wall is not None:
        sp = ct.get("speedup")
        L.append(f"- wall-clock: {wall / 60:.1f} min"
                 + (f"  (parallel speedup ~{sp:.1f}×)" if sp else ""))
    L.append("")
    return L
