"""Coverage: how many runs were graded, and every dropped run with its reason (no silent caps)."""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.report import verdicts
from pytest_skilllift.report.markdown import by_agent, cap_note, cell, md_table
from pytest_skilllift.report.sections import scale
from pytest_skilllift.week.files import DROP_REASONS, OK, RUN_STATUSES, STATUS_ERRORED, STATUS_OK

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

MAX_DROPPED_ROWS = 500


class Dropped(TypedDict):
    """``coverage.dropped[]``: a run that was not graded, and why."""

    run_id: str
    reason: str
    status: str
    prompt: str
    model: str
    condition: str
    rep: int


class DroppedRep(TypedDict):
    """``coverage.dropped_prompt_reps[]``: a prompt×rep left out of every statistic."""

    prompt: str
    model: str
    condition: str
    rep: int


class Coverage(TypedDict):
    """Runs and items graded of all, and every dropped run with its reason."""
    graded_runs: int
    total_runs: int
    dropped: list[Dropped]
    items_total: int
    items_graded: int
    items_ungraded: int
    items_invalid: int
    items_excluded_with_run: int
    unscored_prompt_reps: int
    #: Prompt×reps whose bonus items were all ungraded: scored without a bonus term.
    bonus_ungraded_prompt_reps: int
    #: Prompt×reps with an item the judge left ungraded, scored on their graded items (the
    #: one rule, ``report.verdicts``): in every statistic, counted here.
    partly_graded_prompt_reps: int
    #: Every prompt×rep with scores rows left out of every statistic (no graded must item,
    #: or its run was dropped), named; a run without any scores row is in ``dropped``.
    dropped_prompt_reps: list[DroppedRep]
    #: Runs ``--skill-lift-max-spend`` kept from starting (not in total_runs: never run).
    not_run_spend_cap: int
    #: Runs the circuit breaker held back after an outage (not in total_runs: never run).
    not_run_outage: int
    #: Prompt×reps the judge failed on (``report.verdicts``' errored state): never a pass.
    errored_prompt_reps: int


class Data(TypedDict):
    """The Coverage section's keys in scorecard.json."""
    coverage: Coverage


#: How a run_error that already names its status begins (``DROP_REASONS``' words, or the
#: qdrant pipeline's): such an error is not prefixed with the reason again.
_SAYS_STATUS = ("invalid", "errored", "budget", "timed out", "timeout", "no ", "ungraded")


def _reason(status: int, exit_code: float, error: str | None) -> str:
    """Why the run was dropped: the status's reason, then the run's own error, if any."""
    r = DROP_REASONS[RUN_STATUSES[status]]
    if status == STATUS_ERRORED:
        r += f" (exit {'?' if math.isnan(exit_code) else int(exit_code)})"
    if not error:
        return r
    if error.strip().lower().startswith(_SAYS_STATUS):
        return error.strip()
    return f"{r}: {error.strip()}"


def build(ctx: Context) -> Data:
    """The Coverage section's scorecard.json keys, from the week's numbers."""
    week, credit, agg = ctx.week, ctx.credit, ctx.agg
    measures = ctx.shared(verdicts.measures_of)
    graded_runs = 0
    dropped: list[Dropped] = []
    if week.manifest.present:
        usable_must = ~np.isnan(credit) & (week.scores.type == 0) & (week.scores.run >= 0)
        has_must = np.bincount(week.scores.run[usable_must], minlength=week.n_runs) > 0
        # A task run is graded by its verifier's reward (report/sections/rewards.py).
        graded_mask = (has_must | week.rewarded()) & (week.manifest.status == STATUS_OK)
        graded_runs = int(graded_mask.sum())
        drop_rows = np.flatnonzero(~graded_mask)
        ids = week.run_ids(drop_rows.tolist())
        errs = (week.manifest.run_error.take(np.asarray(drop_rows)).to_pylist()
                if week.manifest.run_error is not None and drop_rows.size
                else [None] * drop_rows.size)
        for j, r in enumerate(drop_rows.tolist()):
            p, mo, c = week.manifest.prompt[r], week.manifest.model[r], week.manifest.cond[r]
            err = (errs[j] or "").strip() or None
            if err is None and week.manifest.status[r] == STATUS_OK:
                # A completed run with an answer but no graded must item: the judge, not
                # the answer, is what is missing.
                judge_err = week.judge_error(ids[j])
                err = f"{DROP_REASONS[OK]}: " + (f"judge failed: {judge_err}" if judge_err
                                                   else "no graded must item in scores.csv")
            dropped.append({
                "run_id": ids[j],
                "reason": _reason(int(week.manifest.status[r]),
                                  float(week.manifest.exit_code[r]), err),
                "status": RUN_STATUSES[int(week.manifest.status[r])],
                "prompt": week.prompts[p] if p >= 0 else "",
                "model": week.models[mo] if mo >= 0 else "",
                "condition": week.arm_names[c] if c >= 0 else "",
                "rep": int(week.manifest.rep[r]),
            })
    return {"coverage": {
        "graded_runs": graded_runs, "total_runs": week.n_runs, "dropped": dropped,
        "items_total": week.n_items,
        "items_graded": int(np.count_nonzero(~np.isnan(credit))),
        "items_ungraded": week.n_ungraded, "items_invalid": week.n_invalid_rows,
        "items_excluded_with_run": ctx.n_excluded_run_items,
        "unscored_prompt_reps": agg.n_unscored_reps if agg is not None else 0,
        "bonus_ungraded_prompt_reps": agg.n_bonus_ungraded_reps if agg is not None else 0,
        "partly_graded_prompt_reps": int(measures.partly_graded.sum()),
        "dropped_prompt_reps": [
            {"prompt": week.prompts[p], "model": week.models[m], "condition": week.arm_names[c],
             "rep": int(agg.rep_values[r]) if agg is not None else r}
            for p, m, c, r in measures.dropped_reps()],
        "not_run_spend_cap": scale.not_run_spend_cap(ctx),
        "not_run_outage": scale.not_run_outage(ctx),
        "errored_prompt_reps": measures.pass_counts(None, None)["errored"],
    }}


#: Coverage counts shown only when nonzero: (scorecard.json key, label).
_COVERAGE_COUNTS: tuple[tuple[str, str], ...] = (
    ("items_invalid", "items excluded as invalid input (see Input problems)"),
    ("items_excluded_with_run", "graded items excluded with their dropped run"),
    ("unscored_prompt_reps", "prompt×rep unscored (no gradeable must item)"),
    ("partly_graded_prompt_reps",
     "prompt×rep scored on their graded items (the judge left an item ungraded)"),
    ("bonus_ungraded_prompt_reps",
     "prompt×rep scored without a bonus term (all bonus items ungraded)"),
    ("not_run_spend_cap", "not run: spend cap (see Spend cap)"),
    ("not_run_outage", "not run: outage (the circuit breaker held them back; a rerun makes "
     "them)"),
)


def render(card: Data) -> list[str]:
    """The Coverage section of scorecard.md, as markdown lines."""
    c = card.get("coverage", {})
    L = ["## Coverage\n"]
    not_run = c.get("not_run_spend_cap", 0) + c.get("not_run_outage", 0)
    planned = (f" run ({c.get('total_runs', 0) + not_run} planned, {not_run} not run)"
               if not_run else "")
    L.append(f"- runs graded: **{c.get('graded_runs', 0)} of {c.get('total_runs', 0)}**"
             + planned)
    dropped = c.get("dropped", [])
    if dropped:
        L.append(f"- dropped: **{len(dropped)}** (a partial run is not a clean run)")
    else:
        L.append("- dropped: **0**")
    if c.get("items_ungraded"):
        L.append(f"- ungraded items (judge/parse error; excluded, not scored as zero): "
                 f"**{c['items_ungraded']}** of {c['items_total']}")
    counts: dict[str, object] = dict(c)
    L += [f"- {label}: **{counts[key]}**" for key, label in _COVERAGE_COUNTS if counts.get(key)]
    reps = c.get("dropped_prompt_reps") or []
    if reps:
        shown_reps = reps[:MAX_DROPPED_ROWS]
        L.append(f"- prompt×rep left out of every statistic (no graded must item): "
                 f"**{len(reps)}** — " + ", ".join(
                     cell(f"{d['prompt']} · {d['model']} · {d['condition']} · r{d['rep']}")
                     for d in shown_reps))
        L += cap_note(len(shown_reps), len(reps), "dropped prompt×reps")
    if dropped:
        shown = dropped[:MAX_DROPPED_ROWS]
        L.append("")
        L += md_table(*by_agent(card, ["run_id", "prompt", "model", "condition", "reason"],
                      [[d["run_id"], d["prompt"], d["model"], d["condition"], cell(d["reason"])]
                       for d in shown]))
        L += cap_note(len(shown), len(dropped), "dropped runs")
    L.append("")
    return L


def failed_headline(cov: Coverage) -> str | None:
    """The first line of a week in which no run was graded, naming why ("0 of 10 runs
    graded: 10 errored — API unreachable at …"), or None when some run was graded."""
    total, dropped = cov.get("total_runs", 0), cov.get("dropped") or []
    if cov.get("graded_runs", 0) or not total:
        return None
    statuses = Counter(d["status"] for d in dropped)
    counts = ", ".join(f"{n} {status}" for status, n in statuses.most_common())
    reasons = Counter(d["reason"] for d in dropped)
    cause = reasons.most_common(1)[0][0] if reasons else ""
    head, sep, rest = cause.partition(": ")
    if sep and head.lower().startswith(_SAYS_STATUS):  # "errored (exit ?): <the cause>"
        cause = rest
    return f"0 of {total} runs graded: {counts}" + (f" — {cause}" if cause else "")
