"""The week directory is the ledger: per-run files are the truth, the CSVs are derived.

The layout and the file names are in :mod:`pytest_skilllift.week.files`.

Every file is written atomically (``files.atomic_write_*``), so a SIGKILL at any moment leaves
either the old or the new file, never a torn one. Workers only write their own run
directories; ``rebuild_csvs`` regenerates manifest.csv and scores.csv from them, so rows can be
neither lost nor duplicated, whatever was interrupted.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_skilllift.week.columns import (
    MANIFEST_COLUMNS,
    MANIFEST_EXTRA_COLUMNS,
    SCORES_COLUMNS,
    SCORES_EXTRA_COLUMNS,
)
from pytest_skilllift.week.files import (
    AUDIT_FILE,
    GRADES_FILE,
    JUDGE_COST_FILE,
    JUDGE_ERROR_FILE,
    LOCK_FILE,
    MANIFEST_CSV,
    RUN_FILE,
    SCORES_CSV,
    TASK_RUBRIC_CSV,
    WeekLinkError,
    atomic_write_json,
    atomic_write_text,
    clear_dir_nofollow,
    file_lock,
    no_link,
    read_bytes_nofollow,
    read_text_nofollow,
)
from pytest_skilllift.week.ledger_checks import LedgerWarning, grades_problem, run_problem


class Ledger:
    """Paths and persisted state of one week directory (the run files are the truth)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def manifest_csv(self) -> Path:
        """The week's manifest.csv."""
        return self.root / MANIFEST_CSV

    @property
    def scores_csv(self) -> Path:
        """The week's scores.csv."""
        return self.root / SCORES_CSV

    def run_dir(self, run_id: str) -> Path:
        """``<week>/<run_id>``; :class:`~pytest_skilllift.week.files.WeekLinkError` when it
        is a symbolic link (a reset would delete, and a run write, what it points to)."""
        return no_link(self.root / run_id, "(a run folder)")

    def run_dirs(self) -> list[Path]:
        """The week's run folders (those holding ``run.json``), sorted; a folder that is a
        link is left out with a warning naming it (never read through)."""
        out = []
        try:
            entries = sorted(os.scandir(self.root), key=lambda e: e.name)
        except FileNotFoundError:
            return []
        for entry in entries:
            if entry.is_symlink():
                if os.path.exists(os.path.join(entry.path, RUN_FILE)):
                    warnings.warn(LedgerWarning(f"{entry.path}: {WeekLinkError(Path(entry.path))}"
                                                "; left out of the week"), stacklevel=2)
                continue
            if entry.is_dir(follow_symlinks=False) and os.path.lexists(
                    os.path.join(entry.path, RUN_FILE)):
                out.append(Path(entry.path))
        return out

    @contextlib.contextmanager
    def lock(self, run_id: str) -> Iterator[None]:
        """Exclusive per-run lock across processes (xdist workers, concurrent sessions)."""
        with file_lock(self.run_dir(run_id) / LOCK_FILE):
            yield

    # -- runs ---------------------------------------------------------------------------
    def load_run(self, run_id: str) -> dict[str, Any] | None:
        """The run's record, or None when absent or unusable (then it is regenerated)."""
        return _checked(self.run_dir(run_id) / RUN_FILE, run_problem,
                        "the run is generated again and regraded")

    def save_run(self, run_id: str, record: dict[str, Any]) -> None:
        """Write the run's run.json atomically."""
        atomic_write_json(self.run_dir(run_id) / RUN_FILE, record)

    # -- grades -------------------------------------------------------------------------
    def load_grades(self, run_id: str) -> list[dict[str, Any]] | None:
        """The run's score rows, or None when absent or unusable (then it is regraded)."""
        data = self.load_grading(run_id)
        return None if data is None else list(data["rows"])

    def load_grading(self, run_id: str) -> dict[str, Any] | None:
        """The run's whole ``grades.json`` (rows and how it was judged), or None."""
        return _checked(self.run_dir(run_id) / GRADES_FILE, grades_problem,
                        "the run is graded again")

    def save_grades(self, run_id: str, rows: list[dict[str, Any]], judge_model: str,
                    cost_usd: float, judge_ms: int | None = None,
                    meta: dict[str, Any] | None = None) -> None:
        """Write a run's grades (``meta``: how it was judged — calls, samples, policy)."""
        run_dir = self.run_dir(run_id)
        # judge_cost.txt first: a kill between the two leaves the run ungraded (regraded on
        # rerun, its cost file overwritten), never graded without its cost.
        atomic_write_text(run_dir / JUDGE_COST_FILE, f"{cost_usd:.6f}\n")
        atomic_write_json(run_dir / GRADES_FILE,
                          {**(meta or {}), "judge_model": judge_model, "cost_usd": cost_usd,
                           "judge_ms": judge_ms, "rows": rows})
        with contextlib.suppress(FileNotFoundError):
            (run_dir / JUDGE_ERROR_FILE).unlink()

    def save_audit(self, run_id: str, record: dict[str, Any]) -> None:
        """The per-run trajectory audit (with-skill runs): invocation status and misuse."""
        atomic_write_json(self.run_dir(run_id) / AUDIT_FILE, record)

    def save_judge_error(self, run_id: str, reason: str) -> None:
        """Record why the run could not be graded."""
        atomic_write_text(self.run_dir(run_id) / JUDGE_ERROR_FILE, reason + "\n")

    def judge_error(self, run_id: str) -> str | None:
        """Why the run could not be graded (None when it was not recorded)."""
        try:
            return read_text_nofollow(self.run_dir(run_id) / JUDGE_ERROR_FILE).strip()
        except FileNotFoundError:
            return None

    def reset_run(self, run_id: str) -> None:
        """Remove a run's files before regenerating it (a retried errored run). A run folder
        that is a link is refused, a link inside it removed as a link (never followed)."""
        run_dir = self.run_dir(run_id)
        with contextlib.suppress(FileNotFoundError):
            clear_dir_nofollow(run_dir, keep=frozenset({LOCK_FILE}))

    # -- derived CSVs -------------------------------------------------------------------
    def run_records(self) -> list[dict[str, Any]]:
        """All finished runs, in a stable order (prompt, model, condition, rep)."""
        records = []
        for folder in self.run_dirs():
            data = _checked(folder / RUN_FILE, run_problem,
                            "left out of manifest.csv until the run is generated again "
                            "(rerun pytest --skill-lift)")
            if data is not None:
                records.append(data)
        records.sort(key=lambda r: (r.get("prompt", ""), r.get("model", ""),
                                    r.get("condition", ""), int(r.get("rep", 0))))
        return records

    def rebuild_csvs(self) -> tuple[int, int]:
        """Regenerate manifest.csv and scores.csv from the run directories.

        Returns (manifest rows, score rows). Idempotent: the same run directories always give
        byte-identical files.
        """
        records = self.run_records()
        manifest_cols = list(MANIFEST_COLUMNS) + list(MANIFEST_EXTRA_COLUMNS)
        score_cols = list(SCORES_COLUMNS) + list(SCORES_EXTRA_COLUMNS)
        score_rows: list[dict[str, Any]] = []
        task_rows: list[dict[str, Any]] = []
        for rec in records:
            # A task run's rubric grades (its rubric.json) have their own file: a task's
            # coverage is never pooled with the prompts' must coverage.
            (task_rows if rec.get("task") else score_rows).extend(
                self.load_grades(rec["run_id"]) or [])
        atomic_write_text(self.manifest_csv, _csv_text(manifest_cols, records))
        atomic_write_text(self.scores_csv, _csv_text(score_cols, score_rows))
        task_csv = self.root / TASK_RUBRIC_CSV
        if task_rows:
            atomic_write_text(task_csv, _csv_text(score_cols, task_rows))
        else:  # none (any more): no stale file of an earlier rebuild
            with contextlib.suppress(FileNotFoundError):
                task_csv.unlink()
        return len(records), len(score_rows)


def _checked(path: Path, problem: Any, action: str) -> dict[str, Any] | None:
    """A ledger file's content when it has the expected shape; otherwise None and one
    warning naming the file, what is wrong and what happens to the run."""
    try:
        raw = read_bytes_nofollow(path)
    except FileNotFoundError:
        return None
    except WeekLinkError as exc:
        warnings.warn(LedgerWarning(f"{exc}; {action}"), stacklevel=3)
        return None
    except OSError as exc:
        warnings.warn(LedgerWarning(f"{path}: cannot be read ({exc.strerror}); {action}"),
                      stacklevel=3)
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        warnings.warn(LedgerWarning(f"{path}: not valid JSON ({exc}); {action}"), stacklevel=3)
        return None
    why = problem(data)
    if why:
        warnings.warn(LedgerWarning(f"{path}: {why}; {action}"), stacklevel=3)
        return None
    assert isinstance(data, dict)
    return data


def _csv_text(columns: list[str], rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(row.get(k)) for k in columns})
    return buf.getvalue()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    return value
