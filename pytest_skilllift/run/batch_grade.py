"""Batch judging of a week: generate every run first, then grade them in batches (each
judge through its provider's batch API: Message Batches, OpenAI's Batch API, Gemini's batch
mode; a panel's judges at once).

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

import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pytest_skilllift.judge.batch import BatchJudge, custom_id
from pytest_skilllift.judge.mask import MASK, leak_pattern
from pytest_skilllift.judge.panel import PanelCache, combine_panel, fingerprint, panel_name
from pytest_skilllift.judge.protocol import build_judge_request
from pytest_skilllift.judge.samples import (
    TIE_BREAK_SEED,
    combine_samples,
    sample_seed,
    tied_items,
)
from pytest_skilllift.model import AgentConfig, JudgeResult, RubricItem, RunSpec
from pytest_skilllift.run.engine import GradedRun, NotStarted, WeekRun
from pytest_skilllift.run.skill_creator import judge_prompt_text
from pytest_skilllift.runners.base import Runner
from pytest_skilllift.week.files import LOCK_FILE, OK, lock_held
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
        """The batch's result for the run ``seed`` names (a judge error when the batch has none)."""
        got = self.by_run.get(str(seed))
        if got is not None:
            return got
        # Another worker ran the batch step: keep the reason it recorded.
        why = self.week.judge_error(str(seed)) or (
            "not graded: no batch result for this run (the next session with "
            "--skill-lift-judge-batch resumes its batch or submits it)")
        return JudgeResult(verdicts=(), cost_usd=0.0, model=self.model, ungraded=tuple(items),
                           error=why)


def _busy(weekrun: WeekRun, run_id: str) -> bool:
    """Whether another process holds the run's lock right now (a probe; released at once)."""
    return lock_held(weekrun.week.run_dir(run_id) / LOCK_FILE)


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
    #: Provider files deleted once their batch's results were read, and those that could
    #: not be (file id → why): the batch line counts them.
    deleted: list[str] = field(default_factory=list)
    undeleted: dict[str, str] = field(default_factory=dict)
    #: Every run this step wrote, in ``specs`` order.
    runs: list[GradedRun] = field(default_factory=list)

    def took(self, judge: BatchJudge | BatchPhase) -> None:
        """Add what a judge's last pass (or another phase) did."""
        self.submitted += judge.submitted
        self.resumed += judge.resumed
        self.retried += judge.retried
        self.deleted += judge.deleted
        self.undeleted.update(judge.undeleted)


#: What batch judging grades with: one batch judge, or a panel's ``(name, judge)`` pairs
#: (``--skill-lift-judges``: each judge through its own provider's batch API).
BatchJudges = BatchJudge | Sequence[tuple[str, BatchJudge]]


def panel_of(judge: BatchJudges) -> list[tuple[str, BatchJudge]]:
    """``judge`` as ``(name, judge)`` pairs (one pair for a single judge)."""
    return [(judge.model, judge)] if isinstance(judge, BatchJudge) else list(judge)


def grade_in_batches(weekrun: WeekRun, specs: Sequence[RunSpec], judge: BatchJudges,
                     results: BatchResults, *, samples: int = 1,
                     families: Sequence[str] = (), mask: bool = True,
                     on_graded: Callable[[GradedRun], None] | None = None,
                     cache: PanelCache | None = None,
                     evidence_policy: str = "reject") -> BatchPhase:
    """Grade every generated, ``ok``, ungraded run of ``specs`` through batches and write
    the grades through the engine. Runs the week does not hold are left alone.

    With ``samples`` > 1 each run is sent ``samples`` times (``custom_id`` = run id, then
    ``<run id>__s<k>``, each with its own shuffle, as :class:`~pytest_skilllift.judge.samples.
    SampledJudge` does); items whose samples split evenly get one tie-break request per run
    (``<run id>__tie``) in a second batch; the votes are combined the same way.

    A panel (``judge`` as ``(name, judge)`` pairs sharing one batch store) sends each judge's
    requests through its own provider's batch API, the judges at once (one thread each), and
    combines each run's results as :class:`~pytest_skilllift.judge.panel.PanelJudge` does
    (majority, tie rule, every vote kept); a judge's result already in the run's
    ``panel.json`` (``cache``) is not requested again, and each answered one is stored there.

    The arm-leak mask applies as in direct judging (:class:`~pytest_skilllift.judge.mask.
    MaskingGrader`): the spans naming ``families`` or the skill are counted and, with
    ``mask``, masked in the answer every request carries (so the evidence is checked against
    the text the judge saw); each result records ``arm_leaks`` and ``masked``."""
    if samples < 1:
        raise ValueError(f"judge samples must be at least 1, not {samples}")
    panel = panel_of(judge)
    if not panel:
        raise ValueError("batch judging needs at least one judge")
    out = BatchPhase()
    pattern = leak_pattern(families)
    leaks: dict[str, int] = {}
    with panel[0][1].locked():  # the panel's judges share the store: one lock for all
        todo: list[tuple[RunSpec, str]] = []
        for spec in specs:
            record = weekrun.week.load_run(spec.run_id)
            if (record is None or record.get("run_status") != OK
                    or not weekrun.needs_grade(spec.run_id)):
                continue
            answer = str(record.get("final_answer") or "")
            if spec.prompt.task is not None:  # the judge of a task's rubric sees its files
                from pytest_skilllift.run.tasks.rubric import judge_view

                answer = judge_view(answer, weekrun.week.run_dir(spec.run_id)).text
            if answer.strip() and spec.prompt.rubric:
                masked, leaks[spec.run_id] = pattern.subn(MASK, answer)
                todo.append((spec, masked if mask else answer))
            # else nothing to send; the engine records why when an item asks
        out.requested = len(todo)
        held = weekrun.judge_breaker.open_cause() if weekrun.judge_breaker else None
        if held and todo:
            # The judge's breaker is open (this step's first batch, or another worker's,
            # failed on the same outage for the last N runs): nothing is submitted; the runs
            # stay ungraded, never scored zero, and the next session grades them.
            for spec, _ in todo:
                out.ungraded[spec.run_id] = f"not graded: {held}"
            return out
        if todo:
            if len(panel) == 1:
                final = _grade_with(panel[0][1], todo, samples, out)
            else:
                final = _grade_panel(panel, todo, samples, out, cache, evidence_policy)
            results.by_run.update(
                {run_id: dataclasses.replace(result, arm_leaks=leaks[run_id],
                                             masked=mask and leaks[run_id] > 0)
                 for run_id, result in final.items()})
            for spec, _ in todo:
                try:
                    graded = weekrun.result(spec)
                except NotStarted:  # not reachable for a generated run; be safe
                    continue
                out.runs.append(graded)
                if graded.judge_error:
                    out.ungraded[spec.run_id] = graded.judge_error
                else:
                    out.graded += 1
                if on_graded is not None:
                    on_graded(graded)
    return out


def _grade_with(judge: BatchJudge, todo: Sequence[tuple[RunSpec, str]], samples: int,
                out: BatchPhase) -> dict[str, JudgeResult]:
    """One judge's result per run of ``todo`` (its samples and tie-breaks combined)."""
    first = [judge.request(custom_id(spec.run_id, k), build_judge_request(
                 judge_prompt_text(spec.prompt), answer, spec.prompt.rubric,
                 sample_seed(spec.run_id, k), reply_mode=judge.reply_mode))
             for spec, answer in todo for k in range(1, samples + 1)]
    got = judge.grade(first)
    out.took(judge)
    per_run = {spec.run_id: [got[custom_id(spec.run_id, k)] for k in range(1, samples + 1)]
               for spec, _ in todo}
    final: dict[str, JudgeResult] = {}
    ties = []
    for spec, answer in todo:
        votes = per_run[spec.run_id]
        if samples == 1:
            final[spec.run_id] = votes[0]
            continue
        merged = combine_samples(spec.prompt.rubric, votes, samples=samples)
        tied = tied_items(spec.prompt.rubric, votes, merged)
        final[spec.run_id] = merged
        if tied:
            ties.append((spec, judge.request(
                custom_id(spec.run_id, "tie"), build_judge_request(
                    judge_prompt_text(spec.prompt), answer, tied,
                    f"{spec.run_id}#{TIE_BREAK_SEED}", reply_mode=judge.reply_mode))))
    if ties:
        got_tie = judge.grade([req for _, req in ties])
        out.took(judge)
        for spec, req in ties:
            final[spec.run_id] = combine_samples(
                spec.prompt.rubric, per_run[spec.run_id], got_tie[req.custom_id],
                samples=samples)
    return final


def _grade_panel(panel: Sequence[tuple[str, BatchJudge]], todo: Sequence[tuple[RunSpec, str]],
                 samples: int, out: BatchPhase, cache: PanelCache | None,
                 policy: str) -> dict[str, JudgeResult]:
    """Each run graded by every judge of the panel through its own batch API, combined."""
    keys = {spec.run_id: fingerprint(judge_prompt_text(spec.prompt), answer, spec.prompt.rubric,
                                     policy)
            for spec, answer in todo}
    phases = {name: BatchPhase() for name, _ in panel}

    def one(pair: tuple[str, BatchJudge]) -> dict[str, JudgeResult]:
        name, judge = pair
        kept: dict[str, JudgeResult] = {}
        if cache is not None:
            for spec, _ in todo:
                found = cache.get(spec.run_id, name, keys[spec.run_id], spec.prompt.rubric,
                                  policy)
                if found is not None:
                    kept[spec.run_id] = found
        need = [(spec, answer) for spec, answer in todo if spec.run_id not in kept]
        got = _grade_with(judge, need, samples, phases[name]) if need else {}
        if cache is not None:
            for spec, _ in need:
                r = got[spec.run_id]
                if r.error is None and r.calls:  # paid for: never requested again
                    cache.put(spec.run_id, name, keys[spec.run_id], r)
        return {**kept, **got}

    with ThreadPoolExecutor(max_workers=len(panel),
                            thread_name_prefix="skilllift-batch-panel") as pool:
        by_judge = dict(zip([name for name, _ in panel], pool.map(one, panel), strict=True))
    for phase in phases.values():
        out.took(phase)
    return {spec.run_id: combine_panel(spec.prompt.rubric,
                                       [(name, by_judge[name][spec.run_id])
                                        for name, _ in panel])
            for spec, _ in todo}


def _no_runner() -> Runner:
    raise RuntimeError("batch grading never generates a run")


def grade_plan_in_batches(week: Ledger, specs: Sequence[RunSpec], judge: BatchJudges, *,
                          samples: int = 1, families: Sequence[str] = (), mask: bool = True,
                          on_graded: Callable[[GradedRun], None] | None = None,
                          regrade_pass: str = "", cache: PanelCache | None = None,
                          evidence_policy: str = "reject") -> list[GradedRun]:
    """``skilllift judge WEEKDIR --batch``: grade already generated runs in batches (the
    batch form of ``run.regrade.grade_direct``); never generates."""
    results = BatchResults(week, panel_name([name for name, _ in panel_of(judge)]))
    weekrun = WeekRun(week, AgentConfig(claude_path="", skills_root=Path(".")), _no_runner,
                      lambda: results)
    weekrun.regrade_pass = regrade_pass
    try:
        return grade_in_batches(weekrun, specs, judge, results, samples=samples,
                                families=families, mask=mask, on_graded=on_graded,
                                cache=cache, evidence_policy=evidence_policy).runs
    finally:
        weekrun.close()
