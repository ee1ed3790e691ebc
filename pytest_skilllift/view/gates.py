"""The week's recorded gates, measured the way ``skilllift gate WEEKDIR`` measures them.

The gates a session started with are in ``week.json`` (``week.identity``); their results are
not in scorecard.json, so the overview asks ``skilllift gate``'s own code
(``report.gates.measure`` on the week's summary, written nowhere) rather than re-deriving a verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["gate_results"]


def gate_results(week_dir: Path) -> dict[str, Any]:
    """``{"recorded": [...], "report": GateReport JSON | None, "error": str}``."""
    from pytest_skilllift.week.identity import WeekFileError, read_week_record

    try:
        record = read_week_record(week_dir)
    except WeekFileError as err:
        return {"recorded": [], "report": None, "error": str(err)}
    if record is None or not record.gates:
        return {"recorded": [], "report": None, "error": ""}
    from pytest_skilllift.report import gates as gatemod
    from pytest_skilllift.report.gates import measure
    from pytest_skilllift.report.summarize import summarize_week

    summary = summarize_week(week_dir, write=False, plots=False)
    scopes = gatemod.Scopes(models=tuple(summary.week.models),
                            prompts=tuple(summary.week.prompts))
    try:
        gates, _warnings = gatemod.load_gates(list(record.gates), scopes)
    except gatemod.GateError as err:
        return {"recorded": list(record.gates), "report": None, "error": str(err)}
    report = measure(gates, summary, record.min_coverage, week_dir.name)
    return {"recorded": list(record.gates), "report": report.to_json(), "error": ""}
