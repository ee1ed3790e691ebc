"""The scorecard's "Custom checks" section: the team's own checks over ``skill_lift_run``.

Builder (week directory → ``scorecard.json`` keys) and renderer (→ markdown lines). A check's
outcome is one per run; per model and condition the pass rate is passed / (passed + failed)
over the runs it ran on, with its 95% Wilson score interval, and per model the with − no
difference with Newcombe's hybrid score interval (Newcombe 1998, method 10, built from the
two Wilson intervals). Skipped runs (an excluded run, a ``pytest.skip``) are counted and
their reasons listed, never folded into the rate. Runs of one prompt are not independent
draws, so read the intervals as optimistic when reps > 1. Pure: no pytest.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

from pytest_skilllift.week.checks import read_checks
from pytest_skilllift.week.columns import CONDITIONS

__all__ = ["build", "newcombe_interval", "render_section"]

NO, WITH = CONDITIONS


def _f(x: float) -> float | None:
    return x if math.isfinite(x) else None


def newcombe_interval(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float]:
    """95% interval of p2 − p1 (Newcombe's hybrid score method); (nan, nan) if n1 or n2 is 0."""
    from pytest_skilllift.report.stats import wilson_interval  # scipy: only when building

    if n1 <= 0 or n2 <= 0:
        return (math.nan, math.nan)
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1)
    l2, u2 = wilson_interval(k2, n2)
    d = p2 - p1
    return (d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2),
            d + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2))


def build(week_dir: Path, model_order: list[str] | None = None) -> dict[str, Any]:
    """``custom_checks``, ``custom_checks_lift`` and ``custom_checks_skipped`` for
    scorecard.json, from ``<week>/custom_checks.csv`` (all empty when there is none)."""
    from pytest_skilllift.report.stats import wilson_interval  # scipy: only when building

    rows = read_checks(Path(week_dir))
    counts: dict[tuple[str, str, str], Counter[str]] = {}
    reasons: Counter[tuple[str, str]] = Counter()
    for r in rows:
        counts.setdefault((r["test"], r["model"], r["condition"]), Counter())[r["outcome"]] += 1
        if r["outcome"] == "skipped":
            reasons[(r["test"], r["reason"] or "(no reason given)")] += 1
    order = {m: i for i, m in enumerate(model_order or [])}
    keys = sorted(counts, key=lambda k: (k[0], order.get(k[1], len(order)), k[1],
                                         CONDITIONS.index(k[2]) if k[2] in CONDITIONS else 2))
    checks: list[dict[str, Any]] = []
    for test, model, condition in keys:
        c = counts[(test, model, condition)]
        n = c["passed"] + c["failed"]
        low, high = wilson_interval(c["passed"], n)
        checks.append({"test": test, "model": model, "condition": condition,
                       "passed": c["passed"], "failed": c["failed"], "skipped": c["skipped"],
                       "pass_rate": c["passed"] / n if n else None,
                       "pass_rate_ci_low": _f(low), "pass_rate_ci_high": _f(high)})
    lift: list[dict[str, Any]] = []
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
                     "difference_ci_low": _f(low), "difference_ci_high": _f(high)})
    skipped = [{"test": t, "reason": reason, "count": n}
               for (t, reason), n in sorted(reasons.items())]
    return {"custom_checks": checks, "custom_checks_lift": lift,
            "custom_checks_skipped": skipped}


def _rate(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "—"
    n = entry["passed"] + entry["failed"]
    if not n:
        return f"n/a (0 run; {entry['skipped']} skipped)"
    return (f"{entry['pass_rate']:.2f} ({entry['passed']}/{n}) "
            f"[{entry['pass_rate_ci_low']:.2f}, {entry['pass_rate_ci_high']:.2f}]")


def render_section(data: dict[str, Any]) -> list[str]:
    """Markdown lines of the "Custom checks" section; none when the week ran no check."""
    checks = data.get("custom_checks") or []
    if not checks:
        return []
    by_key = {(c["test"], c["model"], c["condition"]): c for c in checks}
    L = ["## Custom checks\n",
         "Your own checks over `skill_lift_run`, one outcome per run. Pass rate = passed / "
         "(passed + failed) over the runs checked, with its 95% Wilson interval; with − no "
         "with Newcombe's 95% interval. Skipped runs are counted, never in the rate.\n",
         "| check | model | no-skill pass | with-skill pass | with − no | skipped |",
         "| --- | --- | --- | --- | --- | --- |"]
    for d in data.get("custom_checks_lift") or []:
        no, wi = by_key.get((d["test"], d["model"], NO)), by_key.get((d["test"], d["model"],
                                                                      WITH))
        diff = "n/a"
        if d["difference"] is not None:
            diff = (f"{d['difference']:+.2f} [{d['difference_ci_low']:+.2f}, "
                    f"{d['difference_ci_high']:+.2f}]")
        skipped = sum(e["skipped"] for e in (no, wi) if e is not None)
        test = str(d["test"]).replace("|", "\\|")
        L.append(f"| `{test}` | {d['model']} | {_rate(no)} | {_rate(wi)} | {diff} | "
                 f"{skipped} |")
    skips = data.get("custom_checks_skipped") or []
    if skips:
        L.append("\nSkipped, by reason:\n")
        for s in skips:
            reason = str(s["reason"]).replace("\n", " ")
            L.append(f"- `{s['test']}`: {s['count']} × {reason}")
    L.append("")
    return L
