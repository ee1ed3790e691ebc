"""Where a long week is: runs done of total, graded, errored, spend, ETA. No pytest here.

One :class:`Progress` lives in the process that draws the line (the controller under
``-n``, else the only process). Each finished run arrives once as a small dict of facts
(:func:`run_facts`, built where the run was generated, read from the ledger) — under xdist
it travels on the first test report of the run. The ETA is the median wall time of the runs
generated in this session times the runs still to generate, divided by the workers in use.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_skilllift.week.files import GRADES_FILE, OK, RETRY_ON_RERUN, RUN_FILE
from pytest_skilllift.week.ledger import Ledger

if TYPE_CHECKING:
    from os import PathLike

#: A run whose engine call raised (the test failed without a graded run).
CRASHED = "crashed"
#: Statuses counted as "errored" in the line (the retried ones, and a crash); other non-ok
#: statuses are "excluded" (invalid install, budget-capped, no answer).
ERRORED_STATUSES: frozenset[str] = frozenset({*RETRY_ON_RERUN, CRASHED})


def run_facts(week: Ledger, run_id: str, status: str, *, graded: bool, generated_now: bool,
              judged_now: bool) -> dict[str, Any]:
    """The facts of one finished run, as plain data (it crosses the xdist channel).

    Spend counts only what this session paid: generation when the run was generated now,
    the judge when it was judged now. The wall time is kept only for runs generated now
    (a run read back from the ledger takes no time and says nothing about the next one).
    """
    gen_cost = judge_cost = wall_s = None
    if generated_now:
        record = week.load_run(run_id) or {}
        gen_cost = _number(record.get("total_cost_usd"))
        wall_ms = _number(record.get("wall_ms"))
        wall_s = wall_ms / 1000 if wall_ms is not None else None
    if judged_now:
        judge_cost = _read_grades_cost(week, run_id)
    return {"run_id": run_id, "status": status, "graded": graded,
            "generated_now": generated_now, "gen_cost": gen_cost, "judge_cost": judge_cost,
            "wall_s": wall_s}


def _read_grades_cost(week: Ledger, run_id: str) -> float | None:
    import json

    try:
        data = json.loads((week.run_dir(run_id) / GRADES_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return _number(data.get("cost_usd")) if isinstance(data, dict) else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        out = float(value)
    except ValueError:
        return None
    return out if math.isfinite(out) else None


def prompt_name(path: str | PathLike[str]) -> str:
    """A prompt file's ``name`` (its file stem when unreadable: then it has no runs)."""
    import json
    from pathlib import Path

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else Path(path).stem


def finished_in_ledger(week: Ledger, run_ids: Iterable[str]) -> set[str]:
    """Runs the ledger already holds in final form (nothing to generate or judge again):
    they finish at once when their items run, so the ETA does not wait for them."""
    import json

    done = set()
    for run_id in run_ids:
        try:  # a run folder that is a link (WeekLinkError) counts as not done
            run_dir = week.run_dir(run_id)
            record = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        status = record.get("run_status") if isinstance(record, dict) else None
        if status in RETRY_ON_RERUN or not isinstance(status, str):
            continue  # retried on this rerun
        if status != OK or (run_dir / GRADES_FILE).is_file():
            done.add(run_id)
    return done


@dataclass
class Progress:
    """Counts of one session's runs and the line that shows them."""

    total: int = 0
    workers: int = 1
    clock: Callable[[], float] = time.time
    #: Runs of the collection the ledger already held finished (see finished_in_ledger).
    cached: set[str] = field(default_factory=set)
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    started: float = field(default_factory=time.time)
    #: The scripted stand-in answered (demo, dry run): its dollars are simulated, not paid.
    simulated: bool = False

    def set_total(self, run_ids: Iterable[str], cached: set[str]) -> None:
        """The collected runs, and which of them the ledger already finished."""
        ids = set(run_ids)
        self.total = len(ids)
        self.cached = cached & ids

    def add(self, facts: dict[str, Any]) -> bool:
        """Record one finished run; False when it was already counted."""
        run_id = str(facts.get("run_id", ""))
        if not run_id or run_id in self.runs:
            return False
        self.runs[run_id] = facts
        return True

    @property
    def done(self) -> int:
        """Runs finished so far."""
        return len(self.runs)

    @property
    def graded(self) -> int:
        """Finished runs that were graded."""
        return sum(1 for f in self.runs.values() if f.get("graded"))

    @property
    def errored(self) -> int:
        """Finished runs whose status is an error."""
        return sum(1 for f in self.runs.values() if f.get("status") in ERRORED_STATUSES)

    @property
    def excluded(self) -> int:
        """Finished runs excluded from the numbers (neither OK, errored nor not run)."""
        return sum(1 for f in self.runs.values()
                   if f.get("status") != OK and f.get("status") not in ERRORED_STATUSES
                   and not str(f.get("status", "")).startswith("not_run"))

    @property
    def not_run(self) -> int:
        """Runs not started: the spend cap, or the circuit breaker after an outage."""
        return sum(1 for f in self.runs.values()
                   if str(f.get("status", "")).startswith("not_run"))

    @property
    def spent(self) -> float:
        """Dollars spent by the finished runs (generation and judge)."""
        return sum((f.get("gen_cost") or 0.0) + (f.get("judge_cost") or 0.0)
                   for f in self.runs.values())

    def eta_s(self) -> tuple[float, float, int] | None:
        """(seconds left, median run seconds, workers used), or None before any timing."""
        walls = [f["wall_s"] for f in self.runs.values() if f.get("wall_s") is not None]
        if not walls:
            return None
        to_generate = max(0, self.total - self.done - len(self.cached - set(self.runs)))
        median = statistics.median(walls)
        workers = max(1, min(self.workers, to_generate)) if to_generate else 1
        return to_generate * median / workers, median, workers

    def line(self) -> str:
        """``skill-lift: runs 12/48 · graded 10 · errored 1 · spent $3.21 · ETA …``."""
        parts = [f"runs {self.done}/{self.total}", f"graded {self.graded}",
                 f"errored {self.errored}"]
        if self.excluded:
            parts.append(f"excluded {self.excluded}")
        if self.not_run:
            parts.append(f"not run {self.not_run}")
        parts.append(f"simulated ${self.spent:.2f} (nothing paid)" if self.simulated
                     else f"spent ${self.spent:.2f}")
        if self.total and self.done >= self.total:
            parts.append(f"done in {_duration(self.clock() - self.started)}")
        else:
            eta = self.eta_s()
            if eta is None:
                parts.append("ETA after the first run")
            else:
                left, median, workers = eta
                at = time.strftime("%H:%M", time.localtime(self.clock() + left))
                parts.append(f"ETA {at} (~{_duration(left)} left; median {_duration(median)}"
                             f"/run × {workers} worker{'s' if workers > 1 else ''})")
        return "skill-lift: " + " · ".join(parts)


def _duration(seconds: float) -> str:
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"
