"""Rate-limited runs, in Run health: per label, the runs whose CLI retried after HTTP 429/529
(the manifest's ``rate_limit_retries`` / ``rate_limit_wait_ms``), and whether they scored
differently from the same cell's unthrottled runs.

qdrant/skills SCORING.md warns that at 4+ concurrent runs "a rate-limited run can change
results". The comparison pairs, within one (prompt, label, condition) cell, the mean
must-coverage of its throttled runs with that of its unthrottled runs; with at least
:data:`MIN_PAIRS` such cells the mean difference comes with its paired t interval
(``stats.paired_lift``), else the cells are only counted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.report import stats
from pytest_skilllift.report.context import json_float

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

#: Cells with both a throttled and an unthrottled run needed before the difference is
#: given with an interval (below it, a mean of two or three cells is noise, not a finding).
MIN_PAIRS = 5


class LabelLimits(TypedDict):
    """One model label's runs, the runs throttled (HTTP 429/529), their retries and wait."""
    runs: int
    throttled_runs: int
    retries: int
    wait_s: float


class Comparison(TypedDict):
    """Throttled against unthrottled runs of the same prompt and arm: must coverage's difference."""
    pairs: int
    #: Mean (throttled − unthrottled) must coverage over the pairs, its 95% t interval.
    delta: float | None
    ci_low: float | None
    ci_high: float | None


class RateLimits(TypedDict):
    """Rate-limited runs per model label, and whether throttling moved the coverage."""
    by_label: dict[str, LabelLimits]
    comparison: Comparison


class Data(TypedDict):
    """The Rate limits section's keys in scorecard.json."""
    rate_limits: RateLimits


def _run_must(ctx: Context) -> np.ndarray:
    """Each run's must coverage (mean credit of its graded must items; NaN without any)."""
    week, sc = ctx.week, ctx.week.scores
    n = week.n_runs
    use = (sc.run >= 0) & (sc.type == 0) & ~np.isnan(sc.credit)
    total = np.bincount(sc.run[use], weights=sc.credit[use], minlength=n)[:n]
    count = np.bincount(sc.run[use], minlength=n)[:n]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def build(ctx: Context) -> Data:
    """The Rate limits section's scorecard.json keys, from the week's numbers."""
    week = ctx.week
    retries = ctx.run_column("rate_limit_retries")
    wait = ctx.run_column("rate_limit_wait_ms")
    model = week.manifest.model
    throttled = np.nan_to_num(retries) > 0
    by_label: dict[str, LabelLimits] = {}
    if "rate_limit_retries" in week.manifest.columns:
        for i, label in enumerate(week.models):
            mine = model == i
            by_label[label] = {
                "runs": int(np.count_nonzero(mine)),
                "throttled_runs": int(np.count_nonzero(mine & throttled)),
                "retries": int(np.nansum(np.where(mine, retries, 0.0))),
                "wait_s": round(float(np.nansum(np.where(mine, wait, 0.0))) / 1000, 3)}
    comparison: Comparison = {"pairs": 0, "delta": None, "ci_low": None, "ci_high": None}
    if throttled.any():
        must = _run_must(ctx)
        cells: dict[tuple[int, int, int], tuple[list[float], list[float]]] = {}
        for r in np.flatnonzero(~np.isnan(must) & (model >= 0)):
            key = (int(week.manifest.prompt[r]), int(model[r]), int(week.manifest.cond[r]))
            cells.setdefault(key, ([], []))[int(throttled[r])].append(float(must[r]))
        pairs = [(np.mean(c), np.mean(t)) for c, t in cells.values() if c and t]
        comparison["pairs"] = len(pairs)
        if len(pairs) >= MIN_PAIRS:
            lift = stats.paired_lift(np.array([p[0] for p in pairs]),
                                     np.array([p[1] for p in pairs]))
            comparison["delta"] = json_float(lift.lift)
            comparison["ci_low"] = json_float(lift.ci_low)
            comparison["ci_high"] = json_float(lift.ci_high)
    return {"rate_limits": {"by_label": by_label, "comparison": comparison}}


def lines(card: object) -> list[str]:
    """Run health's bullets (none when no run of the week was rate limited)."""
    data = card.get("rate_limits") if isinstance(card, dict) else None
    if not data or not any(v["throttled_runs"] for v in data["by_label"].values()):
        return []
    per = ", ".join(f"{label} {v['throttled_runs']} of {v['runs']} ({v['retries']} retries, "
                    f"{v['wait_s']:.0f}s waited)"
                    for label, v in sorted(data["by_label"].items()) if v["throttled_runs"])
    out = [f"- rate-limited runs (the CLI retried after HTTP 429/529; completed, kept): {per}"]
    c = data["comparison"]
    if c["delta"] is not None:
        out.append(f"- throttled vs unthrottled runs of the same cell, must coverage: "
                   f"{c['delta']:+.3f} (95% CI {c['ci_low']:+.3f} to {c['ci_high']:+.3f}, "
                   f"{c['pairs']} cells)")
    else:
        out.append(f"- throttled vs unthrottled runs: {c['pairs']} cell(s) hold both, fewer "
                   f"than the {MIN_PAIRS} a paired comparison needs")
    return out
