"""pytest hooks only: options, configure, collection, xdist plumbing, summary, exit status.

Nothing here computes: settings come from ``config.Settings``, runs from ``weekrun``, numbers
from ``summarize``. The ``skilllift`` pytest11 entry point loads this module.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_skilllift.config import Settings, SettingsError
from pytest_skilllift.judge.batch import forget_batches
from pytest_skilllift.plugin import findings, interrupts, progress_hooks, scale
from pytest_skilllift.plugin.collect import extra as collect_extra
from pytest_skilllift.plugin.collect.items import HOOK_ERROR_PROP, SESSION_KEY, PromptFile
from pytest_skilllift.plugin.fixtures import CHECK_PROP
from pytest_skilllift.plugin.options import add_options, settings_from_pytest
from pytest_skilllift.plugin.session import SkillLiftSession
from pytest_skilllift.run import wiring
from pytest_skilllift.run.prompts import (
    holds_placeholder,
    is_heldout,
    placeholder_files,
    placeholder_line,
)
from pytest_skilllift.week.files import WeekLinkError, WeekWriteError

if TYPE_CHECKING:  # imported on use, as xdist asks for a scheduler (it imports xdist's)
    from pytest_skilllift.plugin.scheduling import RunScopeScheduling

WIRE_KEY = "skilllift_settings"
SESSION_ID_KEY = "skilllift_session_id"

# The fixtures (skill_lift_judge, skill_lift_run, skill_lift_week) and their parametrization.
pytest_plugins = ["pytest_skilllift.plugin.fixtures"]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Declare the ``pytest_skilllift_*`` hooks (see ``hookspecs.py``)."""
    from pytest_skilllift.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--skill-lift`` and the ``--skill-lift-*`` / ``skill_lift_*`` settings."""
    add_options(parser)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Build the Settings once; on the controller start the demo and check the inputs."""
    config.addinivalue_line("markers", "must: a must rubric item")
    config.addinivalue_line("markers", "bonus: a bonus rubric item")
    config.addinivalue_line("markers", "avoid: an avoid rubric item")
    config.addinivalue_line("markers", "invoked: a with-skill run's skill reached (VERIFIED)")
    config.addinivalue_line("markers", "trigger: a trigger test (skill invoked iff it should)")
    config.addinivalue_line(
        "markers", "skill_lift(prompts=, families=, models=, conditions=, agents=): on a test "
        "using skill_lift_run, the runs it checks (globs). pytest-skilllift puts "
        "skill_lift(family=, skill=, prompt=, agent=) on every item of a run, for -m.")
    try:
        if _is_worker(config):
            wire = config.workerinput.get(WIRE_KEY)  # type: ignore[attr-defined]
            if wire is None:
                return
            settings = Settings.from_wire(wire)
        else:  # the demo's labels whose agent CLI is missing are left out here, named
            settings = wiring.leave_out_missing_agents(settings_from_pytest(config))
    except SettingsError as exc:
        raise pytest.UsageError(str(exc)) from None
    if not settings.enabled:
        return
    state = SkillLiftSession(settings, worker=_is_worker(config))
    scale.register(config, state)  # shards, spend cap, batch judging (every process)
    if _is_worker(config):
        workerinput = config.workerinput  # type: ignore[attr-defined]
        state.session_id = workerinput.get(SESSION_ID_KEY, state.session_id)
    from pytest_skilllift.plugin.fixtures import wire_hooks

    wire_hooks(config, state)
    if not _is_worker(config):
        _controller_setup(config, state)
        config.pluginmanager.register(ControllerPlugin(state), "skilllift-controller")
        from pytest_skilllift.plugin import estimate_hooks

        estimate_hooks.register(config, state)  # the plan and its price, before any run
    config.stash[SESSION_KEY] = state
    # SIGTERM/SIGHUP stop the session's agents like Ctrl-C (every process).
    interrupts.register(config, state, controller=not _is_worker(config))
    progress_hooks.register(config, state)
    # One bad prompt file must not stop the others: report it as a collection error, go on.
    config.option.continue_on_collection_errors = True
    _point_args_at_prompts(config, state.settings)


def _controller_setup(config: pytest.Config, state: SkillLiftSession) -> None:
    s = state.settings
    prompts = sorted(s.prompts_dir.glob("*.json")) if s.prompts_dir.is_dir() else []
    # A prompts directory the ini names must hold prompts: a typo must not silently collect
    # only the skill-creator evals.json files found elsewhere.
    named = config.getini("skill_lift_prompts") not in (None, "")
    if not prompts and (named or not collect_extra.has_inputs(s)):
        what = "does not exist" if not s.prompts_dir.is_dir() else "holds no prompt file (*.json)"
        raise pytest.UsageError(
            f"--skill-lift found no prompt files in {s.prompts_dir}: the prompts directory "
            f"(skill_lift_prompts) {what} (rootdir {s.rootdir}, ini file "
            f"{s.inifile or 'none'}). Set skill_lift_prompts in your ini file, or run from "
            "your project's root. Write path options as --skill-lift-claude=PATH: a bare path "
            "after an option is read as a test path when pytest picks the rootdir."
        )
    _check_paths(s)
    if collect_extra.has_tasks(s) and not config.option.collectonly:
        from pytest_skilllift.runners.task_docker import engine_problem

        problem = engine_problem()
        if problem:
            raise pytest.UsageError(f"--skill-lift: {problem}")
    try:  # gates validated; the week identity computed unless only listing tests
        for warning in state.ci.prepare(identity=not config.option.collectonly):
            config.issue_config_time_warning(pytest.PytestConfigWarning(warning), stacklevel=2)
    except SettingsError as exc:
        raise pytest.UsageError(str(exc)) from None
    if s.demo:
        state.start_demo()
    # The judge client and the summarizer's imports are seconds of CPU: they wait until every
    # worker is spawned (the judge client) and the first run is done (the summarizer) instead
    # of slowing the controller's start, which every worker's start waits for.
    if _uses_workers(config) and _workers_on_this_host(config):
        state.start_judge_service(warm=False)


def _check_paths(s: Settings) -> None:
    """Paths refused once, up front, naming the setting (not once per prompt, not after the
    first run): the skills root, ``--skill-lift-baseline-from``."""
    tasks_only = collect_extra.has_tasks(s) and not any(s.prompts_dir.glob("*.json"))
    if prompts_need_skills(s) and not s.skills_root.is_dir() and not tasks_only:
        raise pytest.UsageError(
            f"--skill-lift: the skills root {s.skills_root} (skill_lift_skills) does not exist "
            f"(rootdir {s.rootdir}); set skill_lift_skills in your ini file to the directory "
            "holding the skill families")
    if s.baseline_from:
        from pytest_skilllift.run.baseline import BaselineError, check_source

        try:
            check_source(Path(s.baseline_from), s.out_dir)
        except BaselineError as exc:
            raise pytest.UsageError(str(exc)) from None


def _plan_baseline(state: SkillLiftSession) -> None:
    """``--skill-lift-baseline-from``, before the first run (controller): the plan of which
    no-skill runs come from WEEKDIR, against this week's identity (``run.baseline``);
    ``SettingsError`` naming a WEEKDIR that cannot serve."""
    s = state.settings
    if not s.baseline_from or state.ci.record is None:
        return
    from pytest_skilllift.run.baseline import BaselineError, plan_session

    try:
        state.baseline_note = plan_session(s.baseline_from, s.out_dir, state.ci.record.identity,
                                           [label for label, _ in s.models])
    except BaselineError as exc:
        raise SettingsError(str(exc)) from None


def prompts_need_skills(s: Settings) -> bool:
    """Whether the session installs skills at all (an A/A week installs none)."""
    return any(c not in ("no-skill", "no-skill-b") for c in s.conditions)


def _worker_count(config: pytest.Config) -> int:
    """How many xdist workers the session starts (``--tx`` specs, ``N*spec`` counted N)."""
    count = 0
    for spec in getattr(config.option, "tx", None) or ():
        n, star, _ = str(spec).partition("*")
        count += int(n) if star and n.isdigit() else 1
    return count


def _uses_workers(config: pytest.Config) -> bool:
    """Whether xdist will start workers (``-n N`` with N > 0, or ``--tx`` gateways) and a
    distributing mode."""
    workers = getattr(config.option, "numprocesses", None)
    gateways = getattr(config.option, "tx", None)
    return bool(workers or gateways) and getattr(config.option, "dist", "no") != "no"


def _workers_on_this_host(config: pytest.Config) -> bool:
    """Whether every worker runs on this machine (``-n``, ``--tx popen``): only they reach the
    controller's judge service on loopback; remote gateways (ssh, socket) grade themselves."""
    return all(str(spec).split("//")[0].split("*")[-1].startswith("popen")
               for spec in getattr(config.option, "tx", None) or ())


def _point_args_at_prompts(config: pytest.Config, settings: Settings) -> None:
    """Without explicit paths, ``pytest --skill-lift`` means the weekly run: the prompts dir."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        extra = collect_extra.extra_args(settings)  # trigger files, skill-creator evals
        walk_prompts = settings.prompts_dir.is_dir() or not extra
        config.args = [str(settings.prompts_dir)] * walk_prompts + extra
        # The paths are the session's own now, not the project's `testpaths` (pytest's header
        # would say "testpaths: tests" for a demo run from a clone of a project that has one).
        config.args_source = pytest.Config.ArgsSource.INVOCATION_DIR
        if settings.checks_dir.exists():  # the team's own checks run with the prompts
            config.args.append(str(settings.checks_dir))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: hand the controller's resolved settings (week dir, demo endpoint) to workers."""
    state = node.config.stash.get(SESSION_KEY, None)
    if state is not None:
        node.workerinput[WIRE_KEY] = state.settings.to_wire()
        node.workerinput[SESSION_ID_KEY] = state.session_id


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> RunScopeScheduling | None:
    """Keep all items of one run on one worker (``plugin/scheduling.py``); other tests are
    grouped as loadscope groups them (module or class)."""
    if SESSION_KEY not in config.stash or config.getvalue("dist") not in ("load", "no"):
        return None
    from pytest_skilllift.plugin.scheduling import RunScopeScheduling
    from pytest_skilllift.run.matrix import run_scope

    matrix = config.stash[SESSION_KEY].matrix()
    by_path = matrix.names_by_path(config.rootpath)
    names = sorted({spec.prompt.name for spec in matrix.runs})
    return RunScopeScheduling(config, log, lambda nodeid: run_scope(nodeid, by_path, names))


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """A week collects ~10^5 nodes: the cyclic garbage collector is off while they are made
    (it would rescan the growing tree again and again) and back as it was afterwards. The
    tree is not frozen (``gc.freeze`` would change the user's process for the rest of its
    life); what that costs is in benchmarks/README.md."""
    if SESSION_KEY not in session.config.stash:
        return (yield)
    enabled = gc.isenabled()
    gc.disable()
    try:
        return (yield)
    finally:
        if enabled:
            gc.enable()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest runs first: with-skill runs read the skill (more model turns), so scheduling
    them before the no-skill runs balances a parallel week (longest-processing-time first).
    Stable and deterministic, so every xdist worker collects the same order."""
    if SESSION_KEY not in config.stash:
        return
    from pytest_skilllift.plugin.fixtures import run_of

    def order(item: pytest.Item) -> tuple[bool, bool]:
        # Whole-week tests last: by then the runs they summarize are done (in this process).
        week = "skill_lift_week" in getattr(item, "fixturenames", ())
        run = run_of(item)
        return week, not (run is not None and run.with_skill)

    items.sort(key=order)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A must missing, an avoid violated, a skill not invoked, a trigger missed: reported as
    findings with their own status (``findings.py``), not as failed tests. A week that
    cannot be written (full disk, read-only) stops the session at once, the message naming
    the path: every later run would be paid for and lost the same way."""
    report = yield
    if call.excinfo is not None and isinstance(call.excinfo.value, WeekWriteError):
        message = f"skill-lift: stopping, the week cannot be written: {call.excinfo.value}"
        item.session.shouldstop = message
        report.longrepr = message
        return report
    return findings.as_finding(item, call, report)


def pytest_report_teststatus(report: pytest.TestReport,
                             config: pytest.Config
                             ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    """A finding's category, letter and word (``48 missing`` in the final line, ``M``,
    ``MISSING``)."""
    return findings.teststatus(report)


def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A Harbor task directory under the tasks dir becomes its task's node (nothing inside
    it is collected as tests of its own)."""
    state = parent.config.stash.get(SESSION_KEY, None)
    if state is None or not (path / "task.toml").is_file():
        return None
    tasks = collect_extra.resolved_dir(state.settings.tasks_dir)
    resolved = path.resolve()
    if resolved != tasks and tasks not in resolved.parents:
        return None
    from pytest_skilllift.plugin.collect.tasks import TaskDir

    return TaskDir.from_parent(parent, path=path)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    """Prompt JSON files under the prompts dir; ``discord-*`` only with ``--skill-lift-heldout``."""
    state = parent.config.stash.get(SESSION_KEY, None)
    if state is None or file_path.suffix != ".json":
        return None
    if holds_placeholder(file_path):
        return None  # `skilllift init` left it to write: one line names it (`_evals_line`)
    resolved = file_path.resolve()
    extra = collect_extra.collect_extra_file(file_path, parent, state.settings, resolved)
    if extra is not None:
        return extra
    if collect_extra.resolved_dir(state.settings.prompts_dir) not in resolved.parents:
        return None
    if is_heldout(file_path) and not state.settings.heldout:
        return None
    return PromptFile.from_parent(parent, path=file_path)


class ControllerPlugin:
    """Registered on the controller only: tallies reports, writes the scorecard, decides
    the exit status. Workers' reports reach these hooks through xdist."""

    def __init__(self, state: SkillLiftSession) -> None:
        self.state = state
        self._hook_seen: set[tuple[str, object]] = set()
        self._collected_nodes = 0
        #: The session's exit status once decided (the closing line's colour).
        self.exitstatus: int | None = None
        #: What the circuit breakers held back (read before the registry is removed).
        self.breaker_lines: list[str] = []

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Any) -> None:
        """The first worker's collection prints the evals line; the judge client is built
        from ``pytest_runtestloop`` on (here again only if that was skipped)."""
        self._collected_nodes += 1
        if self._collected_nodes == 1:  # under xdist the controller collects nothing itself
            tr = node.config.pluginmanager.get_plugin("terminalreporter")
            if tr is not None:
                for line in self._evals_lines():
                    tr.write_line(line)
        if self._collected_nodes >= _worker_count(node.config):
            self.state.warm_judge()

    def pytest_report_collectionfinish(self) -> list[str]:
        """After "collected N items": the lint of the eval files, in one line, and the static
        check of the Harbor tasks when the project has some (``skilllift tasks check``)."""
        return self._evals_lines()

    def _evals_lines(self) -> list[str]:
        s = self.state.settings
        from pytest_skilllift.lint.evals import session_line
        from pytest_skilllift.run.tasks.check import session_line as tasks_line

        lines = [session_line(prompts_dir=s.prompts_dir, skills_root=s.skills_root,
                              triggers_dir=s.triggers_dir, rootdir=s.rootdir, site=s.site,
                              skill_creator=s.skill_creator_evals is not False)]
        todo = placeholder_line(placeholder_files(s.prompts_dir, s.triggers_dir), s.rootdir)
        tasks = tasks_line(s.tasks_dir, s.skills_root)
        left_out = None
        if tasks:  # the arms a task cannot run (with-skill@REF outside git…), each named
            from pytest_skilllift.run.tasks.plan import left_out_line

            with contextlib.suppress(SettingsError):
                left_out = left_out_line((p for p in self.state.matrix().prompts.values()
                                          if p.task is not None), s)
        return [*lines, *([todo] if todo else []), *([tasks] if tasks else []),
                *([left_out] if left_out else [])]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Before the first run (not while listing tests): the key and the CLI must be there,
        the week's identity must match its week.json; then --fresh discards the grades and
        the docker runner's stale containers are swept.

        Under xdist the controller collects nothing, so it checks whenever runs may start."""
        config = session.config
        if config.option.collectonly or (not session.items and not _uses_workers(config)):
            return
        try:
            preflight_line = wiring.check_ready_to_run(self.state.settings)
        except SettingsError as exc:
            raise pytest.UsageError(str(exc)) from None
        tr = config.pluginmanager.get_plugin("terminalreporter")
        if preflight_line and tr is not None:
            tr.write_line(preflight_line)
        try:
            self.state.ci.open_week()
            _plan_baseline(self.state)  # --skill-lift-baseline-from, against week.json
        except (SettingsError, WeekWriteError, WeekLinkError) as exc:
            self.state.refused = True
            raise pytest.UsageError(str(exc)) from None
        if self.state.settings.fresh:
            # The selected runs are regraded as they are asked for (session.weekrun's
            # regrade pass); the others keep their grades. A regrade reuses no batch result.
            forget_batches(self.state.week.root)
        if self.state.sweeps is not None:  # docker: before any worker makes a container
            self.state.sweeps.sweep("start-up")
        # Every worker is spawned by now: the judge client (the anthropic SDK's ~3,500
        # modules) is built while they import and collect, not while their first CLIs
        # start: built then, every worker's first judge call waited for it (4–12 s at
        # load 5–11 on 2 cores, benchmarks/README.md).
        self.state.warm_judge()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count outcomes per run (the run's status travels in ``user_properties``)."""
        props = {str(k): str(v) for k, v in report.user_properties}
        # A finding reports as passed with its own status; the tally counts it as a finding.
        outcome = "failed" if findings.category_of(report) else report.outcome
        self.state.tally.add(outcome, report.when, props)
        if report.when == "call":
            # A run is done (items run it in their call): import the summarizer while the
            # others run; a no-op after the first time.
            self.state.warm_judge()
            self.state.warm_summarizer()
        for key, value in report.user_properties:  # every phase's report repeats them
            if key == HOOK_ERROR_PROP and (report.nodeid, value) not in self._hook_seen:
                self._hook_seen.add((report.nodeid, value))
                self.state.tally.hook_errors.append(str(value))
        check = props.get(CHECK_PROP)
        if check is not None:
            self.state.checks.add(json.loads(check), report.when, report.outcome,
                                  _reason(report))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A prompt file that fails to load counts against the exit status."""
        if report.failed:
            self.state.tally.other_failures += 1

    @pytest.hookimpl(tryfirst=True, specname="pytest_sessionfinish")
    def start_wrap_up(self, session: pytest.Session) -> None:
        """Start writing the CSVs and the scorecard now, in the background: under xdist the
        other sessionfinish hooks wait for the workers to shut down, which needs no CPU.
        Listing the tests (``--collect-only``) writes nothing."""
        if not self.state.refused and not session.config.option.collectonly:
            self.state.start_finish()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Write CSVs and scorecard; the exit status is a report unless gates are set."""
        if self.state.refused or session.config.option.collectonly:
            return  # refused by the week's identity, or only listing: nothing ran or is written
        try:
            enough = self.state.finished()
        except (WeekWriteError, WeekLinkError) as exc:  # a clear line, not an INTERNALERROR
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(f"skill-lift: the scorecard was not written: {exc}",
                                    red=True)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        self.state.ci.finish(self.state.summary)
        if exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR,
                          pytest.ExitCode.USAGE_ERROR):
            return
        self.breaker_lines = wiring.breaker_lines(self.state.settings, self.state.inflight,
                                                  self.state.tally.runs,
                                                  self.state.tally.trigger_runs)
        if not enough or self.state.tally.hook_errors or self.breaker_lines:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif self.state.tally.other_failures == 0 and exitstatus == pytest.ExitCode.TESTS_FAILED:
            # Rubric failures are findings for the scorecard, not a broken run.
            session.exitstatus = pytest.ExitCode.OK
        if self.state.ci.failed:  # a hard gate failed, or the coverage guard tripped
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        self.exitstatus = int(session.exitstatus)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The lift table, the coverage line and where the scorecard is."""
        state, tr = self.state, terminalreporter
        tr.section("skill lift")
        if state.settings.dry_run:
            tr.write_line("DRY RUN: your prompts on the scripted stand-in; every answer, grade "
                          "and dollar is simulated (see the scorecard banner)", yellow=True)
        elif state.settings.demo:
            tr.write_line("DEMO: scripted models, not real ones (see the scorecard banner)")
        if state.settings.labels_not_run:
            tr.write_line(state.settings.labels_not_run_line, yellow=True)
        if state.summary is not None:
            # The week's graded count is said once: the coverage line says it when the
            # session made every run of the week (else both counts, each named).
            cov = state.summary.data.get("coverage", {})
            same = state.session_counts() == (cov.get("graded_runs"), cov.get("total_runs"))
            for line in state.summary.terminal_lines(counts=not same):
                tr.write_line(line)
        if state.coverage_note:
            tr.write_line(f"coverage: {state.coverage_note}")
        if state.view_note:
            tr.write_line(state.view_note)
        if state.baseline_note:
            tr.write_line(state.baseline_note)
        for line in state.sweeps.lines() if state.sweeps is not None else ():
            tr.write_line(line)
        from pytest_skilllift.report.sections.triggering import trigger_terminal_lines

        for line in trigger_terminal_lines(state.summary.data) if state.summary else []:
            tr.write_line(line)
        for line in [*state.ci.terminal_lines(), *_extension_lines(state)]:
            tr.write_line(line)
        for line in [*scale.summary_lines(state), *self.breaker_lines]:
            tr.write_line(line)
        # One line for every kind of finding (pytest's own count line has their numbers).
        line = findings.summary_line(tr.stats)
        if line:
            tr.write_line(line)
        if tr.verbosity > 0 or "p" in tr.reportchars.lower():  # -v, or -rA / -rp / -rP
            reasons = findings.reason_lines(tr.stats)
            if reasons:
                tr.section("skill-lift findings", sep="-")
                for line in reasons:
                    tr.write_line(line)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """The very last line: what ran, the lift and where the scorecard is — green when
        the exit status is 0 (after pytest's own count line, which findings make yellow)."""
        tr = config.pluginmanager.get_plugin("terminalreporter")
        summary = self.state.summary
        if tr is None or summary is None or self.exitstatus is None:
            return
        head = ("dry run (simulated: scripted stand-in, not a measurement)"
                if self.state.settings.dry_run else
                "demo ran (scripted models, not a measurement)" if self.state.settings.demo
                else "skill-lift")
        ok = self.exitstatus == pytest.ExitCode.OK
        left_out = self.state.settings.labels_not_run
        tail = (f" · {len(left_out)} label{'s' * (len(left_out) != 1)} not run (agent CLI "
                "missing, see above)" if left_out else "")
        tr.write_line(f"{head}: {summary.closing_line()}{tail}", green=ok, red=not ok,
                      bold=True)


def _reason(report: pytest.TestReport) -> str:
    """A skip's reason, or the first line of a failure's message."""
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        text = getattr(crash, "message", None) or str(report.longrepr or "")
        return text.strip().splitlines()[0] if text.strip() else ""
    return ""


def _extension_lines(state: SkillLiftSession) -> list[str]:
    """Custom checks' outcomes and hook errors, for the terminal summary."""
    lines = []
    rows = state.checks.finished()
    if rows:
        n = {o: sum(1 for r in rows if r["outcome"] == o) for o in ("passed", "failed",
                                                                    "skipped")}
        lines.append(f"custom checks: {n['passed']} passed, {n['failed']} failed, "
                     f"{n['skipped']} skipped over {len({r['run_id'] for r in rows})} runs "
                     "(scorecard: Custom checks)")
    errors = state.tally.hook_errors
    if errors:
        lines.append(f"{len(errors)} hook error(s) — exit status 1:")
        lines += [f"  {e}" for e in errors]
    return lines


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the demo server and release runners."""
    state = config.stash.get(SESSION_KEY, None)
    if state is not None:
        state.stop()
