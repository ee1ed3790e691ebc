"""``skilllift judge WEEK_DIR``: grade a generated week again, without regenerating a run.

The qdrant/skills SCORING.md keeps judging a separate, resumable step ("re-running skips runs
already graded, so an interrupted judge pass continues without re-grading (or re-paying for)
completed runs; pass --fresh to grade every run from scratch"). This is that step, on our
ledger, through the same code path as ``pytest --skill-lift``: each run is graded by
:meth:`pytest_skilllift.run.engine.WeekRun.grade_generated` under the run's file lock and
written by :class:`pytest_skilllift.week.ledger.Ledger`, so the two can never disagree on what
a graded run is. No agent call is ever made: the runner factory refuses.

The stages, each its own function so another grading path (the Message Batches API) can take
the middle one's place:

1. :func:`plan_regrade` — which runs to grade: every generated run with status ``ok`` and no
   ``grades.json`` (with ``--fresh``: all of them, see :class:`FreshPass`; a run's grades are
   replaced only by a regrade that succeeded, so a judge outage loses none);
2. :func:`grade_direct` — grade them, ``jobs`` at a time;
3. ``skilllift judge`` (:func:`pytest_skilllift.cli.judge.finish`) — rebuild
   ``manifest.csv``/``scores.csv`` and the scorecard.

A different judge model is a different measurement (its grades are not comparable with the
week's): unless ``--fresh`` is given it grades a copy of the week (``--out DIR``), so the
original keeps its judge. The scorecard's provenance names the judge that graded each week.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.judge.protocol import Grader
from pytest_skilllift.model import AgentConfig, PromptSpec, RunSpec
from pytest_skilllift.run.engine import GradedRun, WeekRun
from pytest_skilllift.run.prompts import PromptError
from pytest_skilllift.run.skill_creator import EVALS_NAME, eval_for_regrade
from pytest_skilllift.run.tasks.reader import TASK_TOML, TaskError, load_task
from pytest_skilllift.runners.base import Runner
from pytest_skilllift.week.files import (
    FRESH_MARKER,
    GRADES_FILE,
    GRADING_FILES,
    LOCK_FILE,
    OK,
    RUN_FILE,
    WeekLinkError,
    atomic_write_json,
    copy_entry_nofollow,
    copy_tree_nofollow,
    find_link,
)
from pytest_skilllift.week.guard import NotAWeek, check_week_dir
from pytest_skilllift.week.ledger import Ledger

__all__ = [
    "FRESH_MARKER", "FreshPass", "RegradeError", "RegradePlan", "copy_week",
    "grade_direct", "plan_regrade", "same_judge", "week_judge_models",
]

#: Per-run files ``--out`` does not copy: the grading's, and the run's lock.
NOT_COPIED = GRADING_FILES | {LOCK_FILE}


class RegradeError(Exception):
    """The regrade cannot start; the message names the problem and the way out."""


# ---------------------------------------------------------------------------------------------
# What the week was graded by


def week_judge_models(week_dir: Path) -> Counter[str]:
    """How many runs each judge model graded (from the runs' ``grades.json``)."""
    counts: Counter[str] = Counter()
    for path in Path(week_dir).glob(f"*/{GRADES_FILE}"):
        try:
            model = json.loads(path.read_text(encoding="utf-8")).get("judge_model")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(model, str) and model:
            counts[model] += 1
    return counts


def same_judge(a: str, b: str) -> bool:
    """Whether two judge model ids name the same model (a dated snapshot extends its alias)."""
    return a.startswith(b) or b.startswith(a)


# ---------------------------------------------------------------------------------------------
# Plan


@dataclass
class RegradePlan:
    """The runs to grade, and what is left as it is (with the reason)."""

    week_dir: Path
    specs: list[RunSpec] = field(default_factory=list)
    #: Runs already graded and left as they are.
    kept: int = 0
    #: Runs that are not gradeable (dropped at generation: invalid, errored, …).
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: Runs that should be graded but whose prompt file cannot be read.
    unreadable: list[tuple[str, str]] = field(default_factory=list)


def _prompt_path(record: dict[str, Any], prompts_dir: Path | None) -> Path:
    recorded = Path(str(record.get("prompt_path") or ""))
    name = recorded.name if recorded.name else f"{record.get('prompt', '')}.json"
    if prompts_dir is not None:
        candidate = prompts_dir / name
        if candidate.is_file():
            return candidate
    return recorded


def spec_from_record(record: dict[str, Any], prompts_dir: Path | None = None) -> RunSpec:
    """The run's spec, rebuilt from its ``run.json`` and its prompt file (current rubric).

    Raises :class:`RegradeError` when the prompt file cannot be read.
    """
    from pytest_skilllift.judge.calibrate import CalibrationError, read_prompt

    path = _prompt_path(record, prompts_dir)
    if path.name == TASK_TOML:  # a Harbor task: its rubric.json is what the judge grades
        try:
            # The skills root matters only to a task naming a family of it; its error says so.
            return _run_spec(record, load_task(path.parent, path.parent / "skills"))
        except TaskError as err:
            raise RegradeError(str(err)) from None
    if path.name == EVALS_NAME:  # an Anthropic skill-creator evals.json, collected as is
        try:
            spec = eval_for_regrade(path, str(record["prompt"]),
                                    str(record.get("skill_leaf") or ""))
        except PromptError as err:
            raise RegradeError(str(err)) from None
        return _run_spec(record, spec)
    try:
        prompt_text, items = read_prompt(path)
    except CalibrationError as err:
        hint = "" if prompts_dir else " (pass --prompts DIR if the prompt files moved)"
        raise RegradeError(f"{err}{hint}") from None
    spec = PromptSpec(path=path, name=str(record["prompt"]), product_area="",
                      prompt=prompt_text, rubric=items,
                      skill_path=str(record.get("skill_leaf") or ""))
    return _run_spec(record, spec)


def _run_spec(record: dict[str, Any], spec: PromptSpec) -> RunSpec:
    return RunSpec(prompt=spec, model_label=str(record["model"]),
                   model_id=str(record.get("model_id") or record["model"]),
                   condition=str(record["condition"]), rep=int(record["rep"]),
                   run_id=str(record["run_id"]))


def plan_regrade(week_dir: Path, *, fresh: bool = False,
                 prompts_dir: Path | None = None) -> RegradePlan:
    """Which generated runs need grading (all ``ok`` runs with ``fresh``, else the ungraded)."""
    week = Ledger(Path(week_dir))
    plan = RegradePlan(week_dir=week.root)
    for record in week.run_records():
        run_id = str(record["run_id"])
        status = record.get("run_status", "")
        if status != OK:
            plan.skipped.append((run_id, f"not gradeable (run status {status or 'unknown'})"))
            continue
        if not fresh and week.load_grades(run_id) is not None:
            plan.kept += 1
            continue
        try:
            spec = spec_from_record(record, prompts_dir)
        except RegradeError as err:
            plan.unreadable.append((run_id, str(err)))
            continue
        if spec.prompt.task is not None and not spec.prompt.rubric:
            plan.skipped.append((run_id, "a task without rubric.json: its verifier grades it"))
            continue
        plan.specs.append(spec)
    return plan


class FreshPass:
    """``--fresh`` made resumable and safe: the pass has an id (kept in :data:`FRESH_MARKER`)
    that the grades it writes carry (``regrade_pass``); the engine regrades every planned run
    whose grades are not this pass's and replaces them only when the new grading succeeded —
    a failing judge (401, outage) leaves the week's grades as they were. A pass interrupted
    and started again with ``--fresh`` keeps what it already regraded instead of paying for
    it twice. The marker is removed once every planned run is graded."""

    def __init__(self, week_dir: Path, judge_model: str) -> None:
        self.path = Path(week_dir) / FRESH_MARKER
        self._lock = threading.Lock()
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        resumed = isinstance(data, dict) and same_judge(str(data.get("judge_model", "")),
                                                        judge_model)
        self.resumed = bool(resumed and data.get("done") is not None)
        self.done: set[str] = set(data.get("done", [])) if self.resumed else set()
        self.judge_model = judge_model
        self.pass_id = str(data.get("pass_id") or "") if self.resumed else ""
        if not self.pass_id:
            import uuid

            self.pass_id = uuid.uuid4().hex

    def start(self, plan: RegradePlan) -> None:
        """Drop the runs this pass already graded from the plan (nothing is discarded: the
        others keep their grades until their regrade succeeds)."""
        week = Ledger(plan.week_dir)
        keep = [s for s in plan.specs if s.run_id in self.done
                and (week.load_grading(s.run_id) or {}).get("regrade_pass") == self.pass_id]
        plan.kept += len(keep)
        plan.specs = [s for s in plan.specs if s not in keep]
        self._write()

    def graded(self, run_id: str) -> None:
        """Record ``run_id`` as graded in this pass (written at once)."""
        with self._lock:
            self.done.add(run_id)
            self._write()

    def finish(self, complete: bool) -> None:
        """End the pass: its record is removed once the pass is complete."""
        if complete:
            self.path.unlink(missing_ok=True)

    def _write(self) -> None:
        atomic_write_json(self.path, {"judge_model": self.judge_model,
                                      "pass_id": self.pass_id, "done": sorted(self.done)})


def copy_week(src: Path, dst: Path) -> int:
    """Copy the generated runs of ``src`` into ``dst`` without their grading; returns how many
    run directories were copied (run directories already in ``dst`` are left: a resumed copy).
    """
    if src.resolve() == dst.resolve():
        raise RegradeError(f"--out {dst} is the week itself; name another directory")
    try:
        check_week_dir(dst, "--out")
    except NotAWeek as exc:
        raise RegradeError(str(exc)) from None
    run_dirs = Ledger(src).run_dirs()
    for run_dir in run_dirs:  # links are never copied as their targets: refuse them first
        link = find_link(run_dir)
        if link is not None:
            raise RegradeError(f"{WeekLinkError(link, 'and is never copied')}; nothing "
                               f"was copied into {dst}")
    copied = 0
    for run_dir in run_dirs:
        target = dst / run_dir.name
        if (target / RUN_FILE).is_file():
            continue
        copy_tree_nofollow(run_dir, target, skip=frozenset(NOT_COPIED) | {RUN_FILE})
        # run.json last: a copy interrupted half-way is redone, never taken for complete.
        copy_entry_nofollow(run_dir / RUN_FILE, target / RUN_FILE)
        copied += 1
    return copied


# ---------------------------------------------------------------------------------------------
# Grade


def _no_runner() -> Runner:
    raise RuntimeError("skilllift judge never generates a run; a run without run.json is "
                       "not generated (run pytest --skill-lift first)")


def grade_direct(plan: RegradePlan, grader: Grader, *, jobs: int = 4,
                 on_graded: Callable[[GradedRun], None] | None = None,
                 regrade_pass: str = "") -> list[GradedRun]:
    """Grade the planned runs through the engine, ``jobs`` at a time (one API call each per
    judge sample). Returns the graded runs in completion order. ``regrade_pass``: a
    ``--fresh`` pass's id (runs graded otherwise are regraded; see :class:`FreshPass`)."""
    weekrun = WeekRun(Ledger(plan.week_dir),
                      AgentConfig(claude_path="", skills_root=Path(".")), _no_runner,
                      lambda: grader)
    weekrun.regrade_pass = regrade_pass
    results: list[GradedRun] = []
    pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="skilllift-judge")
    try:
        futures = [pool.submit(weekrun.grade_generated, spec) for spec in plan.specs]
        for future in as_completed(futures):
            graded = future.result()
            results.append(graded)
            if on_graded is not None:
                on_graded(graded)
    except BaseException:
        # Ctrl-C / SIGTERM: no queued run starts its judge call (the calls under way end and
        # save their grades; the rest stay ungraded for the next command).
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        weekrun.close()
    return results
