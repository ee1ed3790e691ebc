"""A Harbor task's page in the viewer: the instruction, the verifier's tests × runs, each run's
reward, the files it made, the verifier's output and its trajectory.

A prompt of the week is a task when its runs' ``run.json`` carry ``task`` (the task runner's
records, and ``skilllift import harbor``'s). Per model the columns are the runs, the no-skill
and the with-skill run of each rep side by side; the rows are the verifier's tests (as rubric
items are on a prompt's page), each cell the test's outcome in that run. Per run: the reward,
the status (a ``verifier_error`` named with its cause), the files under the run folder's
``artifacts/`` (text shown capped, binary files named with their size; links never followed,
what is cut counted), ``verifier/output.txt`` (capped) and the tool calls of its transcript.
A task with a ``rubric.json`` also shows its items × the runs (the judge's verdict in each)
and, per run, each verdict with the judge's evidence quote (from ``grades.json``).
Everything read here is data: ``viewer.js`` shows it with ``textContent`` only.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from pytest_skilllift.model import ARMS
from pytest_skilllift.view.runs import trajectory
from pytest_skilllift.week.files import (
    ARTIFACTS_DIR,
    AUDIT_FILE,
    GRADES_FILE,
    RUN_FILE,
    TASK_FILE,
    VERIFIER_DIR,
    VERIFIER_OUTPUT,
)

#: Caps on what one run shows (each cut counted on the page).
MAX_FILES = 40
MAX_FILE_TEXT = 16 * 1024
MAX_OUTPUT = 32 * 1024


def _json(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode) or path.is_symlink():
                return {}
            data = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def is_task_run(week_dir: Path, run_id: str) -> bool:
    """Whether the run's record is a task run's."""
    return bool(run_id) and bool(_json(week_dir / run_id / RUN_FILE).get("task"))


def _read_capped(path: Path, cap: int) -> tuple[bytes, int]:
    """``(first cap bytes, total size)`` of a regular file (never through a link)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        return fh.read(cap), size


def artifacts(run_dir: Path) -> dict[str, Any]:
    """The run's saved files: path, size, text (capped) or ``binary``; what is left out."""
    root = run_dir / ARTIFACTS_DIR
    files: list[dict[str, Any]] = []
    left: list[dict[str, Any]] = []
    walk = os.walk(root, followlinks=False) if root.is_dir() and not root.is_symlink() else []
    for folder, dirs, names in walk:
        dirs.sort()
        for name in sorted(names):
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            if not stat.S_ISREG(st.st_mode):
                left.append({"path": rel, "why": "not a regular file (a link is never "
                             "followed)"})
                continue
            if len(files) >= MAX_FILES:
                left.append({"path": rel, "why": f"over {MAX_FILES} files shown"})
                continue
            try:
                head, size = _read_capped(path, MAX_FILE_TEXT)
            except OSError as err:
                left.append({"path": rel, "why": f"unreadable ({err.strerror})"})
                continue
            entry: dict[str, Any] = {"path": rel, "bytes": size}
            try:
                if b"\0" in head:
                    raise UnicodeDecodeError("utf-8", head, 0, 1, "NUL byte")
                text = head.decode("utf-8") if size <= MAX_FILE_TEXT else head.decode(
                    "utf-8", errors="ignore")
                entry["text"] = text
                entry["cut_bytes"] = max(0, size - len(head))
            except UnicodeDecodeError:
                entry["binary"] = True
            files.append(entry)
    # What the task runner cut when it saved the run (task.json), and what the agent deleted.
    saved = _json(run_dir / TASK_FILE).get("artifacts")
    saved = saved if isinstance(saved, dict) else {}
    for cut in saved.get("cut") or []:
        if isinstance(cut, dict):
            left.append({"path": str(cut.get("path", "")), "why": f"not saved by the run "
                         f"({cut.get('reason', '')}, {cut.get('bytes', '?')} bytes)"})
    for gone in saved.get("deleted") or []:
        left.append({"path": str(gone), "why": "deleted by the agent"})
    return {"files": files, "left_out": left}


def _output(run_dir: Path) -> tuple[str | None, int]:
    path = run_dir / VERIFIER_DIR / VERIFIER_OUTPUT
    try:
        head, size = _read_capped(path, MAX_OUTPUT)
    except OSError:
        return None, 0
    return head.decode("utf-8", errors="replace"), max(0, size - len(head))


def rubric(run_dir: Path) -> list[dict[str, Any]]:
    """The judge's verdicts on the task's ``rubric.json`` items in this run (its
    ``grades.json``; empty when the task has no rubric or the run is not graded yet)."""
    rows = _json(run_dir / GRADES_FILE).get("rows")
    out: list[dict[str, Any]] = []
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict):
            continue
        out.append({"key": f"{row.get('item_type', '')}-{row.get('item_index', '')}",
                    "type": str(row.get("item_type", "")), "text": str(row.get("item_text", "")),
                    "verdict": str(row.get("verdict") or "ungraded"),
                    "evidence": str(row.get("evidence_quote") or ""),
                    "evidence_ok": row.get("evidence_ok") in (1, "1", True),
                    # the judge's short reason for a missing/absent/violated item ("" when the
                    # run was graded before the judge gave reasons)
                    "reason": str(row.get("judge_reason") or "")})
    return out


def task_run(week_dir: Path, run_id: str) -> dict[str, Any]:
    """What a task run's column and detail show."""
    run_dir = week_dir / run_id
    record = _json(run_dir / RUN_FILE)
    reward = record.get("reward")
    tests = record.get("verifier_tests")
    output, cut = _output(run_dir)
    steps, note = trajectory(run_dir)
    audit = _json(run_dir / AUDIT_FILE).get("skill_invocation")
    return {
        "run_id": run_id, "status": str(record.get("run_status", "")),
        "error": str(record.get("run_error") or record.get("verifier_error") or ""),
        "reward": reward if isinstance(reward, int | float) and not isinstance(
            reward, bool) else None,
        "tests": {str(k): str(v) for k, v in tests.items()} if isinstance(tests, dict) else {},
        "artifacts": artifacts(run_dir), "verifier_output": output,
        "verifier_output_cut": cut, "trajectory": steps, "trajectory_note": note,
        "invocation": (audit.get("status") if isinstance(audit, dict) else None),
        "answer": str(record.get("final_answer") or ""),
        "rubric": rubric(run_dir),
    }


def _instruction(week_dir: Path, records: list[dict[str, Any]]) -> tuple[str | None, str]:
    """The task's instruction: the one a record carries (an import), else ``instruction.md``
    beside the ``task.toml`` a record names."""
    for rec in records:
        if isinstance(rec.get("instruction"), str) and rec["instruction"]:
            return rec["instruction"], ""
    for rec in records:
        raw = rec.get("prompt_path")
        if isinstance(raw, str) and raw.endswith("task.toml"):
            path = Path(raw) if Path(raw).is_absolute() else week_dir / raw
            try:
                return (path.parent / "instruction.md").read_text(encoding="utf-8",
                                                                  errors="replace"), ""
            except OSError:
                continue
    return None, "the task's instruction.md is not on this machine (no run records it)"


def task_page(week_dir: Path, prompt: str, runs: list[Any], models: list[str],
              card: dict[str, Any]) -> dict[str, Any]:
    """The page data of the task ``prompt`` (``runs``: its ``view.data.RunRow``s)."""
    records = [_json(week_dir / r.run_id / RUN_FILE) for r in runs]
    text, note = _instruction(week_dir, records)
    blocks = []
    for model in models:
        mine = [r for r in runs if r.model == model]
        if not mine:
            continue
        # Per rep, the no-skill run then the with-skill run (then any other arm): side by side.
        mine.sort(key=lambda r: (r.rep, ARMS.index(r.condition) if r.condition in ARMS
                                 else len(ARMS), r.condition))
        columns = [{"condition": r.condition, "rep": r.rep, **task_run(week_dir, r.run_id)}
                   for r in mine]
        names: list[str] = []
        for c in columns:
            names += [n for n in c["tests"] if n not in names]
        tests = [{"name": n, "cells": [c["tests"].get(n) for c in columns]} for n in names]
        # The rubric items (rubric.json) × the same runs: the judge's verdict in each.
        items: dict[str, dict[str, Any]] = {}
        for ci, c in enumerate(columns):
            for row in c["rubric"]:
                item = items.setdefault(row["key"], {"key": row["key"], "type": row["type"],
                                                     "text": row["text"],
                                                     "cells": [None] * len(columns)})
                item["cells"][ci] = row["verdict"]
        blocks.append({"model": model, "columns": columns, "tests": tests,
                       "rubric": list(items.values())})
    rewards = card.get("rewards") if isinstance(card.get("rewards"), dict) else {}
    rows = [t for t in (rewards or {}).get("tasks", []) if isinstance(t, dict)
            and t.get("task") == prompt]
    family = next((r.family for r in runs if r.family), "")
    return {"prompt": prompt, "family": family, "instruction": text,
            "instruction_note": note, "rewards": rows, "models": blocks}
