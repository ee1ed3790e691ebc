"""Shape checks for the per-run ledger files (``run.json``, ``grades.json``).

The harness writes these files atomically, so a file that fails a check was edited or
damaged by hand. Such a file is never trusted and never crashes a session: the ledger treats
it as absent (the run is generated or graded again) and says so in one warning naming the
file and the problem. Pure functions: each returns the problem text, or None when usable.
"""

from __future__ import annotations

from typing import Any


class LedgerWarning(UserWarning):
    """A week-directory file that could not be used as it is (named, with what happens)."""


def _kind(value: Any) -> str:
    names = {dict: "object", list: "list", str: "string", bool: "boolean", int: "number",
             float: "number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def run_problem(data: Any) -> str | None:
    """What is wrong with a ``run.json`` document, or None."""
    if not isinstance(data, dict):
        return f"holds a JSON {_kind(data)}, not an object"
    if not isinstance(data.get("run_id"), str) or not data["run_id"]:
        return f"'run_id' is {data.get('run_id')!r}, not a non-empty string"
    for key in ("prompt", "model", "condition", "run_status", "run_error"):
        if key in data and not isinstance(data[key], str):
            return f"{key!r} is {data[key]!r}, not a string"
    if "rep" in data and (not _whole(data["rep"]) or data["rep"] < 0):
        return f"'rep' is {data['rep']!r}, not a whole number"
    if not isinstance(data.get("final_answer", ""), str):
        return "'final_answer' is not a string"
    return None


def grades_problem(data: Any) -> str | None:
    """What is wrong with a ``grades.json`` document, or None."""
    if not isinstance(data, dict):
        return f"holds a JSON {_kind(data)}, not an object"
    rows = data.get("rows")
    if not isinstance(rows, list):
        return f"'rows' is a JSON {_kind(rows)}, not a list of score rows"
    for pos, row in enumerate(rows):
        if not isinstance(row, dict):
            return f"rows[{pos}] is {row!r}, not a score row object"
        if not isinstance(row.get("item_type"), str) or not _whole(row.get("item_index")):
            return (f"rows[{pos}] has no item_type string and item_index number "
                    "(not a score row written by this harness)")
    return None
