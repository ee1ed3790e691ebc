"""Reliability over the reps: pass@k, pass^k and flakiness per prompt and arm.

At one k for the whole week — its planned reps (rep slots) — from the n scored reps of a prompt
in an arm of which c pass (a rep passes when its composite reaches the pass threshold):
**pass@k** = 1 − C(n−c, k)/C(n, k) (Chen et al. 2021's unbiased estimator: some of k reps
passes), **pass^k** = C(c, k)/C(n, k) (all k pass: the agent can be relied on), **flaky** = the
reps disagree. A prompt with fewer than k scored reps (an errored or dropped rep) is listed as
short and left out, never scored at a smaller k (``stats.pass_k``). Per model and arm: their
means over the prompts with k reps, flakiness being the share of flaky prompts. The gate
metrics ``pass_at_k``, ``pass_hat_k`` and ``flakiness`` read them (``report.verdicts``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.intervals import EPS
from pytest_skilllift.report import stats, verdicts
from pytest_skilllift.report.context import json_float
from pytest_skilllift.report.markdown import by_agent, cap_note, fmt, md_table

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

MAX_ROWS = 50


class ArmPassK(TypedDict):
    """``pass_k.models.<label>.<condition>``."""

    pass_at_k: float | None
    pass_hat_k: float | None
    flakiness: float | None
    #: Prompts with k scored reps (the means are over them); the largest n among them.
    n_prompts: int
    k_max: int
    #: The week's k, and the prompts with a scored rep but fewer than k (left out, named).
    k: int
    short_prompts: list[str]


class PromptsPassK(TypedDict):
    """``pass_k.per_prompt.<label>.<condition>``: one entry per prompt of ``pass_k.prompts``
    (columns, not rows: a large week has thousands of prompts). ``k`` = 0: no scored rep, and
    pass@k / pass^k are null there."""

    k: list[int]
    passed: list[int]
    pass_at_k: list[bool | None]
    pass_hat_k: list[bool | None]


class PassKData(TypedDict):
    """pass@k, pass^k and flakiness per model and arm, and per prompt."""
    threshold: float
    models: dict[str, dict[str, ArmPassK]]
    #: The prompts the per-prompt columns follow (the week's order).
    prompts: list[str]
    per_prompt: dict[str, dict[str, PromptsPassK]]


class Data(TypedDict):
    """The Reliability section's keys in scorecard.json."""
    pass_k: PassKData | None


def _flags(values: np.ndarray, k: np.ndarray) -> list[bool | None]:
    """Per prompt: the estimate is 1 (True), below 1 (False), or None (no or too few reps)."""
    return [None if n == 0 or np.isnan(x) else bool(x == 1.0)
            for x, n in zip(values.tolist(), k.tolist(), strict=True)]


def build(ctx: Context) -> Data:
    """The Reliability section's scorecard.json keys, from the week's numbers."""
    agg, week = ctx.agg, ctx.week
    if agg is None:
        return {"pass_k": None}
    # each rep on its graded items; one without a graded must item is dropped, as in the pass
    # rate (``report.verdicts``' one rule): such a prompt is short, listed
    measures = ctx.shared(verdicts.measures_of)
    comp = measures.scored_composite()
    ran = measures.scored + measures.errored + measures.unscored  # (P, M, len(ARMS))
    pk = stats.pass_k(comp, ctx.pass_threshold)
    passed = (~np.isnan(comp)
              & (np.nan_to_num(comp, nan=-1.0) >= ctx.pass_threshold - EPS)
              ).sum(axis=-1)
    names = week.arm_names
    models: dict[str, dict[str, ArmPassK]] = {}
    per_prompt: dict[str, dict[str, PromptsPassK]] = {}
    for mi, label in enumerate(week.models):
        for c in range(pk.k.shape[2]):
            k = pk.k[:, mi, c]
            if not np.any(k > 0):
                continue
            # short: run in this arm, with fewer than k scored reps (errored or dropped reps;
            # every rep of it dropped included)
            short = (ran[:, mi, c] > 0) & (k < pk.k_fixed)
            models.setdefault(label, {})[names[c]] = {
                "pass_at_k": json_float(stats.nan_mean(pk.at_k[:, mi, c])),
                "pass_hat_k": json_float(stats.nan_mean(pk.hat_k[:, mi, c])),
                "flakiness": json_float(stats.nan_mean(pk.flaky[:, mi, c])),
                "n_prompts": int(np.count_nonzero(k >= pk.k_fixed)), "k_max": int(k.max()),
                "k": pk.k_fixed,
                "short_prompts": [week.prompts[i] for i in np.flatnonzero(short)]}
            per_prompt.setdefault(label, {})[names[c]] = {
                "k": k.tolist(), "passed": passed[:, mi, c].tolist(),
                "pass_at_k": _flags(pk.at_k[:, mi, c], k),
                "pass_hat_k": _flags(pk.hat_k[:, mi, c], k)}
    return {"pass_k": {"threshold": ctx.pass_threshold, "models": models,
                       "prompts": list(week.prompts), "per_prompt": per_prompt}}


def render(card: Data) -> list[str]:
    """The Reliability section of scorecard.md, as markdown lines."""
    data = card.get("pass_k")
    if not data or not any(a.get("k", a["k_max"]) > 1 for arms in data["models"].values()
                           for a in arms.values()):
        return []  # one rep: pass@k = pass^k = the pass rate (Per-cell metrics)
    L = ["## Reliability over reps: pass@k, pass^k, flakiness\n"]
    rows = [[label, cond, fmt(a["pass_at_k"]), fmt(a["pass_hat_k"]), fmt(a["flakiness"]),
             a.get("k", a["k_max"]), a["n_prompts"], len(a.get("short_prompts", []))]
            for label, arms in data["models"].items() for cond, a in arms.items()]
    L += md_table(*by_agent(card, ["model", "condition", "pass@k", "pass^k", "flakiness", "k",
                                   "n prompts", "short (< k reps)"],
                  rows))
    L.append(f"\n_A rep passes when its composite reaches {data['threshold']:g}. One k for the "
             "week (its planned reps); per prompt and arm with n scored reps of which c pass: "
             "pass@k = 1 − C(n−c, k)/C(n, k), pass^k = C(c, k)/C(n, k) (Chen et al. 2021's "
             "unbiased estimators); means over the prompts with k scored reps. Flakiness: share "
             "of prompts whose reps disagree. A prompt with fewer than k scored reps (an "
             "errored or dropped rep) is short: left out, listed below, never scored at a "
             "smaller k._\n")
    short = [(p, label, cond) for label, arms in data["models"].items()
             for cond, a in arms.items() for p in a.get("short_prompts", [])]
    if short:
        L.append("Short prompts (fewer than k scored reps; not in pass@k, pass^k, "
                 "flakiness):\n")
        L += md_table(*by_agent(card, ["prompt", "model", "condition"],
                      [list(r) for r in short[:MAX_ROWS]]))
        L += cap_note(min(len(short), MAX_ROWS), len(short), "short prompts")
        L.append("")
    flaky = [(data["prompts"][i], label, cond, n, k)
             for label, arms in data["per_prompt"].items() for cond, col in arms.items()
             for i, (n, k) in enumerate(zip(col["passed"], col["k"], strict=True))
             if 0 < n < k and k >= data["models"][label][cond].get("k", 0)]
    if flaky:
        shown = flaky[:MAX_ROWS]
        L.append("Flaky prompts (some reps pass, some do not):\n")
        L += md_table(*by_agent(card, ["prompt", "model", "condition", "passed of k"],
                      [[p, label, cond, f"{n} of {k}"] for p, label, cond, n, k in shown]))
        L += cap_note(len(shown), len(flaky), "flaky prompts")
        L.append("")
    return L
