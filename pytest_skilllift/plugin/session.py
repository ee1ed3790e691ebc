"""Run state of one pytest session (controller or xdist worker); no pytest imports.

The controller owns the demo endpoint, ``--skill-lift-fresh``, the derived CSVs, the scorecard
and the exit-status decision; workers only generate and grade runs into the week directory.
What the session is made of is built by ``run.wiring`` (the agent configuration, the runner,
the grader, the batch step, the engine and the trigger runs); what it writes at the end by
``report.session_end`` (the scorecard, the hooks' sections, the coverage line) and
``view.site.write_view`` (the viewer).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pytest_skilllift.agents import registry
from pytest_skilllift.config import Settings
from pytest_skilllift.judge.session_judge import FixtureGrader, SessionJudge
from pytest_skilllift.model import ItemVerdict, JudgeResult, RunSpec
from pytest_skilllift.plugin.ci import SessionVerdicts
from pytest_skilllift.report import session_end
from pytest_skilllift.run import wiring
from pytest_skilllift.run.engine import GradedRun, WeekRun
from pytest_skilllift.run.matrix import Matrix, load_matrix
from pytest_skilllift.run.revisions import settings_revision
from pytest_skilllift.run.view import SkillLiftRun
from pytest_skilllift.runners.base import Runner
from pytest_skilllift.runners.inflight import Inflight
from pytest_skilllift.runners.sweep import SweepLog
from pytest_skilllift.warm import Warmed
from pytest_skilllift.week.checks import CheckTally
from pytest_skilllift.week.files import OK
from pytest_skilllift.week.ledger import Ledger

if TYPE_CHECKING:
    from pytest_skilllift.judge.service import JudgeService
    from pytest_skilllift.report.card import Scorecard
    from pytest_skilllift.report.extra_sections import Section
    from pytest_skilllift.report.summarize import Summary
    from pytest_skilllift.run.batch_grade import BatchResults
    from pytest_skilllift.run.triggers import TriggerRun
    from pytest_skilllift.testing.server import StandIn
    from pytest_skilllift.week.spend import SpendRecord

DEMO_KEY = "demo-key-not-a-secret"


@dataclass
class SessionTally:
    """What the controller saw of skill-lift items (reports arrive from every worker)."""

    runs: dict[str, str] = field(default_factory=dict)  # run_id -> status
    rubric_failures: int = 0
    other_failures: int = 0
    passed: int = 0
    skipped: int = 0
    #: Trigger tests: run_id -> status. Trigger runs never count toward the lift.
    trigger_runs: dict[str, str] = field(default_factory=dict)
    #: Custom checks (tests over skill_lift_run): a failed one is a finding, like a rubric item.
    check_failures: int = 0
    #: ``pytest_skilllift_*`` implementations that raised, each message naming it.
    hook_errors: list[str] = field(default_factory=list)

    def add(self, outcome: str, when: str, props: dict[str, str]) -> None:
        """Count one test report (its outcome, phase and the run properties it carries)."""
        trigger = props.get("skilllift_trigger")
        if trigger is not None:
            run_id, _, status = trigger.partition("|")
            self.trigger_runs[run_id] = status
            if outcome == "failed" and when == "call" and "trigger" in props:
                return  # a miss or a false trigger: a finding (counted by its report status)
        run = props.get("skilllift_run")
        if run is not None:
            run_id, _, status = run.partition("|")
            self.runs[run_id] = status
        if "invocation" in props and outcome == "failed" and when == "call":
            return  # an ``…::invoked`` item whose skill was not VERIFIED: a finding, likewise
        if outcome == "failed" and when == "call" and "skilllift_check" in props:
            self.check_failures += 1
        elif outcome == "failed":
            if run is not None and when == "call" and "verdict" in props:
                self.rubric_failures += 1
            else:
                self.other_failures += 1
        elif outcome == "passed" and when == "call":
            self.passed += 1
        elif outcome == "skipped":
            self.skipped += 1


class SkillLiftSession:
    """The run state of one pytest session: its settings, its week, what it tallied, and
    its parts made on first use — the engine, the trigger runs, the judge (and, under
    xdist, the controller's judge service), the demo's stand-in. The parts are built by
    ``run.wiring``; the end-of-session writers are ``report.session_end`` and
    ``view.site.write_view``."""

    def __init__(self, settings: Settings, *, worker: bool = False) -> None:
        self.settings = settings
        self.worker = worker
        self.week = Ledger(settings.out_dir)
        self.tally = SessionTally()
        self.checks = CheckTally()
        #: Same on the controller and every worker (handed over through workerinput).
        self.session_id = uuid.uuid4().hex
        # The plugin's hooks, wired by the pytest glue (this module never imports pytest).
        self.runner_hook: Callable[[], Runner | None] | None = None
        self.run_finished_hook: Callable[[SkillLiftRun], list[str]] | None = None
        self.run_graded_hook: Callable[[SkillLiftRun, tuple[ItemVerdict, ...]],
                                       list[str]] | None = None
        self.sections_hook: Callable[[Scorecard], tuple[list[Section], list[str]]] | None = None
        #: The end of the session (controller): the week's scorecard, spend.json and the
        #: lines the terminal summary prints.
        self.summary: Summary | None = None
        self.spend: SpendRecord | None = None
        self.coverage_note = ""
        #: Where ``skilllift view``'s site of the week was written (or why it was not).
        self.view_note = ""
        self.baseline_note = ""  # --skill-lift-baseline-from: what the plan reuses
        self.refused = False  # the week's identity (week.json) refused this session
        self.matrix_warned = False
        #: Runs an interrupt stopped (any process of the session), once the session ends.
        self.stopped_runs: list[str] | None = None
        #: Docker only: the controller's start-up and end-of-session container sweeps.
        self.sweeps = SweepLog() if settings.runner == "docker" and not worker else None
        self.ci = SessionVerdicts(settings, self.matrix,
                                  other_agents=lambda: wiring.other_agents(self.settings),
                                  revision=lambda: settings_revision(self.settings))
        #: ``--skill-lift-max-spend``: one cap for the lift's and the trigger runs.
        self._spend_gate = wiring.spend_gate(settings, self.week)
        self._matrix: Matrix | None = None
        self._weekrun: WeekRun | None = None
        self._triggers: TriggerRun | None = None
        self._batch_results: BatchResults | None = None
        self._judge: SessionJudge | None = None
        self._graders: dict[int, FixtureGrader] = {}
        self._judge_service: JudgeService | None = None
        self._server: StandIn | None = None
        self._hook_errors: list[str] = []
        self._judge_warmed = False
        self._summarizer_warmed = False
        self._finishing: tuple[threading.Thread, list[BaseException]] | None = None
        # The judge's rate limits (HTTP 429/529) lower the session's concurrency limit too.
        from pytest_skilllift.judge.client import RATE_LIMIT_LISTENERS

        RATE_LIMIT_LISTENERS.append(self._judge_rate_limited)

    def _judge_rate_limited(self, wait_s: float) -> None:
        wiring.concurrency(self.settings, self.inflight).signal(wait_s, source="judge")

    @property
    def inflight(self) -> Inflight:
        """The session's runs in flight, shared by its processes (``runners.inflight``)."""
        return Inflight.for_session(self.session_id)

    # -- controller set-up --------------------------------------------------------------
    def start_demo(self) -> None:
        """Start the scripted Messages API on loopback; both the CLI and the judge use it."""
        from pytest_skilllift.testing.demo import demo_agent, demo_judge
        from pytest_skilllift.testing.server import StandIn

        self._server = StandIn(agent=demo_agent(), judge=demo_judge(),
                               latency_s=self.settings.demo_latency_s,
                               judge_latency_s=self.settings.demo_judge_latency_s)
        url = self._server.start()
        self.settings = dataclasses.replace(
            self.settings, base_url=url, extra_env={
                a.key_var: DEMO_KEY for a in registry.AGENTS.values()})

    def start_judge_service(self, *, warm: bool = True) -> None:
        """Under xdist: one judge client in the controller, served to every worker; built
        now in the background with ``warm``, else by :meth:`warm_judge` or the first grade."""
        from pytest_skilllift.judge.service import JudgeService

        self._judge_service = JudgeService(
            lambda: wiring.local_grader(self.settings, self.week))
        url = self._judge_service.start(warm=warm)
        self.settings = dataclasses.replace(self.settings, judge_url=url,
                                            judge_token=self._judge_service.token)

    def warm_judge(self) -> None:
        """Build the judge service's client and import the anthropic SDK (≈ 1.5 s of CPU
        on a quiet machine) in the background, once."""
        if self._judge_service is not None and not self._judge_warmed:
            self._judge_warmed = True
            self._judge_service.grader.warm("skilllift-judge-warmup")

    def warm_summarizer(self) -> None:
        """Import the summarizer (numpy, scipy, pyarrow, matplotlib: ≈ 0.9 s of CPU) in the
        background, once, so the scorecard is not seconds of imports after the last run."""
        if self._summarizer_warmed:
            return
        self._summarizer_warmed = True

        def imports() -> None:
            from pytest_skilllift.report.summarize import warm_imports

            warm_imports()

        Warmed(imports).warm("skilllift-summarize-warmup")

    def stop(self) -> None:
        """At the session's end: release its runners, the API stand-in and the judge service,
        and stop listening for the judge's rate limits."""
        from pytest_skilllift.judge.client import RATE_LIMIT_LISTENERS

        with contextlib.suppress(ValueError):
            RATE_LIMIT_LISTENERS.remove(self._judge_rate_limited)
        if self._weekrun is not None:
            self._weekrun.close()
        if self._triggers is not None:
            self._triggers.close()
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._judge_service is not None:
            self._judge_service.stop()
            self._judge_service = None

    # -- the run ------------------------------------------------------------------------
    @property
    def weekrun(self) -> WeekRun:
        """This process's engine (``run.wiring.week_run``)."""
        if self._weekrun is None:
            self._weekrun = wiring.week_run(
                self.settings, self.week, session_id=self.session_id, inflight=self.inflight,
                grader=lambda: wiring.make_grader(self.settings, self.week, worker=self.worker,
                                                  batch=lambda: self.batch_results),
                hooks=wiring.Hooks(self.runner_hook, self._run_generated, self._run_graded),
                gate=self._spend_gate)
        return self._weekrun

    @property
    def triggers(self) -> TriggerRun:
        """This process's trigger runs (``run.wiring.trigger_run``), into ``<week>/triggers/``."""
        if self._triggers is None:
            self._triggers = wiring.trigger_run(self.settings, self.week,
                                                inflight=self.inflight, runner=self.runner_hook,
                                                gate=self._spend_gate)
        return self._triggers

    @property
    def batch_results(self) -> BatchResults:
        """``--skill-lift-judge-batch``: the results the batch step hands the engine."""
        if self._batch_results is None:
            self._batch_results = wiring.batch_results(self.settings, self.week)
        return self._batch_results

    def matrix(self) -> Matrix:
        """Every run of the configured week (what ``skill_lift_run`` is parametrized over)."""
        if self._matrix is None:
            settings_revision(self.settings)  # a REF that cannot be resolved: named
            self._matrix = load_matrix(self.settings)
        return self._matrix

    # -- the fixtures' side (skill_lift_judge, skill_lift_run, skill_lift_week) -----------
    @property
    def judge(self) -> SessionJudge:
        """The default ``skill_lift_judge``: the configured judge client of this process."""
        if self._judge is None:
            self._judge = SessionJudge(lambda: self.weekrun.default_grader())
        return self._judge

    def result(self, spec: RunSpec, judge: object) -> GradedRun:
        """The run, generated once and graded once, through ``judge`` (the fixture's value)."""
        grader = self._graders.get(id(judge))
        if grader is None or grader.judge is not judge:
            grader = self._graders[id(judge)] = FixtureGrader(judge, self.judge)
        return self.weekrun.result(spec, grader)

    def run_view(self, spec: RunSpec) -> SkillLiftRun:
        """The run as checks and hooks see it, read from the week directory."""
        url = self.settings.site or spec.prompt.skill_url
        return SkillLiftRun.load(self.week, spec, site_host=urlsplit(url).hostname if url
                                 else None, skills_root=self.settings.skills_root)

    def drain_hook_errors(self) -> list[str]:
        """Hook errors raised in this process since the last call."""
        errors, self._hook_errors = self._hook_errors, []
        return errors

    def _run_generated(self, spec: RunSpec) -> None:
        if self.run_finished_hook is not None:
            self._hook_errors += self.run_finished_hook(self.run_view(spec))

    def _run_graded(self, spec: RunSpec, result: JudgeResult) -> None:
        if self.run_graded_hook is not None:
            self._hook_errors += self.run_graded_hook(self.run_view(spec), result.verdicts)

    # -- controller wrap-up -------------------------------------------------------------
    def start_finish(self) -> None:
        """Start writing the CSVs and the scorecard in a background thread
        (:meth:`finished` waits for it and concludes): the controller writes them while
        xdist shuts its workers down."""
        if self._finishing is not None:
            return
        if self.sweeps is not None and self.sweeps.ran:
            # Docker: the end-of-session container sweep must follow the workers' own
            # clean-up, so the wrap-up waits for them (finished() runs it then).
            return
        errors: list[BaseException] = []

        def run() -> None:
            try:
                self._write_scorecard()
            except BaseException as exc:  # raised again, in the caller's thread, by finished()
                errors.append(exc)

        thread = threading.Thread(target=run, name="skilllift-wrap-up", daemon=True)
        self._finishing = (thread, errors)
        thread.start()

    def finished(self) -> bool:
        """Rebuild the CSVs and write the scorecard — or wait for :meth:`start_finish`'s
        thread to have done it (an error it raised is raised here) —, then add the
        scorecard-section hooks' sections (in the caller's thread); whether this session
        graded enough of its runs."""
        if self._finishing is None:
            self._write_scorecard()
        else:
            thread, errors = self._finishing
            thread.join()
            if errors:
                raise errors[0]
        return self._conclude()

    def _write_scorecard(self) -> None:
        from pytest_skilllift.view.site import write_view

        if self.sweeps is not None and self.sweeps.ran:  # only when the runs started
            self.sweeps.sweep("end-of-session")
        s = self.settings
        self.spend, has_triggers = wiring.close_week(s, self.week, self.inflight,
                                                     self.tally.runs, self.tally.trigger_runs)
        # Labels left out are one plain line in the card (not the banner, not the plots).
        self.summary = session_end.write_card(
            self.week, self.checks.finished(), has_triggers=has_triggers,
            banner=session_end.banner(demo=s.demo, dry_run=s.dry_run),
            note=s.labels_not_run_line or None)
        if self.summary is not None:
            self.view_note = write_view(self.week.root)

    def _conclude(self) -> bool:
        """Hook sections, and whether this session graded enough of its runs."""
        if self.summary is None:
            return True
        if self.sections_hook is not None:
            sections, errors = self.sections_hook(self.summary.data)
            self.tally.hook_errors += errors
            session_end.add_sections(self.week.root, self.summary, sections)
        enough, self.coverage_note = session_end.coverage(*self.session_counts(),
                                                          self.settings.min_coverage)
        return enough

    def session_counts(self) -> tuple[int, int]:
        """(graded, runs) of this session's lift runs, as the coverage line counts them."""
        runs = self.tally.runs
        return sum(1 for status in runs.values() if status == OK), len(runs)
