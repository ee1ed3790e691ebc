"""Reliability over the reps: pass@k, pass^k and flakiness per prompt and arm.

From the k scored reps of a prompt in an arm (a rep passes when its composite reaches the pass
threshold): **pass@k** = some rep passes, **pass^k** = every rep passes (the agent can be
relied on), **flaky** = the reps disagree. Per model and arm: their means over the prompts,
flakiness being the share of flaky prompts. The gate metrics ``pass_at_k``, ``pass_hat_k`` and
``flakiness`` read them (``report.verdicts``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.report import stats
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
    #: Prompts with at least one scored rep; the largest k among them.
    n_prompts: int
    k_max: int


class PromptsPassK(TypedDict):
    """``pass_k.per_prompt.<label>.<condition>``: one entry per prompt of ``pass_k.prompts``
    (columns, not rows: a large week has thousands of prompts). ``k`` = 0: no scored rep, and
    pass@k / pass^k are null there."""

    k: list[int]
    passed: list[int]
    pass_at_k: list[bool | None]
    pass_hat_k: list[bool | None]


class PassKData(TypedDict):
    threshold: float
    models: dict[str, dict[str, ArmPassK]]
    #: The prompts the per-prompt columns follow (the week's order).
    prompts: list[str]
    per_prompt: dict[str, dict[str, PromptsPassK]]


class Data(TypedDict):
    pass_k: PassKData | None


def _flags(values: np.ndarray, k: np.ndarray) -> list[bool | None]:
    return [None if n == 0 else v for v, n in zip((values == 1.0).tolist(), k.tolist(),
                                                  strict=True)]


def build(ctx: Context) -> Data:
    agg, week = ctx.agg, ctx.week
    if agg is None:
        return {"pass_k": None}
    pk = stats.pass_k(agg.rep_composite, ctx.pass_threshold)
    passed = (~np.isnan(agg.rep_composite)
              & (np.nan_to_num(agg.rep_composite, nan=-1.0) >= ctx.pass_threshold - 1e-9)
              ).sum(axis=-1)
    names = week.arm_names
    models: dict[str, dict[str, ArmPassK]] = {}
    per_prompt: dict[str, dict[str, PromptsPassK]] = {}
    for mi, label in enumerate(week.models):
        for c in range(pk.k.shape[2]):
            k = pk.k[:, mi, c]
            if not np.any(k > 0):
                continue
            models.setdefault(label, {})[names[c]] = {
                "pass_at_k": json_float(stats.nan_mean(pk.at_k[:, mi, c])),
                "pass_hat_k": json_float(stats.nan_mean(pk.hat_k[:, mi, c])),
                "flakiness": json_float(stats.nan_mean(pk.flaky[:, mi, c])),
                "n_prompts": int(np.count_nonzero(k > 0)), "k_max": int(k.max())}
            per_prompt.setdefault(label, {})[names[c]] = {
                "k": k.tolist(), "passed": passed[:, mi, c].tolist(),
                "pass_at_k": _flags(pk.at_k[:, mi, c], k),
                "pass_hat_k": _flags(pk.hat_k[:, mi, c], k)}
    return {"pass_k": {"threshold": ctx.pass_threshold, "models": models,
                       "prompts": list(week.prompts), "per_prompt": per_prompt}}


def render(card: Data) -> list[str]:
    data = card.get("pass_k")
    if not data or not any(a["k_max"] > 1 for arms in data["models"].values()
                           for a in arms.values()):
        return []  # one rep: pass@k = pass^k = the pass rate (Per-cell metrics)
    L = ["## Reliability over reps: pass@k, pass^k, flakiness\n"]
    rows = [[label, cond, fmt(a["pass_at_k"]), fmt(a["pass_hat_k"]), fmt(a["flakiness"]),
             a["k_max"], a["n_prompts"]]
            for label, arms in data["models"].items() for cond, a in arms.items()]
    L += md_table(*by_agent(card, ["model", "condition", "pass@k", "pass^k", "flakiness", "k",
                                   "n prompts"],
                  rows))
    L.append(f"\n_A rep passes when its composite reaches {data['threshold']:g}. Per prompt "
             "and arm, over its k scored reps: pass@k = some rep passes, pass^k = every rep "
             "passes; means over prompts. Flakiness: share of prompts whose reps disagree._\n")
    flaky = [(data["prompts"][i], label, cond, n, k)
             for label, arms in data["per_prompt"].items() for cond, col in arms.items()
             for i, (n, k) in enumerate(zip(col["passed"], col["k"], strict=True))
             if 0 < n < k]
    if flaky:
        shown = flaky[:MAX_ROWS]
        L.append("Flaky prompts (some reps pass, some do not):\n")
        L += md_table(*by_agent(card, ["prompt", "model", "condition", "passed of k"],
                      [[p, label, cond, f"{n} of {k}"] for p, label, cond, n, k in shown]))
        L += cap_note(len(shown), len(flaky), "flaky prompts")
        L.append("")
    return L
