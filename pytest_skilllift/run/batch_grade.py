"""Batch judging of a week: generate every run first, then grade them in Message Batches.

Two steps, each safe to run from several processes at once (pytest-xdist workers) and to
interrupt:

1. :func:`generate_first` — generate every run that the week does not hold yet, without
   grading. Workers share the work through the runs' file locks: a run another process is
   generating is skipped on the first pass and waited for on the second, so no run is
   generated twice and no worker idles while another has work.
2. :func:`grade_in_batches` — under the week's batch lock, every generated, ``ok``, ungraded
   run becomes one request (``custom_id`` = run id) to :class:`~pytest_skilllift.judge.batch.
   BatchJudge`; the results are written through the engine (:meth:`WeekRun.result` with a
   :class:`BatchResults` grader), so a batch-graded run is the same files as a directly graded
   one. A process that waited for the lock finds the runs graded and sends nothing.

After that the rubric items of each run read their verdicts from the week as usual. No pytest.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pytest_skilllift.judge.batch import BatchJudge, custom_id
from pytest_skilllift.judge.protocol import build_judge_request
from pytest_skilllift.model import JudgeResult, RubricItem, RunSpec
from pytest_skilllift.run.engine import NotStarted, WeekRun
from pytest_skilllift.week.files import LOCK_FILE, OK
from pytest_skilllift.week.ledger import Ledger


class BatchResults:
    """The engine's grader in batch mode: hands each run the result its batch returned.

    It never calls the API: a run without a batch result (its request failed every attempt,
    or the batch step did not reach it) is ungraded with the reason, and graded again by the
    next session — never scored as zero."""

    def __init__(self, week: Ledger, model: str = "") -> None:
        self.week = week
        self.model = model
        self.by_run: dict[str, JudgeResult] = {}

    def grade(self, prompt_text: str, answer: str, items: Sequence[RubricItem],
              seed: int | str) -> JudgeResult:
        got = self.by_run.get(str(seed))
        if got is not None:
            return got
        # Another worker ran the batch step: keep the reason it recorded.
        why = self.week.judge_error(str(seed)) or (
            "not graded: no Message Batch result for this run (the next session with "
            "--skill-lift-judge-batch resumes its batch or submits it)")
        return JudgeResult(verdicts=(), cost_usd=0.0, model=self.model, ungraded=tuple(items),
                           error=why)


def _busy(weekrun: WeekRun, run_id: str) -> bool:
    """Whether another process holds the run's lock right now (a probe; released at once)."""
    run_dir = weekrun.week.run_dir(run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / LOCK_FILE, "w") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return False


@dataclass
class GenerationPhase:
    """What :func:`generate_first` did in this process."""

    generated: int = 0
    already: int = 0
    #: run id → why it did not start (the spend cap).
    not_started: dict[str, str] = field(default_factory=dict)


def generate_first(weekrun: WeekRun, specs: Sequence[RunSpec], *, offset: int = 0,
                   progress: Callable[[RunSpec, str], None] | None = None) -> GenerationPhase:
    """Generate every run of ``specs`` the week does not hold yet (no grading).

    ``offset`` rotates the order (an xdist worker's index), so workers start apart."""
    out = GenerationPhase()
    order = list(specs)
    if order:
        k = offset % len(order)
        order = order[k:] + order[:k]
    deferred: list[RunSpec] = []

    def one(spec: RunSpec) -> None:
        had = weekrun.week.load_run(spec.run_id) is not None
        try:
            record = weekrun.generate(spec)
        except NotStarted as why:
            out.not_started[spec.run_id] = str(why)
            if progress:
                progress(spec, "not started")
            return
        if had and record is not None:
            out.already += 1
        else:
            out.generated += 1
            if progress:
                progress(spec, str(record.get("run_status", "")))

    for spec in order:
        if _busy(weekrun, spec.run_id):
            deferred.append(spec)  # another worker is on it: come back when it is done
        else:
            one(spec)
    for spec in deferred:
        one(spec)  # blocks on the run's lock, then finds it generated
    return out


@dataclass
class BatchPhase:
    """What :func:`grade_in_batches` did in this process."""

    requested: int = 0
    graded: int = 0
    #: run id → why it stays ungraded.
    ungraded: dict[str, str] = field(default_factory=dict)
    submitted: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)


def grade_in_batches(weekrun: WeekRun, specs: Sequence[RunSpec], judge: BatchJudge,
                     results: BatchResults) -> BatchPhase:
    """Grade every generated, ``ok``, ungraded run of ``specs`` through Message Batches and
    write the grades through the engine. Runs the week does not hold are left alone."""
    out = BatchPhase()
    with judge.locked():
        todo: list[RunSpec] = []
        requests = []
        for spec in specs:
            record = weekrun.week.load_run(spec.run_id)
            if (record is None or record.get("run_status") != OK
                    or weekrun.week.load_grades(spec.run_id) is not None):
                continue
            answer = str(record.get("final_answer") or "")
            if not answer.strip() or not spec.prompt.rubric:
                continue  # nothing to send; the engine records why when the item asks
            request = build_judge_request(spec.prompt.prompt, answer, spec.prompt.rubric,
                                          spec.run_id, reply_mode=judge.reply_mode)
            requests.append(judge.request(custom_id(spec.run_id), request))
            todo.append(spec)
        out.requested = len(requests)
        if requests:
            got = judge.grade(requests)
            out.submitted, out.resumed = list(judge.submitted), list(judge.resumed)
            out.retried = list(judge.retried)
            for spec, req in zip(todo, requests, strict=True):
                result = got.get(req.custom_id)
                if result is not None:
                    results.by_run[spec.run_id] = result
                with contextlib.suppress(NotStarted):
                    graded = weekrun.result(spec)
                    if graded.judge_error:
                        out.ungraded[spec.run_id] = graded.judge_error
                    else:
                        out.graded += 1
    return out
