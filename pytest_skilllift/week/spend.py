"""The week's spend, the ``--skill-lift-max-spend`` cap, and ``<week>/spend.json``.

What a week has spent is read from the week directory itself: each finished run's
``total_cost_usd`` (the CLI's own figure, in ``run.json``; trigger runs in ``triggers/`` too)
plus each graded run's judge cost
(``judge_cost.txt``, written with its grades from the usage the API returned — at the batch
price for batch-graded runs). The directory is shared by every xdist worker and by every earlier
session of the week, so the same sum is the spend "across all workers" and "what the week
already spent" when a session resumes. A file is read again only when it changed.

What the figure does not hold, said once here and in docs/ci.md: a run still generating (its
cost is known when it ends — so the cap can be overshot by up to the runs in flight, each at
most ``--skill-lift-max-budget-usd``), an errored attempt that a later session replaced by its
retry, and grades discarded by ``--skill-lift-fresh``.

The cap only stops *starting* runs: a run already started finishes, and a run already generated
is still graded. Runs the cap kept from starting are listed in ``spend.json`` (with the cap) so
the scorecard reports them as ``not run: spend cap``; a later session that runs them takes them
off the list. No pytest here.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilllift.week.files import (
    JUDGE_COST_FILE,
    RUN_FILE,
    SPEND_FILE,
    TRIGGERS_DIR,
    atomic_write_json,
    utc_stamp,
)

#: A run's status in the session tally when the cap kept it from starting (no run.json).
NOT_RUN = "not_run"
#: The reason its items are skipped with, and the coverage section's words.
NOT_RUN_REASON = "not run: spend cap"


@dataclass(frozen=True)
class Spend:
    """USD recorded in a week directory."""

    generation_usd: float
    judge_usd: float
    runs: int

    @property
    def total_usd(self) -> float:
        """Generation plus judge."""
        return self.generation_usd + self.judge_usd


def _run_cost(path: Path) -> float:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("baseline_from"):  # --skill-lift-baseline-from: paid in its own week
            return 0.0
        return float(data.get("total_cost_usd") or 0.0)
    except (OSError, ValueError, TypeError, AttributeError):
        return 0.0


def _judge_cost(path: Path) -> float:
    try:
        return float(path.read_text(encoding="utf-8").strip() or 0.0)
    except (OSError, ValueError):
        return 0.0


class SpendMeter:
    """Sums a week directory's recorded spend; rereads only files whose stat changed."""

    def __init__(self, week_dir: Path) -> None:
        self.root = Path(week_dir)
        self._seen: dict[str, tuple[tuple[int, int], float]] = {}
        self._lock = threading.Lock()

    def _cost(self, path: Path, read: Any) -> float:
        try:
            st = os.stat(path)
        except OSError:
            return 0.0
        key, stamp = str(path), (st.st_mtime_ns, st.st_size)
        hit = self._seen.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        value = float(read(path))
        self._seen[key] = (stamp, value)
        return value

    def spent(self) -> Spend:
        """The week's spend now (generation + judge)."""
        gen = judge = 0.0
        runs = 0
        with self._lock:
            entries = []
            # The lift's runs, and the trigger runs in their subfolder.
            for folder in (self.root, self.root / TRIGGERS_DIR):
                try:
                    entries += list(os.scandir(folder))
                except OSError:
                    continue
            for entry in entries:
                if not entry.is_dir():
                    continue
                run_dir = Path(entry.path)
                if (run_dir / RUN_FILE).exists():
                    runs += 1
                    gen += self._cost(run_dir / RUN_FILE, _run_cost)
                judge += self._cost(run_dir / JUDGE_COST_FILE, _judge_cost)
        return Spend(gen, judge, runs)


class SpendCap:
    """``--skill-lift-max-spend``: the start gate of every run of a session (any worker).

    Once reached it stays reached for the session (spend never goes down), so later checks
    do not rescan the week."""

    def __init__(self, week_dir: Path, cap_usd: float) -> None:
        if cap_usd < 0:
            raise ValueError(f"a spend cap is at least 0 USD, not {cap_usd}")
        self.cap_usd = cap_usd
        self.meter = SpendMeter(week_dir)
        self._reached: Spend | None = None

    def reached(self) -> Spend | None:
        """The spend, when it has reached the cap; None while runs may still start."""
        if self._reached is None:
            now = self.meter.spent()
            if now.total_usd >= self.cap_usd:
                self._reached = now
        return self._reached

    def check(self, _spec: object = None) -> str | None:
        """A run's start gate (``WeekRun.start_gate``): the skip reason, or None."""
        spent = self.reached()
        if spent is None:
            return None
        return (f"{NOT_RUN_REASON} (the week has spent ${spent.total_usd:.2f} of its "
                f"${self.cap_usd:.2f} cap; raise --skill-lift-max-spend to run it)")


# ---------------------------------------------------------------------------------------------
# spend.json


@dataclass
class SpendRecord:
    """``spend.json``: the cap in force, and the runs it kept from starting (not yet run);
    beside them the runs the circuit breaker held back after an outage (not yet run)."""

    cap_usd: float | None = None
    not_run_spend_cap: tuple[str, ...] = ()
    not_run_outage: tuple[str, ...] = ()
    spent_usd: float = 0.0
    generation_usd: float = 0.0
    judge_usd: float = 0.0
    updated_utc: str = ""

    def to_json(self) -> dict[str, Any]:
        """The record as spend.json stores it."""
        return {"cap_usd": self.cap_usd, "spent_usd": self.spent_usd,
                "generation_usd": self.generation_usd, "judge_usd": self.judge_usd,
                "not_run_spend_cap": sorted(self.not_run_spend_cap),
                "not_run_outage": sorted(self.not_run_outage),
                "updated_utc": self.updated_utc}


def read_spend(week_dir: Path) -> SpendRecord | None:
    """The week's spend.json, or None (no cap was ever set; an unreadable file reads as
    absent — it is rewritten by the next session with a cap)."""
    try:
        data = json.loads((Path(week_dir) / SPEND_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    cap = data.get("cap_usd")
    not_run = data.get("not_run_spend_cap") or []
    outage = data.get("not_run_outage") or []
    return SpendRecord(
        cap_usd=float(cap) if isinstance(cap, (int, float)) else None,
        not_run_spend_cap=tuple(str(r) for r in not_run if isinstance(r, str)),
        not_run_outage=tuple(str(r) for r in outage if isinstance(r, str)),
        spent_usd=float(data.get("spent_usd") or 0.0),
        generation_usd=float(data.get("generation_usd") or 0.0),
        judge_usd=float(data.get("judge_usd") or 0.0),
        updated_utc=str(data.get("updated_utc") or ""))


def update_spend(week_dir: Path, cap_usd: float | None, not_run: Iterable[str],
                 not_run_outage: Iterable[str] = ()) -> SpendRecord:
    """Record the cap and the runs it kept from starting — and the runs the circuit breaker
    held back after an outage — merged with what the week's spend.json already lists; runs
    the week now holds are taken off. Writes nothing when no cap was ever set and no run was
    held back (returns an empty record)."""
    week_dir = Path(week_dir)
    before = read_spend(week_dir)
    outage = set(not_run_outage) | set(before.not_run_outage if before else ())
    outage_still = tuple(sorted(r for r in outage if not (week_dir / r / RUN_FILE).exists()))
    if cap_usd is None and before is None and not outage_still:
        return SpendRecord()
    listed = set(not_run) | set(before.not_run_spend_cap if before else ())
    still = tuple(sorted(r for r in listed if not (week_dir / r / RUN_FILE).exists()))
    spent = SpendMeter(week_dir).spent()
    record = SpendRecord(
        cap_usd=cap_usd if cap_usd is not None else (before.cap_usd if before else None),
        not_run_spend_cap=still, not_run_outage=outage_still, spent_usd=spent.total_usd,
        generation_usd=spent.generation_usd, judge_usd=spent.judge_usd,
        updated_utc=utc_stamp())
    atomic_write_json(week_dir / SPEND_FILE, record.to_json())
    return record
