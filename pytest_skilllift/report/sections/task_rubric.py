"""Task rubric coverage: the judge's grades of task runs whose task carries a ``rubric.json``.

A task's verifier gives the reward (the Task rewards section); a task may also carry must /
bonus / avoid items that the blind judge grades over the instruction, the final message and
the changed files' text (``run/tasks/rubric.py``). Their grades live in ``task_rubric.csv``,
apart from scores.csv, so this coverage is shown on its own: never pooled with the prompts'
must coverage, never mixed with the reward.

Per run, must coverage = met must items / graded must items (an ungraded item is excluded,
never a zero: Drupal ai_eval's rule); per (task, model, arm) the mean over its runs; per model
the mean over tasks, and the lift = mean over tasks with both arms of (with-skill − no-skill),
with the paired SE — the function the must-coverage lift uses. Avoid items judged
``violated`` are counted per arm.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.model import NO_SKILL, WITH_SKILL
from pytest_skilllift.report import stats
from pytest_skilllift.report.context import json_float
from pytest_skilllift.report.markdown import cap_note, fmt, md_table, signed, untrusted
from pytest_skilllift.week.columns import VERDICTS
from pytest_skilllift.week.files import STATUS_OK

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

MAX_ROWS = 50


@dataclass
class _Run:
    """One task run's rubric grades, counted."""

    task: str
    model: str
    arm: str
    met: int = 0
    graded: int = 0
    violated: int = 0


class RubricModel(TypedDict):
    """``task_rubric.models.<label>``."""

    must_no: float | None
    must_with: float | None
    lift: float | None
    lift_se: float | None
    n_tasks: int


class RubricTask(TypedDict):
    """``task_rubric.tasks[]``: one (task, model)."""

    task: str
    model: str
    must_no: float | None
    must_with: float | None
    delta: float | None
    violated_no: int
    violated_with: int
    runs_no: int
    runs_with: int


class TaskRubric(TypedDict):
    """The tasks' rubric coverage per model and task, and the rubric grades left out."""
    models: dict[str, RubricModel]
    tasks: list[RubricTask]
    #: Task runs with a graded rubric item, and rubric items left ungraded (excluded).
    graded_runs: int
    ungraded_items: int
    #: Task runs of the session's other arms (with-all, no-skill-b, with-skill@REF) that carry
    #: rubric grades, per arm: counted and named here, their coverage is not in this section.
    other_arm_runs: dict[str, int]


class Data(TypedDict):
    """The Task rubric coverage section's keys in scorecard.json."""
    task_rubric: TaskRubric | None


def build(ctx: Context) -> Data:
    """The Task rubric coverage section's scorecard.json keys, from the week's numbers."""
    week, f = ctx.week, json_float
    rows = week.task_rubric
    if not rows:
        return {"task_rubric": None}
    ok_runs: set[str] | None = None
    mf = week.manifest
    if mf.present and mf.run_id is not None:
        ids = mf.run_id.to_pylist()
        ok_runs = {str(ids[r]) for r in np.flatnonzero(mf.status == STATUS_OK)}
    runs: dict[str, _Run] = {}
    others: dict[str, set[str]] = {}
    ungraded = 0
    for row in rows:
        run_id, kind = row.get("run_id", ""), row.get("item_type", "")
        verdict, arm = row.get("verdict", "").strip(), row.get("condition", "")
        if ok_runs is not None and run_id not in ok_runs:
            continue
        if arm not in (NO_SKILL, WITH_SKILL):  # named below, never dropped unsaid
            others.setdefault(arm, set()).add(run_id)
            continue
        if kind not in VERDICTS or verdict not in VERDICTS[kind]:
            ungraded += 1
            continue
        run = runs.setdefault(run_id, _Run(row.get("prompt", ""), row.get("model", ""), arm))
        if kind == "must":
            run.graded += 1
            run.met += verdict == VERDICTS["must"][0]
        elif kind == "avoid":
            run.violated += verdict == VERDICTS["avoid"][0]
    # (task, model) → arm → (must coverage per run, avoid items violated)
    cells: dict[tuple[str, str], dict[str, tuple[list[float], int]]] = {}
    for run in runs.values():
        arms = cells.setdefault((run.task, run.model), {})
        cov, bad = arms.get(run.arm, ([], 0))
        arms[run.arm] = ([*cov, run.met / run.graded] if run.graded else cov,
                         bad + run.violated)
    tasks: list[RubricTask] = []
    per_model: dict[str, tuple[list[float], list[float]]] = {}
    for (task, model), arms in sorted(cells.items()):
        no_cov, no_bad = arms.get(NO_SKILL, ([], 0))
        with_cov, with_bad = arms.get(WITH_SKILL, ([], 0))
        m_no = float(np.mean(no_cov)) if no_cov else None
        m_with = float(np.mean(with_cov)) if with_cov else None
        tasks.append({"task": task, "model": model, "must_no": f(m_no), "must_with": f(m_with),
                      "delta": f(m_with - m_no) if m_no is not None and m_with is not None
                      else None, "violated_no": no_bad, "violated_with": with_bad,
                      "runs_no": len(no_cov), "runs_with": len(with_cov)})
        pair = per_model.setdefault(model, ([], []))
        pair[0].append(np.nan if m_no is None else m_no)
        pair[1].append(np.nan if m_with is None else m_with)
    models: dict[str, RubricModel] = {}
    for label in [m for m in week.models if m in per_model] + sorted(set(per_model) -
                                                                     set(week.models)):
        no, with_ = (np.array(v, float) for v in per_model[label])
        lift = stats.paired_lift(no, with_)
        models[label] = {"must_no": f(stats.nan_mean(no)), "must_with": f(stats.nan_mean(with_)),
                         "lift": f(lift.lift), "lift_se": f(lift.se), "n_tasks": lift.n}
    return {"task_rubric": {"models": models, "tasks": tasks, "graded_runs": len(runs),
                            "ungraded_items": ungraded,
                            "other_arm_runs": {a: len(r) for a, r in sorted(others.items())}}}


def terminal_lines(card: Data) -> list[str]:
    """The tasks' rubric coverage for the terminal summary (nothing without a rubric)."""
    data = card.get("task_rubric")
    if not data or not data.get("models"):
        return []
    parts = [f"{label} {fmt(m['must_no'])} → {fmt(m['must_with'])} ({signed(m['lift'])}, "
             f"{m['n_tasks']} task{'s' if m['n_tasks'] != 1 else ''})"
             for label, m in data["models"].items()]
    return [f"task rubric must coverage (judge, apart from the prompts'): {'; '.join(parts)}"]


def render(card: Data) -> list[str]:
    """The Task rubric coverage section of scorecard.md, as markdown lines."""
    data = card.get("task_rubric")
    if not data:
        return []
    L = ["## Task rubric coverage (judge, with-skill − no-skill)", "",
         "Must coverage of the tasks' rubric.json items, graded by the blind judge over the "
         "instruction, the final message and the changed files' text; "
         f"{data['graded_runs']} task runs graded"
         + (f", {data['ungraded_items']} items ungraded (excluded, never 0)"
            if data["ungraded_items"] else "")
         + ". Apart from the prompts' must coverage and from the reward.", ""]
    other = data.get("other_arm_runs") or {}
    if other:
        L[-1:-1] = ["Not in this section: the rubric grades of "
                    + ", ".join(f"{n} {untrusted(arm)} run{'s' if n != 1 else ''}"
                                for arm, n in other.items())
                    + " (task_rubric.csv holds them; their rewards are in Task rewards).", ""]
    L += md_table(["model", "must no → with", "lift ± SE", "n tasks"], [
        [untrusted(label), f"{fmt(m['must_no'])} → {fmt(m['must_with'])}",
         f"{signed(m['lift'])} ± {fmt(m['lift_se']) if m['lift_se'] is not None else 'n/a'}",
         str(m["n_tasks"])] for label, m in data["models"].items()])
    shown = data["tasks"][:MAX_ROWS]
    L += ["", "Per task (runs graded no/with; avoid items violated no/with):", ""]
    L += md_table(["task", "model", "must no → with", "Δ", "runs no/with", "violated no/with"],
                  [[untrusted(t["task"]), untrusted(t["model"]),
                    f"{fmt(t['must_no'])} → {fmt(t['must_with'])}", signed(t["delta"]),
                    f"{t['runs_no']}/{t['runs_with']}",
                    f"{t['violated_no']}/{t['violated_with']}"] for t in shown])
    L += cap_note(len(shown), len(data["tasks"]), "task rows")
    return [*L, ""]
