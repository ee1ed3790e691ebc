"""What the viewer shows of one run: its final answer, its trajectory of tool calls, its audit.

Read from the run's own files (``run.json``, ``stdout.txt``, ``audit.json``) through the
readers that own them (``judge.calibrate.read_answer``, ``trace.transcript``); a file that is
missing or unreadable becomes a note on the page, never an exception.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_skilllift.week.files import (
    AUDIT_FILE,
    RUN_FILE,
    STDOUT_FILE,
    WeekLinkError,
    read_text_nofollow,
)

__all__ = ["read_run", "step_of", "trajectory"]

#: Longest tool argument shown in a trajectory step (a Write's whole file is not a label).
MAX_TARGET = 300
#: Longest tool result shown under a step; a longer one is cut and its length said.
MAX_RESULT = 800


def _json_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_text_nofollow(path))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _target(name: str, args: dict[str, Any]) -> str:
    """The argument that says what a call was about: a path, a URL, a skill, a command."""
    for key in ("skill", "file_path", "path", "url", "pattern", "command", "query",
                "description", "prompt"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return value[:MAX_TARGET] + ("…" if len(value) > MAX_TARGET else "")
    return ""


def step_of(name: str, args: dict[str, Any], *, denied: bool, error: bool,
            subagent: bool, result: str | None = None) -> dict[str, Any]:
    """One trajectory step as the page shows it: the tool, what it was about, and its result
    (the first ``MAX_RESULT`` characters; ``result_chars`` is the whole length when cut)."""
    step: dict[str, Any] = {"tool": name, "target": _target(name, args), "denied": denied,
                            "error": error, "subagent": subagent}
    if result is not None:
        step["result"] = result[:MAX_RESULT]
        if len(result) > MAX_RESULT:
            step["result_chars"] = len(result)
    return step


def trajectory(run_dir: Path) -> tuple[list[dict[str, Any]], str]:
    """Every tool call of the run's transcript in order, and a note when there is none to read."""
    stdout = run_dir / STDOUT_FILE
    if stdout.is_symlink():
        return [], f"{WeekLinkError(stdout)}"
    if not stdout.is_file():
        return [], f"no {STDOUT_FILE} in the run directory"
    from pytest_skilllift.trace.transcript import parse_transcript

    try:
        tr = parse_transcript(stdout)
    except (OSError, ValueError) as err:
        return [], f"{STDOUT_FILE} unreadable: {err}"
    steps = [step_of(u.name, u.input, denied=u.denied, error=u.is_error and not u.denied,
                     subagent=u.parent_tool_use_id is not None, result=u.result)
             for u in tr.tool_uses]
    note = f"{tr.bad_lines} line(s) of {STDOUT_FILE} were not JSON" if tr.bad_lines else ""
    return steps, note


def read_run(week_dir: Path, run_id: str) -> dict[str, Any]:
    """The answer, trajectory and audit of one run (``answer`` None with ``answer_note``)."""
    from pytest_skilllift.judge.calibrate import CalibrationError, read_answer
    from pytest_skilllift.trace.transcript import final_answer

    run_dir = week_dir / run_id
    if run_id and run_dir.is_symlink():
        note = str(WeekLinkError(run_dir, "(a run folder)")).replace(str(week_dir), "WEEKDIR")
        return {"answer": None, "answer_note": note, "trajectory": [],
                "trajectory_note": note, "audit": None}
    if not run_id or not run_dir.is_dir():
        note = "no run directory in the week" if run_id else "no run id in manifest.csv"
        return {"answer": None, "answer_note": note, "trajectory": [],
                "trajectory_note": note, "audit": None}
    record = _json_file(run_dir / RUN_FILE)
    try:
        answer: str | None = read_answer(run_dir, record, final_answer)
        answer_note = ""
    except CalibrationError as err:
        answer, answer_note = None, str(err).replace(str(week_dir), "WEEKDIR")
    steps, note = trajectory(run_dir)
    audit = _json_file(run_dir / AUDIT_FILE).get("skill_invocation")
    return {"answer": answer, "answer_note": answer_note, "trajectory": steps,
            "trajectory_note": note,
            "audit": ({"status": audit.get("status"), "evidence": audit.get("evidence"),
                       "discovery": audit.get("discovery_method")}
                      if isinstance(audit, dict) else None),
            "prompt_path": record.get("prompt_path") if isinstance(record.get("prompt_path"),
                                                                   str) else None}
