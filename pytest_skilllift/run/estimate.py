"""The price before the run: what a session will make, and an estimate of its $ and time.

``pytest --skill-lift --collect-only`` and ``skilllift plan`` print it; a real session writes
it into the week (``estimate.json``) before its first run, and the scorecard's Cost section
puts it beside what the week spent. Nothing here calls an API: the estimate reads the week
directory, its earlier sibling weeks and the price tables.

**The runs.** Each selected run is one of: *new* (the week does not have it), *resumed* (the
week has it errored or timed out: generated again), *to grade* (generated, not yet graded —
or regraded with ``--skill-lift-fresh``: a judge call only), *reused* (a no-skill run taken
from ``--skill-lift-baseline-from``'s week: neither generated nor judged here) or *done*.

**Per (label, arm)** the $ and seconds of a run come from:

- this repository's previous weeks when they hold runs of the same label and arm (the week
  directories beside this one, the newest :data:`HISTORY_WEEKS`): the mean generation $,
  judge $ and duration of a run, and their sample standard deviation ``s`` over ``m`` runs.
  ``n`` runs to make then cost ``n·mean`` with a prediction interval for a sum of ``n`` new
  runs, ``± 2·s·√(n + n²/m)`` (the runs' own spread plus the mean's uncertainty);
- else the price table (``judge.client.PRICES`` for Claude models, ``PRICES_PER_MTOK`` for the
  other agents' models) times the stated default token counts below, with the range
  ×:data:`FALLBACK_RANGE` (a model outside the tables: $ unknown, named).

**Wall time** is the runs' summed duration over the runs that can be in flight at once:
``min(workers, the concurrency cap, runs to generate)``. The total range adds the cells'
ranges (not in quadrature: one week's cells share the API's speed and the model's mood).
No pytest here.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.intervals import EPS
from pytest_skilllift.model import NO_SKILL, NO_SKILL_B, RunSpec, arm_of, split_agent
from pytest_skilllift.week.files import (
    ESTIMATE_FILE,
    GRADES_FILE,
    JUDGE_COST_FILE,
    MANIFEST_CSV,
    RETRY_ON_RERUN,
    RUN_FILE,
    atomic_write_json,
    utc_stamp,
)

#: The newest previous weeks read for history.
HISTORY_WEEKS = 4
#: Width of a history range, in standard deviations (≈95% for a sum of many runs).
Z = 2.0
#: Without history: the range around the price-table figure (low ×, high ×).
FALLBACK_RANGE = (0.5, 2.5)
#: Default tokens of one agent run without history, per arm kind: ``(input, output)``,
#: input counted at the input price (cache reads and writes folded in). Calibrated on the
#: real qdrant/skills week 20260808 (haiku: $0.0102 a no-skill run, $0.0181 a with-skill run
#: — about 8k / 14k input-equivalent and 0.5k / 0.8k output tokens at $1/$5 per MTok).
DEFAULT_TOKENS = {"no-skill": (8_000, 500), "skill": (14_000, 800)}
#: Default seconds of one run without history (the same week's haiku runs: 11.8 s / 16.0 s).
DEFAULT_RUN_S = {"no-skill": 12.0, "skill": 16.0}
#: Default tokens of one judge call: the shared part (system prompt, task, rubric; measured
#: on the real week's shape, docs/ci.md) plus a typical answer, and the verdicts.
DEFAULT_JUDGE_TOKENS = (2_500, 600)

NEW, RESUMED, TO_GRADE, REUSED, DONE = "new", "resumed", "to grade", "reused", "done"
STATES = (NEW, RESUMED, TO_GRADE, REUSED, DONE)


@dataclass(frozen=True)
class Planned:
    """One selected run and what this session will do with it."""

    run_id: str
    label: str
    model_id: str
    condition: str
    state: str
    #: Whether a judge grades it: a prompt, a task with a rubric.json; a task without one is
    #: graded by its verifier alone (no judge call to price).
    has_rubric: bool = True

    @property
    def generates(self) -> bool:
        """Whether the run's answer is to be generated (new, or resumed)."""
        return self.state in (NEW, RESUMED)

    @property
    def judged(self) -> bool:
        """Whether the run is to be graded (it has a rubric and no grades yet)."""
        return self.has_rubric and self.state in (NEW, RESUMED, TO_GRADE)


def _arm_kind(condition: str) -> str:
    return "no-skill" if arm_of(condition) in (NO_SKILL, NO_SKILL_B) else "skill"


def plan_runs(specs: Iterable[RunSpec], week_dir: Path, *, fresh: bool = False,
              baseline_from: str = "") -> list[Planned]:
    """What the session does with each selected run, read from the week directory only.

    With ``baseline_from`` a no-skill run the source week has is counted *reused* (the
    session's own plan, decided against week.json when it starts, may still generate one
    whose inputs changed: the estimate then runs low by that run)."""
    import json

    out = []
    source = Path(baseline_from) if baseline_from else None
    for spec in specs:
        run_dir = Path(week_dir) / spec.run_id
        state = NEW
        rubric = bool(spec.prompt.rubric)  # a task without rubric.json: no judge call
        try:
            record = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            record = None
        if isinstance(record, dict):
            if record.get("run_status") in RETRY_ON_RERUN:
                state = RESUMED
            elif fresh or not (run_dir / GRADES_FILE).exists():
                state = TO_GRADE if record.get("run_status") == "ok" and rubric else DONE
            else:
                state = DONE
        elif source is not None and spec.condition == NO_SKILL:
            old = spec.run_id.replace(Path(week_dir).name, source.name)
            if (source / old / RUN_FILE).exists():
                state = REUSED
        out.append(Planned(spec.run_id, spec.model_label, spec.model_id, spec.condition,
                           state, rubric))
    return out


# ---------------------------------------------------------------------------------------------
# history


@dataclass
class Samples:
    """Per-run figures of one (label, arm) in the previous weeks."""

    gen_usd: list[float] = field(default_factory=list)
    judge_usd: list[float] = field(default_factory=list)
    run_s: list[float] = field(default_factory=list)
    weeks: set[str] = field(default_factory=set)


def _float(value: str | None) -> float | None:
    try:
        x = float(value or "")
    except ValueError:
        return None
    return x if math.isfinite(x) and x >= 0 else None


def previous_weeks(week_dir: Path, most: int = HISTORY_WEEKS) -> list[Path]:
    """The week directories beside ``week_dir`` that sort before it and hold a manifest,
    newest last (the ``most`` newest)."""
    week_dir = Path(week_dir)
    parent = week_dir.parent
    try:
        found = sorted(p for p in parent.iterdir()
                       if p.name < week_dir.name and not p.is_symlink() and p.is_dir()
                       and (p / MANIFEST_CSV).is_file())
    except OSError:
        return []
    return found[-most:] if most else found


def read_history(weeks: Sequence[Path]) -> dict[tuple[str, str], Samples]:
    """(label, condition) → the completed runs' $ and seconds in ``weeks`` (runs reused from
    another week, and runs without a cost, are left out)."""
    out: dict[tuple[str, str], Samples] = {}
    for week in weeks:
        try:
            with (week / MANIFEST_CSV).open(newline="", encoding="utf-8") as fh:
                rows = list(csv.DictReader(fh))
        except (OSError, csv.Error, UnicodeDecodeError):
            continue
        for row in rows:
            if (row.get("run_status") or "ok") != "ok" or (row.get("baseline_from") or ""):
                continue
            cost = _float(row.get("total_cost_usd"))
            if cost is None:
                continue
            s = out.setdefault((row.get("model") or "", arm_of(row.get("condition") or "")),
                               Samples())
            s.weeks.add(week.name)
            s.gen_usd.append(cost)
            secs = _float(row.get("wall_ms")) or _float(row.get("duration_ms"))
            if secs is not None:
                s.run_s.append(secs / 1000)
            run_id = row.get("run_id") or ""
            if run_id and "/" not in run_id and ".." not in run_id:
                try:
                    judge = _float((week / run_id / JUDGE_COST_FILE).read_text().strip())
                except OSError:
                    judge = None
                if judge is not None:
                    s.judge_usd.append(judge)
    return out


# ---------------------------------------------------------------------------------------------
# the estimate


@dataclass(frozen=True)
class Range:
    """An estimate and its range (None: unknown)."""

    estimate: float | None
    low: float | None
    high: float | None

    def __add__(self, other: Range) -> Range:
        def add(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None else a + b
        return Range(add(self.estimate, other.estimate), add(self.low, other.low),
                     add(self.high, other.high))

    def to_json(self) -> dict[str, float | None]:
        """The range as estimate.json stores it (rounded)."""
        return {"estimate": _r(self.estimate), "low": _r(self.low), "high": _r(self.high)}

    def contains(self, x: float) -> bool | None:
        """Whether ``x`` falls in the range (None when it has no bounds)."""
        if self.low is None or self.high is None:
            return None
        return self.low - EPS <= x <= self.high + EPS


ZERO = Range(0.0, 0.0, 0.0)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def _from_samples(xs: list[float], n: int) -> tuple[Range, float, float] | None:
    """``n`` runs' sum from ``xs`` (≥ 2 samples): the range, the mean and the spread."""
    m = len(xs)
    if m < 2 or n == 0:
        return None
    mean = sum(xs) / m
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (m - 1))
    half = Z * sd * math.sqrt(n + n * n / m)
    return Range(n * mean, max(0.0, n * mean - half), n * mean + half), mean, sd


def _fallback(per_run: float | None, n: int) -> Range:
    if per_run is None:
        return Range(None, None, None)
    lo, hi = FALLBACK_RANGE
    return Range(n * per_run, n * per_run * lo, n * per_run * hi)


def table_run_usd(model_id: str, condition: str) -> float | None:
    """One run's $ from the price table and :data:`DEFAULT_TOKENS` (None: not in a table)."""
    from pytest_skilllift.judge.client import estimate_cost
    from pytest_skilllift.trace.agent_streams import price

    _agent, model = split_agent(model_id)
    tokens_in, tokens_out = DEFAULT_TOKENS[_arm_kind(condition)]
    listed = price(model, tokens_in, tokens_out)
    if listed is not None:
        return listed
    family = next((f for f in ("opus", "sonnet", "haiku") if f in model.lower()), None)
    if family is None:
        return None  # not a Claude model, and not in the other agents' table
    if "claude" not in model.lower():  # a CLI alias ("sonnet"): the newest of its family
        model = f"claude-{family}-4-5"
    return estimate_cost(model, {"input_tokens": tokens_in, "output_tokens": tokens_out})[0]


def table_judge_usd(judge_model: str) -> float:
    """One judge call's $ from the price table and :data:`DEFAULT_JUDGE_TOKENS`."""
    from pytest_skilllift.judge.client import estimate_cost

    tokens_in, tokens_out = DEFAULT_JUDGE_TOKENS
    return estimate_cost(judge_model, {"input_tokens": tokens_in,
                                       "output_tokens": tokens_out})[0]


@dataclass
class Cell:
    """One (label, arm)'s share of the estimate."""

    label: str
    agent: str
    model: str
    condition: str
    counts: dict[str, int]
    source: str  # "history (N runs, weeks …)" | "price table" | "no price"
    generation: Range
    judge: Range
    run_s: Range
    mean_usd: float | None = None
    sd_usd: float | None = None
    mean_s: float | None = None
    sd_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The cell as estimate.json stores it."""
        return {"label": self.label, "agent": self.agent, "model": self.model,
                "condition": self.condition, "runs": self.counts, "source": self.source,
                "generation_usd": self.generation.to_json(), "judge_usd": self.judge.to_json(),
                "run_s": self.run_s.to_json(), "mean_usd": _r(self.mean_usd),
                "sd_usd": _r(self.sd_usd), "mean_s": _r(self.mean_s), "sd_s": _r(self.sd_s)}


@dataclass
class Estimate:
    """The session's plan and price, before any run."""

    counts: dict[str, int]
    judge_calls: int
    judge_samples: int
    cells: list[Cell]
    generation: Range
    judge: Range
    wall_s: Range
    parallel: int
    workers: int
    concurrency: int
    cap_usd: float | None
    spent_usd: float
    history_weeks: list[str]
    made_utc: str = ""
    #: What the week had spent when the estimate was made (generation, judge): the actual
    #: the scorecard compares with is the spend since.
    spent_split: tuple[float, float] = (0.0, 0.0)

    @property
    def total(self) -> Range:
        """Generation plus judge."""
        return self.generation + self.judge

    def to_json(self) -> dict[str, Any]:
        """The estimate as estimate.json stores it."""
        return {"made_utc": self.made_utc, "runs": self.counts,
                "judge_calls": self.judge_calls, "judge_samples": self.judge_samples,
                "generation_usd": self.generation.to_json(),
                "judge_usd": self.judge.to_json(), "total_usd": self.total.to_json(),
                "wall_s": self.wall_s.to_json(), "parallel": self.parallel,
                "workers": self.workers, "concurrency": self.concurrency,
                "cap_usd": self.cap_usd, "spent_before_usd": _r(self.spent_usd),
                "spent_before_generation_usd": _r(self.spent_split[0]),
                "spent_before_judge_usd": _r(self.spent_split[1]),
                "history_weeks": self.history_weeks,
                "cells": [c.to_json() for c in self.cells]}


def estimate(planned: Sequence[Planned], history: dict[tuple[str, str], Samples], *,
             judge_model: str, judge_samples: int, workers: int, concurrency: int,
             cap_usd: float | None = None, spent: tuple[float, float] = (0.0, 0.0),
             history_weeks: Sequence[str] = ()) -> Estimate:
    """The estimate of ``planned``'s $ and time (see the module docstring for the rules)."""
    counts = {s: sum(1 for p in planned if p.state == s) for s in STATES}
    groups: dict[tuple[str, str, str], list[Planned]] = {}
    for p in planned:
        groups.setdefault((p.label, p.model_id, arm_of(p.condition)), []).append(p)
    judge_call_usd = table_judge_usd(judge_model) * judge_samples
    cells = []
    gen_total = judge_total = time_total = ZERO
    for (label, model_id, arm), runs in groups.items():
        gen_n = sum(1 for p in runs if p.generates)
        judge_n = sum(1 for p in runs if p.judged)
        agent, model = split_agent(model_id)
        hist = history.get((label, arm))
        got = _from_samples(hist.gen_usd, gen_n) if hist else None
        mean_usd = sd_usd = mean_s = sd_s = None
        if gen_n == 0:
            gen, source = ZERO, "nothing to generate"
        elif got is not None and hist is not None:
            gen, mean_usd, sd_usd = got
            source = (f"history ({len(hist.gen_usd)} runs of {', '.join(sorted(hist.weeks))})")
        else:
            per_run = table_run_usd(model_id, arm)
            gen = _fallback(per_run, gen_n)
            source = "price table" if per_run is not None else f"no price for {model!r}"
        judged_hist = _from_samples(hist.judge_usd, judge_n) if hist else None
        judge = (judged_hist[0] if judged_hist else _fallback(judge_call_usd, judge_n)
                 if judge_n else ZERO)
        timed = _from_samples(hist.run_s, gen_n) if hist else None
        if timed is not None:
            run_s, mean_s, sd_s = timed
        else:
            run_s = _fallback(DEFAULT_RUN_S[_arm_kind(arm)], gen_n) if gen_n else ZERO
        cells.append(Cell(label, agent, model, runs[0].condition,
                          {s: sum(1 for p in runs if p.state == s) for s in STATES},
                          source, gen, judge, run_s, mean_usd, sd_usd, mean_s, sd_s))
        gen_total, judge_total, time_total = gen_total + gen, judge_total + judge, \
            time_total + run_s
    to_generate = counts[NEW] + counts[RESUMED]
    parallel = max(1, min(workers, concurrency, to_generate or 1))
    wall = Range(*(None if x is None else x / parallel for x in (
        time_total.estimate, time_total.low, time_total.high)))
    return Estimate(counts, (counts[NEW] + counts[RESUMED] + counts[TO_GRADE]) * judge_samples,
                    judge_samples, cells, gen_total, judge_total, wall, parallel, workers,
                    concurrency, cap_usd, sum(spent), list(history_weeks), utc_stamp(),
                    spent)


# ---------------------------------------------------------------------------------------------
# words


def _usd(r: Range) -> str:
    if r.estimate is None:
        return "unknown"
    return f"${r.estimate:.2f} (${r.low:.2f}–${r.high:.2f})"


def _mins(r: Range) -> str:
    if r.estimate is None or r.low is None or r.high is None:
        return "unknown"
    return f"{r.estimate / 60:.1f} min ({r.low / 60:.1f}–{r.high / 60:.1f})"


def lines(est: Estimate, *, simulated: bool = False) -> list[str]:
    """The plan and its price, for the terminal (``--collect-only``, ``skilllift plan``).
    ``simulated`` (the demo, a dry run): the scripted stand-in answers, so the week's dollars
    are simulated and the estimate is what the runs would cost for real; both are said."""
    c = est.counts
    out = [f"skill-lift plan: {c[NEW] + c[RESUMED]} run(s) to make ({c[NEW]} new, "
           f"{c[RESUMED]} resumed), {c[TO_GRADE]} to grade only, {c[REUSED]} reused from a "
           f"baseline week, {c[DONE]} already done; {est.judge_calls} judge call(s) "
           f"({est.judge_samples} per run; a contested item adds one)"]
    for cell in est.cells:
        made = cell.counts[NEW] + cell.counts[RESUMED]
        spread = (f", ${cell.mean_usd:.4f} ± {cell.sd_usd:.4f} a run"
                  if cell.mean_usd is not None and cell.sd_usd is not None else "")
        out.append(f"  {cell.label} ({cell.agent}: {cell.model}) {cell.condition}: "
                   f"{made} to make — generation {_usd(cell.generation)}, judge "
                   f"{_usd(cell.judge)} [{cell.source}{spread}]")
    out.append(f"estimate: generation {_usd(est.generation)} + judge {_usd(est.judge)} = "
               f"{_usd(est.total)}; wall time {_mins(est.wall_s)} at {est.parallel} run(s) in "
               f"flight (workers {est.workers}, concurrency cap {est.concurrency})")
    if est.cap_usd is not None:
        high = est.total.high
        room = est.cap_usd - est.spent_usd
        verdict = ("the estimate's high end fits" if high is not None and high <= room else
                   "the cap may stop runs before the week is done (they are reported 'not "
                   "run: spend cap')")
        out.append(f"spend cap: ${est.cap_usd:.2f}, of which the week has spent "
                   f"${est.spent_usd:.2f}: {verdict}")
    else:
        out.append(f"spend cap: none (--skill-lift-max-spend); the week has spent "
                   f"${est.spent_usd:.2f}")
    if simulated:
        out = [line.replace("the week has spent", "the week has simulated (nothing paid)")
               for line in out]
        out.insert(1, "  (simulated: the scripted stand-in answers these runs and nothing is "
                      "paid; the prices below are what they would cost for real)")
    return out


# ---------------------------------------------------------------------------------------------
# the week's record


def record(week_dir: Path, est: Estimate) -> None:
    """Add this session's estimate to ``<week>/estimate.json`` (a session that makes nothing
    adds nothing). The week's estimate is the sum of its sessions' (each estimates only
    what it makes)."""
    if not any(c.judge.estimate or c.generation.estimate for c in est.cells):
        return
    import json

    path = Path(week_dir) / ESTIMATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        sessions = list(data["sessions"]) if isinstance(data, dict) else []
    except (OSError, ValueError, KeyError, TypeError):
        sessions = []
    sessions.append(est.to_json())
    atomic_write_json(path, {"sessions": sessions})
