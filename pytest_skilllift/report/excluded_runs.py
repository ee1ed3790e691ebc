"""With-skill runs that did not complete: excluded from trigger and invocation counts, named.

Only a with-skill run that completed (status ``ok`` or ``no_answer``: the CLI ran to its end)
can show whether the skill was reached. An API outage, a timeout, a failed install, a budget
cap or a CLI that never started says nothing about the skill's description, so such a run is
never a trigger miss (``activation=none``) nor ``NOT_INVOKED``: it is listed here instead.
The builder reads the loaded week; the renderers return scorecard.md lines.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_skilllift.report.scorecard import md_table
from pytest_skilllift.week.tables import RUN_STATUSES, STATUS_NO_ANSWER, STATUS_OK, Week

#: Excluded runs listed in scorecard.md (all of them are in scorecard.json).
MAX_ROWS = 20


def completed_with_skill(week: Week) -> np.ndarray:
    """Mask of the with-skill runs that count for activation and the trajectory audit."""
    return (week.m_cond == 1) & np.isin(week.m_status, (STATUS_OK, STATUS_NO_ANSWER))


def excluded_with_skill_runs(week: Week) -> list[dict[str, Any]]:
    """Every with-skill run that did not complete: run id, prompt, model, status, reason."""
    rows = np.flatnonzero((week.m_cond == 1) & ~completed_with_skill(week))
    if rows.size == 0:
        return []
    ids = week.run_ids(rows.tolist())
    errors = (week.m_run_error.take(rows).to_pylist() if week.m_run_error is not None
              else [None] * rows.size)
    out = []
    for j, r in enumerate(rows.tolist()):
        status = RUN_STATUSES[int(week.m_status[r])]
        p, m = int(week.m_prompt[r]), int(week.m_model[r])
        out.append({
            "run_id": ids[j], "status": status,
            "prompt": week.prompts[p] if p >= 0 else "",
            "model": week.models[m] if m >= 0 else "",
            "reason": str(errors[j] or "").strip() or status,
        })
    return out


def render_activation_note(summary: dict[str, Any]) -> list[str]:
    """One line for the activation section: how many with-skill runs were left out."""
    n = summary.get("excluded_runs", 0)
    if not n:
        return []
    return [f"- with-skill runs that did not complete (outage, timeout, failed install, budget "
            f"cap, CLI never started): **{n}** — excluded, not trigger misses; listed under "
            "the trajectory audit"]


def render_audit_rows(audit: dict[str, Any]) -> list[str]:
    """The audit section's list of excluded with-skill runs."""
    rows = audit.get("excluded_runs") or []
    if not rows:
        return []
    shown = rows[:MAX_ROWS]
    L = ["", f"Excluded with-skill runs (did not complete; not counted as NOT_INVOKED or as "
         f"trigger misses): **{len(rows)}**", ""]
    L += md_table(["run_id", "status", "reason"],
                  [[r["run_id"], r["status"], r["reason"].replace("|", "\\|")[:160]]
                   for r in shown])
    if len(rows) > len(shown):
        L.append(f"\n_Showing {len(shown)} of {len(rows)} excluded runs; all are in "
                 "scorecard.json (audit.excluded_runs)._")
    return L
