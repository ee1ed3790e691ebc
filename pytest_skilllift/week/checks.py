"""Outcomes of the team's own checks (tests over ``skill_lift_run``), kept in the week.

``<week>/custom_checks.csv`` holds one row per (check, run): the check's id without the run
parameter, the run's coordinates, and ``passed`` / ``failed`` / ``skipped`` with the reason.
A session merges its outcomes into the file (a check rerun on a run replaces its row; checks
not run this session keep theirs), under a lock, atomically — so ``skilllift summarize``
rebuilds the "Custom checks" section from the week directory alone. No pytest here.
"""

from __future__ import annotations

import contextlib
import csv
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pytest_skilllift.week.files import CUSTOM_CHECKS_CSV, atomic_write_text, file_lock

COLUMNS: tuple[str, ...] = ("test", "prompt", "skill_family", "model", "condition", "rep",
                            "run_id", "outcome", "reason")
OUTCOMES: tuple[str, ...] = ("passed", "failed", "skipped")


@dataclass
class CheckTally:
    """Per (check, run): the outcome of one check item from its setup/call/teardown reports.

    A failure in any phase is ``failed``; a skip in setup or call (an excluded run, a
    ``pytest.skip``) is ``skipped`` with its reason; otherwise a passed call is ``passed``.
    """

    rows: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    def add(self, meta: dict[str, str], when: str, outcome: str, reason: str = "") -> None:
        """Count one phase of a custom check on a run (its outcome and reason)."""
        key = (meta["test"], meta["run_id"])
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = {c: str(meta.get(c, "")) for c in COLUMNS}
            row["outcome"] = ""
        if outcome == "failed":
            row["outcome"], row["reason"] = "failed", reason if when == "call" else (
                f"error in {when}: {reason}")
        elif row["outcome"] == "failed":
            return
        elif outcome == "skipped":
            row["outcome"], row["reason"] = "skipped", reason
        elif outcome == "passed" and when == "call":
            row["outcome"], row["reason"] = "passed", ""

    def finished(self) -> list[dict[str, str]]:
        """Rows that reached an outcome (an interrupted item has none and is left out)."""
        return [r for r in self.rows.values() if r["outcome"] in OUTCOMES]


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    with file_lock(root / f".{CUSTOM_CHECKS_CSV}.lock"):
        yield


def _rep(text: str) -> int:
    return int(text) if text.isdigit() else 0


def read_checks(root: Path) -> list[dict[str, str]]:
    """The week's check outcomes; empty when the week has none (or no file)."""
    try:
        text = (root / CUSTOM_CHECKS_CSV).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [{c: (row.get(c) or "") for c in COLUMNS} for row in csv.DictReader(io.StringIO(text))]


def merge_checks(root: Path, rows: Iterable[dict[str, str]]) -> int:
    """Upsert ``rows`` by (test, run_id) into ``<root>/custom_checks.csv``; return the count
    of rows now in the file. Rows stay sorted, so the same outcomes give the same bytes."""
    new = list(rows)
    if not new:
        return len(read_checks(root))
    with _locked(root):
        merged = {(r["test"], r["run_id"]): r for r in read_checks(root)}
        merged.update({(r["test"], r["run_id"]): r for r in new})
        ordered = sorted(merged.values(), key=lambda r: (
            r["test"], r["prompt"], r["model"], r["condition"], _rep(r["rep"]), r["run_id"]))
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(COLUMNS), extrasaction="ignore",
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(ordered)
        atomic_write_text(root / CUSTOM_CHECKS_CSV, buf.getvalue())
    return len(ordered)
