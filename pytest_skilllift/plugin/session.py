"""Run state of one pytest session (controller or xdist worker); no pytest imports.

The controller owns the demo endpoint, ``--skill-lift-fresh``, the derived CSVs, the scorecard
and the exit-status decision; workers only generate and grade runs into the week directory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pytest_skilllift.agents import registry
from pytest_skilllift.config import Settings, SettingsError
from pytest_skilllift.judge.protocol import Grader
from pytest_skilllift.judge.session_judge import FixtureGrader, SessionJudge
from pytest_skilllift.model import (
    CLAUDE_CODE,
    AgentConfig,
    JudgeResult,
    RunSpec,
    split_agent,
)
from pytest_skilllift.run.breaker import NOT_RUN_OUTAGE, CircuitBreaker
from pytest_skilllift.run.concurrency import ConcurrencyLimit, default_cap
from pytest_skilllift.run.engine import GradedRun, WeekRun
from pytest_skilllift.run.matrix import Matrix, load_matrix
from pytest_skilllift.run.view import SkillLiftRun
from pytest_skilllift.runners import agents
from pytest_skilllift.runners.base import Runner
from pytest_skilllift.runners.claude import find_claude
from pytest_skilllift.runners.inflight import Inflight
from pytest_skilllift.runners.sweep import SweepLog
from pytest_skilllift.warm import Warmed
from pytest_skilllift.week.checks import CheckTally, merge_checks
from pytest_skilllift.week.files import CONCURRENCY_FILE, OK, RUN_FILE, TRIGGERS_DIR
from pytest_skilllift.week.ledger import Ledger

DEMO_KEY = "demo-key-not-a-secret"

DEMO_BANNER = ("DEMO — scripted models: every answer and grade below comes from the package's "
               "scripted stand-in of the models' APIs, not from Claude, GPT or Gemini. Numbers "
               "show the pipeline, not a skill's real value.")


DRY_RUN_BANNER = ("DRY RUN — simulated: your prompts were answered and graded by the package's "
                  "scripted stand-in of the models' APIs, not by Claude, GPT or Gemini, and no "
                  "dollar was paid. It checks your prompt files and the pipeline; no number "
                  "below is a measurement of your skills.")


def leave_out_missing_agents(settings: Settings) -> Settings:
    """The settings without the optional labels (the demo's Codex and Gemini CLI labels)
    whose agent CLI this session cannot run — not installed here, or, with the docker runner,
    not in the image — each named with its fix (``Settings.labels_not_run``), so the demo
    still runs its Claude Code labels on a machine without them. With
    ``--skill-lift-agent-install`` (local runner) nothing is left out: ``agent_config``
    installs them. Labels a user asked for are never optional (a usage error instead)."""
    wanted = {label: split_agent(model)[0] for label, model in settings.models
              if label in settings.optional_labels}
    if not wanted or (settings.agent_install and settings.runner != "docker"):
        return settings
    if settings.runner == "docker":
        have = _image_agents(settings.image)
        missing = {label: f"{agent} CLI not in the docker image {settings.image} "
                          f"(skilllift image add-agents --base {settings.image} --tag TAG, "
                          "then --skill-lift-image=TAG)"
                   for label, agent in wanted.items() if agent not in have}
    else:
        missing = {label: f"{name} CLI not installed (npm i -g "
                          f"{registry.agent(name).pinned}, or --skill-lift-agent-install)"
                   for label, name in wanted.items() if agents.find_cli(name) is None}
    return settings.without_labels(missing)


def _image_agents(image: str) -> dict[str, str]:
    """The agent CLIs a docker image carries (its ``skilllift.agents`` label); none when the
    engine or the image cannot be read (the runner reports that itself)."""
    try:
        import docker.client

        from pytest_skilllift.runners.agent_image import image_agent_versions

        client = docker.client.from_env()
        try:
            return image_agent_versions(dict(client.images.get(image).labels or {}))
        finally:
            client.close()
    except Exception:  # an unreachable engine or a missing image: every agent is missing
        return {}


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
    """Settings plus lazily created parts (runner, judge, demo server)."""

    def __init__(self, settings: Settings, *, worker: bool = False) -> None:
        self.settings = settings
        self.worker = worker
        self._judge_service: Any = None
        self.week = Ledger(settings.out_dir)
        self.tally = SessionTally()
        self._weekrun: WeekRun | None = None
        self._triggers: Any = None
        self._server: Any = None
        self.summary: Any = None
        self.coverage_note = ""
        #: Where ``skilllift view``'s site of the week was written (or why it was not).
        self.view_note = ""
        #: The week's spend.json after this session (``week.spend``), set by ``finish``.
        self.spend: Any = None
        self._batch_results: Any = None
        self._spend_cap: Any = None
        #: Same on the controller and every worker (handed over through workerinput).
        self.session_id = uuid.uuid4().hex
        self.checks = CheckTally()
        # The plugin's hooks, wired by the pytest glue (this module never imports pytest).
        self.runner_hook: Callable[[], Runner | None] | None = None
        self.run_finished_hook: Callable[[SkillLiftRun], list[str]] | None = None
        self.run_graded_hook: Callable[[SkillLiftRun, tuple[Any, ...]], list[str]] | None = None
        self.sections_hook: Callable[[dict[str, Any]], tuple[list[Any], list[str]]] | None = None
        self._hook_errors: list[str] = []
        self._judge: SessionJudge | None = None
        self._graders: dict[int, FixtureGrader] = {}
        self._matrix: Matrix | None = None
        self.matrix_warned = False
        self._judge_warmed = False
        self._summarizer_warmed = False
        self._finishing: tuple[threading.Thread, list[BaseException]] | None = None
        self.refused = False  # the week's identity (week.json) refused this session
        self.baseline_note = ""  # --skill-lift-baseline-from: what the plan reuses
        from pytest_skilllift.plugin.ci import (
            SessionVerdicts,  # week identity at start, gates at end
        )

        self.ci = SessionVerdicts(settings, self.matrix, other_agents=self.other_agents,
                                  revision=self.revision)
        #: Docker only: the controller's start-up and end-of-session container sweeps.
        self.sweeps = SweepLog() if settings.runner == "docker" and not worker else None
        #: Runs an interrupt stopped (any process of the session), once the session ends.
        self.stopped_runs: list[str] | None = None
        # The judge's rate limits (HTTP 429/529) lower the session's concurrency limit too.
        from pytest_skilllift.judge.client import RATE_LIMIT_LISTENERS

        RATE_LIMIT_LISTENERS.append(self._judge_rate_limited)

    def _judge_rate_limited(self, wait_s: float) -> None:
        self.concurrency().signal(wait_s, source="judge")

    @property
    def inflight(self) -> Inflight:
        """The session's runs in flight, shared by its processes (``runners.inflight``)."""
        return Inflight.for_session(self.session_id)

    def interrupt(self) -> list[str]:
        """Stop every agent CLI of the session (every process's); the runs stopped now."""
        return self.inflight.stop_all()

    def interrupted_line(self) -> str:
        """What an interrupted session says it stopped (controller, after the workers)."""
        runs = self.stopped_runs or []
        if not runs:
            return "interrupted: no run was in flight; the week resumes where it stopped"
        return (f"interrupted: {len(runs)} run{'s' * (len(runs) != 1)} in flight "
                f"{'were' if len(runs) != 1 else 'was'} stopped and will be retried: "
                + ", ".join(runs))

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

        self._judge_service = JudgeService(self._local_grader)
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

    def check_ready_to_run(self) -> str | None:
        """Before the first run (listing tests needs neither): a key, so no run fails for the
        want of one after the week started, and a CLI to run; the preflight's line."""
        self.check_credentials()
        self.agent_config()  # raises when no CLI can be found
        return self.preflight()

    def preflight(self) -> str | None:
        """Each (agent, model) label's model asked once (its API's free model lookup, as
        the agent's definition says) before the matrix starts: a mistyped model, a refused
        key or an unreachable API stops the session here, naming the label, the cause and
        the fix (``runners.preflight``). The agents' endpoints are the ones their runs get
        (:meth:`agent_env`). Not for the scripted stand-in, nor Claude Code on Bedrock /
        Vertex (another API), nor with ``--skill-lift-preflight=off``. Returns its line (what
        was checked, what could not be and why), None when it did not run."""
        from pytest_skilllift.runners import preflight

        if not self.settings.preflight or self.settings.demo:
            return None
        found = preflight.run(self.settings.models, {**os.environ, **self.agent_env()})
        if found.problems:
            raise SettingsError(preflight.stop_message(found.problems))
        return found.line()

    def check_credentials(self) -> None:
        """A real run needs a key before the first paid call, not after 200 runs failed."""
        if self.settings.demo or self.settings.base_url:
            return
        keys = [registry.agent(a).key_var for a in self.other_agents()
                if not os.environ.get(registry.agent(a).key_var)]
        if keys:
            raise SettingsError(
                f"--skill-lift: the labels' agents need {', '.join(keys)} in the environment "
                "(each agent gets only its own key; docs/agents.md), and it is not set.")
        if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
            raise SettingsError(
                "--skill-lift: the runs need ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the "
                "environment, for the CLI and the judge, and neither is set. Listing the tests "
                "(--collect-only) needs no key; --skill-lift-demo runs the whole pipeline "
                "against scripted models without one."
            )

    def stop(self) -> None:
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
        if self._weekrun is None:
            self._weekrun = WeekRun(self.week, self.agent_config(), self._make_runner,
                                    self._make_grader, site=self.settings.site,
                                    session_id=self.session_id, baseline=self._baseline())
            self._weekrun.on_generated = self._run_generated
            self._weekrun.on_graded = self._run_graded
            self._weekrun.start_gate = self.spend_gate()
            self._weekrun.breaker = self.breaker()
            self._weekrun.judge_breaker = self.breaker("judge")
            self._weekrun.concurrency = self.concurrency()
            if self.settings.fresh:  # regrade the runs this session selects, once each
                self._weekrun.regrade_pass = self.session_id
        return self._weekrun

    def concurrency(self) -> ConcurrencyLimit:
        """The session's limit on agent runs in flight, shared by its processes through the
        session's directory (``run.concurrency``)."""
        s = self.settings
        cap = default_cap(s.max_concurrency,
                          claude_code=any(split_agent(m)[0] == CLAUDE_CODE for _, m in s.models),
                          workers=int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1))
        return ConcurrencyLimit(self.inflight.root / "concurrency", cap,
                                check=self.inflight.check_not_stopping)

    def breaker(self, side: str = "runs") -> CircuitBreaker | None:
        """``--skill-lift-breaker``: the session's circuit breaker for its runs (or its
        judge), shared by its processes through the in-flight registry's directory; None
        when it is off."""
        if self.settings.breaker <= 0:
            return None
        return CircuitBreaker(self.inflight.root / f"{side}-outcomes.log",
                              self.settings.breaker)

    def breaker_lines(self) -> list[str]:
        """What the circuit breakers held back this session (controller, at the end)."""
        lines = []
        held = [r for r, st in self.tally.runs.items() if st == NOT_RUN_OUTAGE]
        # Trigger runs share the breaker (one API behind both): counted with the lift's.
        held_triggers = [r for r, st in self.tally.trigger_runs.items() if st == NOT_RUN_OUTAGE]
        runs, judge = self.breaker(), self.breaker("judge")
        cause = runs.open_cause() if runs is not None else None
        if (held or held_triggers) and runs is not None:
            of_which = (f" ({len(held_triggers)} of them trigger runs)"
                        if held_triggers else "")
            lines.append(f"circuit breaker: {len(held) + len(held_triggers)} run(s)"
                         f"{of_which} not run: {cause} — "
                         f"{runs.threshold} consecutive runs failed with it, so no further "
                         "run was started; fix it and run again (the next session runs "
                         "them): exit status 1")
        judge_cause = judge.open_cause() if judge is not None else None
        if judge_cause and judge is not None:
            lines.append(f"circuit breaker: judging stopped: {judge_cause} — "
                         f"{judge.threshold} consecutive judge calls failed with it; the runs "
                         "left stay ungraded (never scored zero) and are graded next session")
        return lines

    def plan_baseline(self) -> None:
        """``--skill-lift-baseline-from``, before the first run (controller): decide which
        no-skill runs come from WEEKDIR and write the plan into the week directory. Raises
        ``SettingsError`` naming a WEEKDIR that cannot serve."""
        s = self.settings
        if not s.baseline_from or self.ci.record is None:
            return
        from pytest_skilllift.run.baseline import BaselineError, plan_summary, prepare

        try:
            plan = prepare(Path(s.baseline_from), s.out_dir, self.ci.record.identity,
                           [label for label, _ in s.models])
        except BaselineError as exc:
            raise SettingsError(str(exc)) from None
        plan.save(s.out_dir)
        self.baseline_note = plan_summary(plan)

    def _baseline(self) -> Any:
        """``--skill-lift-baseline-from``: where the engine asks for no-skill runs first (the
        plan the controller wrote before the first run, read from the week directory)."""
        if not self.settings.baseline_from:
            return None
        from pytest_skilllift.run.baseline import BaselineSource

        return BaselineSource(self.settings.out_dir)
    @property
    def triggers(self) -> Any:
        """Trigger runs (``run.triggers.TriggerRun``): the lift's agent config and runner,
        only ``--max-turns`` changed, into ``<week>/triggers/``."""
        if self._triggers is None:
            from pytest_skilllift.run.triggers import TriggerRun

            agent = dataclasses.replace(self.agent_config(),
                                        max_turns=self.settings.triggers_max_turns)
            self._triggers = TriggerRun(self.week.root / TRIGGERS_DIR, agent,
                                        self._make_runner)
            self._triggers.start_gate = self.spend_gate()
            self._triggers.breaker = self.breaker()  # one API behind lift and trigger runs
            self._triggers.concurrency = self.concurrency()
        return self._triggers

    def spend_gate(self) -> Any:
        """``--skill-lift-max-spend``: the start gate every run of this process asks (lift and
        trigger runs alike, one cap), or None without a cap."""
        if self.settings.max_spend_usd is None:
            return None
        if self._spend_cap is None:
            from pytest_skilllift.week.spend import SpendCap

            self._spend_cap = SpendCap(self.week.root, self.settings.max_spend_usd)
        return self._spend_cap.check

    # -- the fixtures' side (skill_lift_judge, skill_lift_run, skill_lift_week) -----------
    @property
    def judge(self) -> SessionJudge:
        """The default ``skill_lift_judge``: the configured judge client of this process."""
        if self._judge is None:
            self._judge = SessionJudge(lambda: self.weekrun.default_grader())
        return self._judge

    def result(self, spec: RunSpec, judge: Any) -> GradedRun:
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

    def revision(self) -> Any:
        """The with-skill@REF arm's resolved revision (``run.revisions.Revision``), or None;
        ``SettingsError`` when its REF cannot be resolved."""
        from pytest_skilllift.run.revisions import RevisionError, session_revision

        s = self.settings
        try:
            return session_revision(s.conditions, s.skills_root, rootdir=s.rootdir,
                                    week_dir=s.out_dir)
        except RevisionError as exc:
            raise SettingsError(str(exc)) from None

    def matrix(self) -> Matrix:
        """Every run of the configured week (what ``skill_lift_run`` is parametrized over)."""
        if self._matrix is None:
            self.revision()  # a REF that cannot be resolved: the settings' error, named
            self._matrix = load_matrix(self.settings)
        return self._matrix

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

    def agent_env(self) -> dict[str, str]:
        """The session's own variables for the runs (over the host's): its extra
        environment and, with a base URL, each agent's base-URL variable."""
        s = self.settings
        env = dict(s.extra_env)
        if s.base_url:
            # Every agent reaches the same endpoint through its own variable (the demo).
            env.update({a.base_url_var: s.base_url + a.stand_in_path
                        for a in registry.AGENTS.values()})
        return env

    def agent_config(self) -> AgentConfig:
        s = self.settings
        env = self.agent_env()
        others = self.other_agents()
        problems = [p for a in others
                    if (p := agents.url_problem(a, {**os.environ, **env})) is not None]
        if problems:
            raise SettingsError("; ".join(dict.fromkeys(problems)))
        if s.runner == "docker":
            claude = "claude"  # the image's own CLI
            paths = {a: registry.agent(a).binary for a in others}
        else:
            found = find_claude(s.claude or None)
            if found is None and len(others) < len(s.models):
                raise SettingsError(
                    "Claude Code CLI not found: install it with pip install "
                    "'pytest-skilllift[agent]' (the claude-agent-sdk wheel bundles it), put "
                    "claude on PATH, or pass --skill-lift-claude=PATH"
                )
            claude = found or "claude"
            paths = self._agent_paths(others)
        return AgentConfig(claude_path=claude, skills_root=s.skills_root,
                           allowed_tools=s.allowed_tools, permission_mode=s.permission_mode,
                           max_turns=s.max_turns, max_budget_usd=s.max_budget_usd,
                           timeout_s=s.timeout_s, env=env, allow_unsafe=s.allow_unsafe,
                           agent_paths=paths,
                           max_family_bytes=int(s.max_family_mb * 2**20) or None)

    def other_agents(self) -> list[str]:
        """The agents beside Claude Code that the labels name, in label order."""
        found = (split_agent(m)[0] for _, m in self.settings.models)
        return list(dict.fromkeys(a for a in found if a != CLAUDE_CODE))

    def _agent_paths(self, wanted: list[str]) -> dict[str, str]:
        """Each agent's CLI; a missing one is installed (``--skill-lift-agent-install``) or
        a usage error naming its npm package."""
        paths = {a: agents.find_cli(a) for a in wanted}
        missing = [a for a, p in paths.items() if p is None]
        if missing and self.settings.agent_install:
            error = agents.npm_install(missing, agents.default_install_dir())
            if error:
                raise SettingsError(f"--skill-lift-agent-install: {error}")
            paths.update({a: agents.find_cli(a) for a in missing})
            missing = [a for a, p in paths.items() if p is None]
        if missing:
            raise SettingsError("; ".join(agents.missing_cli_message(a) for a in missing))
        return {a: p for a, p in paths.items() if p is not None}

    def _make_runner(self) -> Runner:
        """Prompt runs go to the configured runner, Harbor task runs to the task runner
        (docker, whatever the prompts' runner: a task's run is its container)."""
        from pytest_skilllift.runners.task_docker import SplitRunner

        return SplitRunner(self._make_prompt_runner, self._make_task_runner)

    def _make_task_runner(self) -> Runner:
        from pytest_skilllift.runners.task_docker import TaskRunner

        s = self.settings
        claude = Path(s.claude) if s.claude and Path(s.claude).is_file() else None
        return TaskRunner(network=s.docker_network, week=s.week, inflight=self.inflight,
                          claude=claude)

    def _make_prompt_runner(self) -> Runner:
        s = self.settings
        if self.runner_hook is not None:
            supplied = self.runner_hook()  # pytest_skilllift_make_runner
            if supplied is not None:
                return supplied
        if s.runner == "docker":
            from pytest_skilllift.runners.docker import DockerRunner

            return DockerRunner(s.image, network=s.docker_network, week=s.week,
                                inflight=self.inflight)
        from pytest_skilllift.runners.local import LocalRunner

        return LocalRunner(inflight=self.inflight)

    def _make_grader(self) -> Grader:
        if self.settings.judge_batch:  # graded by the batch step (scale.py), never directly
            grader: Grader = self.batch_results
            return grader
        if self.worker and self.settings.judge_url:
            from pytest_skilllift.judge.service import RemoteGrader

            return RemoteGrader(self.settings.judge_url, self.settings.judge_token)
        return self._local_grader()

    def _local_grader(self) -> Grader:
        from pytest_skilllift.judge.factory import build_judge, session_judges
        from pytest_skilllift.judge.mask import MaskingGrader
        from pytest_skilllift.judge.panel import PanelCache, PanelJudge
        from pytest_skilllift.judge.samples import SampledJudge
        from pytest_skilllift.run.triggers import skill_families

        s = self.settings
        evidence = "flag" if s.evidence == "flag" else "reject"

        def one(spec: Any) -> Grader:
            judge = build_judge(spec, env=s.extra_env, base_url=s.base_url or None,
                                evidence=evidence)
            # Built ahead of the first grade under xdist (warm_judge): the SDK's import too.
            judge.prepare()
            return SampledJudge(judge, samples=s.judge_samples)

        specs = session_judges(s.judge_model, s.judges)
        grader: Grader = (one(specs[0]) if len(specs) == 1 else
                          PanelJudge([(spec.name, one(spec)) for spec in specs],
                                     cache=PanelCache(self.week.root),
                                     evidence_policy=evidence))
        return MaskingGrader(grader, skill_families(s.skills_root), mask=s.judge_mask)

    @property
    def batch_results(self) -> Any:
        """``--skill-lift-judge-batch``: the results the batch step hands the engine."""
        if self._batch_results is None:
            from pytest_skilllift.judge.factory import session_judges
            from pytest_skilllift.judge.panel import panel_name
            from pytest_skilllift.run.batch_grade import BatchResults

            s = self.settings
            name = panel_name([j.name for j in session_judges(s.judge_model, s.judges)])
            self._batch_results = BatchResults(self.week, name)
        return self._batch_results

    def batch_judge(self, log: Any = None) -> Any:
        """``--skill-lift-judge-batch``: the batch client of the session's judge (its
        provider's batch API), or a panel's ``(name, client)`` pairs sharing one batch file
        (``judge.factory.build_batch_judges``). Small change for #41 (owner: s35)."""
        from pytest_skilllift.judge.factory import build_batch_judges, session_judges

        s = self.settings
        return build_batch_judges(session_judges(s.judge_model, s.judges), self.week.root,
                                  env=s.extra_env, base_url=s.base_url or None,
                                  poll_s=s.judge_batch_poll_s, log=log,
                                  evidence="flag" if s.evidence == "flag" else "reject")

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
        """:meth:`finish`, reusing the scorecard :meth:`start_finish` is writing (an error
        it raised is raised here).  The scorecard-section hooks run here, in the caller's
        thread."""
        if self._finishing is None:
            return self.finish()
        thread, errors = self._finishing
        thread.join()
        if errors:
            raise errors[0]
        return self._conclude()

    def finish(self) -> bool:
        """Rebuild the CSVs, write the scorecard; return whether coverage is enough."""
        self._write_scorecard()
        return self._conclude()

    def _write_scorecard(self) -> None:
        from pytest_skilllift.report.summarize import summarize_week
        from pytest_skilllift.run.triggers import rebuild_trigger_table
        from pytest_skilllift.week.spend import NOT_RUN, update_spend

        if self.sweeps is not None and self.sweeps.ran:  # only when the runs started
            self.sweeps.sweep("end-of-session")
        self.spend = update_spend(
            self.week.root, self.settings.max_spend_usd,
            [r for r, st in self.tally.runs.items() if st == NOT_RUN]
            + [f"{TRIGGERS_DIR}/{r}" for r, st in self.tally.trigger_runs.items()
               if st == NOT_RUN],
            [r for r, st in self.tally.runs.items() if st == NOT_RUN_OUTAGE]
            + [f"{TRIGGERS_DIR}/{r}" for r, st in self.tally.trigger_runs.items()
               if st == NOT_RUN_OUTAGE])
        self.concurrency().write_summary(self.week.root / CONCURRENCY_FILE)
        has_triggers = rebuild_trigger_table(self.week.root) > 0
        if not any(self.week.root.glob(f"*/{RUN_FILE}")) and not has_triggers:
            return
        self.week.rebuild_csvs()
        merge_checks(self.week.root, self.checks.finished())
        banner = (DRY_RUN_BANNER if self.settings.dry_run else
                  DEMO_BANNER if self.settings.demo else None)
        # Labels left out are one plain line in the card (not the banner, not the plots).
        self.summary = summarize_week(self.week.root, banner=banner,
                                      note=self.settings.labels_not_run_line or None)
        self._write_view()

    def _write_view(self) -> None:
        """The week's HTML viewer beside the scorecard (``skilllift view``'s site)."""
        from pytest_skilllift.view.site import ViewError, build_site

        try:
            site = build_site(self.week.root)
        except (ViewError, OSError) as err:
            self.view_note = f"viewer not written: {err}"
            return
        self.view_note = f"viewer: {site.index} ({site.pages} prompt pages; open it from disk)"
        if site.history_compare:
            self.view_note += f"\nviewer compare: {site.history_compare}"

    def session_counts(self) -> tuple[int, int]:
        """(graded, runs) of this session's lift runs, as the coverage line counts them."""
        runs = self.tally.runs
        return sum(1 for status in runs.values() if status == OK), len(runs)

    def _conclude(self) -> bool:
        """Hook sections, and whether this session graded enough of its runs."""
        if self.summary is None:
            return True
        self._add_hook_sections()
        graded, n_runs = self.session_counts()
        if not n_runs:
            return True
        share = graded / n_runs
        enough = share >= self.settings.min_coverage
        self.coverage_note = (
            f"graded {graded} of {n_runs} runs this session ({share:.0%}; minimum "
            f"{self.settings.min_coverage:.0%})"
            + ("" if enough else " — below the minimum: the week is incomplete, exit status 1")
        )
        return enough

    def _add_hook_sections(self) -> None:
        """Sections from ``pytest_skilllift_scorecard_sections``, appended and rewritten."""
        if self.sections_hook is None or self.summary is None:
            return
        from pytest_skilllift.report.extra_sections import append_sections

        sections, errors = self.sections_hook(self.summary.data)
        self.tally.hook_errors += errors
        if sections:
            self.summary.data, self.summary.markdown = append_sections(
                self.week.root, self.summary.data, self.summary.markdown, sections)
