"""Custom checks: the team's own checks over ``skill_lift_run``, per model and condition.

A check's outcome is one per run (``<week>/custom_checks.csv``, written by the plugin); per
model and condition the pass rate is passed / (passed + failed) over the runs it ran on, with
its 95% Wilson score interval, and per model the with − no difference with Newcombe's hybrid
score interval (Newcombe 1998, method 10, built from the two Wilson intervals). Skipped runs
(an excluded run, a ``pytest.skip``) are counted and their reasons listed, never folded into
the rate. Runs of one prompt are not independent draws, so read the intervals as optimistic
when reps > 1. A week that ran no check has empty lists and no markdown section.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.intervals import newcombe_interval
from pytest_skilllift.model import CONDITIONS
from pytest_skilllift.report import stats
from pytest_skilllift.report.context import json_float
from pytest_skilllift.week.checks import read_checks

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

__all__ = ["Data", "build", "from_week_dir", "render"]

NO, WITH = CONDITIONS


class CheckRate(TypedDict):
    """One check's outcomes on one (model, condition)."""

    test: str
    model: str
    condition: str
    passed: int
    failed: int
    skipped: int
    #: passed / (passed + failed); None when no run was checked.
    pass_rate: float | None
    pass_rate_ci_low: float | None
    pass_rate_ci_high: float | None
    #: The same rate's 95% interval resampling whole prompts (a prompt's reps agree).
    pass_rate_cluster95: list[float | None]


class CheckLift(TypedDict):
    """One check on one model: with-skill pass rate − no-skill pass rate."""

    test: str
    model: str
    pass_rate_no: float | None
    pass_rate_with: float | None
    difference: float | None
    difference_ci_low: float | None
    difference_ci_high: float | None


class CheckSkip(TypedDict):
    """A custom check skipped on some runs: the check, the reason, how many runs."""
    test: str
    reason: str
    count: int


class Data(TypedDict):
    """The Custom checks section's keys in scorecard.json."""
    custom_checks: list[CheckRate]
    custom_checks_lift: list[CheckLift]
    custom_checks_skipped: list[CheckSkip]


def build(ctx: Context) -> Data:
    """The Custom checks section's scorecard.json keys, from the week's numbers."""
    return from_week_dir(ctx.week.week_dir, ctx.week.models)


def from_week_dir(week_dir: Path, model_order: Sequence[str] = ()) -> Data:
    """The section's keys from ``<week>/custom_checks.csv`` (all empty when there is none)."""
    rows = read_checks(Path(week_dir))
    counts: dict[tuple[str, str, str], Counter[str]] = {}
    # per (test, model, condition): prompt → [passed, checked]
    per_prompt: dict[tuple[str, str, str], dict[str, list[int]]] = {}
    reasons: Counter[tuple[str, str]] = Counter()
    for r in rows:
        key = (r["test"], r["model"], r["condition"])
        counts.setdefault(key, Counter())[r["outcome"]] += 1
        if r["outcome"] in ("passed", "failed"):
            kn = per_prompt.setdefault(key, {}).setdefault(r.get("prompt", ""), [0, 0])
            kn[0] += r["outcome"] == "passed"
            kn[1] += 1
        if r["outcome"] == "skipped":
            reasons[(r["test"], r["reason"] or "(no reason given)")] += 1
    order = {m: i for i, m in enumerate(model_order)}
    keys = sorted(counts, key=lambda k: (k[0], order.get(k[1], len(order)), k[1],
                                         CONDITIONS.index(k[2]) if k[2] in CONDITIONS else 2))
    checks: list[CheckRate] = []
    for test, model, condition in keys:
        c = counts[(test, model, condition)]
        n = c["passed"] + c["failed"]
        low, high = stats.wilson_interval(c["passed"], n)
        checks.append({"test": test, "model": model, "condition": condition,
                       "passed": c["passed"], "failed": c["failed"], "skipped": c["skipped"],
                       "pass_rate": c["passed"] / n if n else None,
                       "pass_rate_ci_low": json_float(low), "pass_rate_ci_high": json_float(high),
                       "pass_rate_cluster95": _cluster(per_prompt.get((test, model, condition)))})
    lift: list[CheckLift] = []
    pairs = sorted({(t, m) for t, m, _ in keys},
                   key=lambda k: (k[0], order.get(k[1], len(order)), k[1]))
    for test, model in pairs:
        no, wi = counts.get((test, model, NO), Counter()), counts.get((test, model, WITH),
                                                                      Counter())
        n_no, n_wi = no["passed"] + no["failed"], wi["passed"] + wi["failed"]
        low, high = newcombe_interval(no["passed"], n_no, wi["passed"], n_wi)
        lift.append({"test": test, "model": model,
                     "pass_rate_no": no["passed"] / n_no if n_no else None,
                     "pass_rate_with": wi["passed"] / n_wi if n_wi else None,
                     "difference": (wi["passed"] / n_wi - no["passed"] / n_no
                                    if n_no and n_wi else None),
                     "difference_ci_low": json_float(low),
                     "difference_ci_high": json_float(high)})
    skipped: list[CheckSkip] = [{"test": t, "reason": reason, "count": n}
                                for (t, reason), n in sorted(reasons.items())]
    return {"custom_checks": checks, "custom_checks_lift": lift,
            "custom_checks_skipped": skipped}


def _cluster(by_prompt: dict[str, list[int]] | None) -> list[float | None]:
    """A check's pass-rate interval resampling whole prompts (``stats.cluster_bootstrap_rate``)."""
    if not by_prompt:
        return [None, None]
    kn = [by_prompt[p] for p in sorted(by_prompt)]
    lo, hi = stats.cluster_bootstrap_rate(np.array([k for k, _ in kn]),
                                          np.array([n for _, n in kn]))
    return [lo, hi]


def _rate(entry: CheckRate | None) -> str:
    if entry is None:
        return "—"
    n = entry["passed"] + entry["failed"]
    low, high = entry["pass_rate_ci_low"], entry["pass_rate_ci_high"]
    if not n or entry["pass_rate"] is None or low is None or high is None:
        return f"n/a (0 run; {entry['skipped']} skipped)"
    clo, chi = entry.get("pass_rate_cluster95") or [None, None]
    cluster = "" if clo is None or chi is None else f" [{clo:.2f}, {chi:.2f}]p"
    return f"{entry['pass_rate']:.2f} ({entry['passed']}/{n}) [{low:.2f}, {high:.2f}]{cluster}"


def render(card: Data) -> list[str]:
    """The "Custom checks" section; no lines when the week ran no check."""
    checks = card.get("custom_checks") or []
    if not checks:
        return []
    by_key = {(c["test"], c["model"], c["condition"]): c for c in checks}
    L = ["## Custom checks\n",
         "Your own checks over `skill_lift_run`, one outcome per run. Pass rate = passed / "
         "(passed + failed) over the runs checked, with its 95% Wilson interval and, marked "
         "p, its 95% interval resampling whole prompts (a prompt's reps agree more often "
         "than chance, so p is the honest width); with − no "
         "with Newcombe's 95% interval. Skipped runs are counted, never in the rate.\n",
         "| check | model | no-skill pass | with-skill pass | with − no | skipped |",
         "| --- | --- | --- | --- | --- | --- |"]
    for d in card.get("custom_checks_lift") or []:
        no, wi = by_key.get((d["test"], d["model"], NO)), by_key.get((d["test"], d["model"],
                                                                      WITH))
        diff = "n/a"
        if (d["difference"] is not None and d["difference_ci_low"] is not None
                and d["difference_ci_high"] is not None):
            diff = (f"{d['difference']:+.2f} [{d['difference_ci_low']:+.2f}, "
                    f"{d['difference_ci_high']:+.2f}]")
        skipped = sum(e["skipped"] for e in (no, wi) if e is not None)
        test = str(d["test"]).replace("|", "\\|")
        L.append(f"| `{test}` | {d['model']} | {_rate(no)} | {_rate(wi)} | {diff} | "
                 f"{skipped} |")
    skips = card.get("custom_checks_skipped") or []
    if skips:
        L.append("\nSkipped, by reason:\n")
        for s in skips:
            reason = str(s["reason"]).replace("\n", " ")
            L.append(f"- `{s['test']}`: {s['count']} × {reason}")
    L.append("")
    return L
