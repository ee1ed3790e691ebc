"""pytest glue for the progress line (the counting and wording live in ``progress``).

Every process that runs items attaches a finished run's facts to the first test report of
that run (``report.skilllift_progress``: a report attribute, so it crosses xdist's
worker→controller channel with the report and stays out of junit properties). The drawing
process — the controller under ``-n``, else the only one — counts them and shows one line:

- on a terminal, a live line under pytest's own progress, erased before pytest writes and
  drawn again after, so the two never mix;
- otherwise (CI logs), one plain line per ``--skill-lift-progress-interval`` seconds;
- with ``-q``, nothing.

The final counts are written once at the end of the run (not under ``-q``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_skilllift.plugin.progress import (
    CRASHED,
    Progress,
    finished_in_ledger,
    prompt_name,
    run_facts,
)
from pytest_skilllift.run.engine import make_run_id
from pytest_skilllift.week.files import OK
from pytest_skilllift.week.ledger import Ledger

if TYPE_CHECKING:
    from pytest_skilllift.plugin.session import SkillLiftSession

#: The report attribute carrying one run's facts.
ATTR = "skilllift_progress"
#: A rubric item's test id (collect.py's nesting): the run is everything before the item. A
#: skill-creator evals.json names its eval (the prompt) after the file.
_RUBRIC_ID = re.compile(r"(?P<path>[^\[\]]+?\.json)(?:::(?P<eval>[^:\[\]]+))?::"
                        r"(?P<label>[^:\[\]]+)::(?P<condition>no-skill-b|no-skill|"
                        r"with-skill@[^:\[\]]+|with-skill|with-all)::"
                        r"r(?P<rep>\d+)::[^:\[\]]+")


class ProgressFacts:
    """Registered in every process with runs: attaches facts to each run's first report."""

    def __init__(self, week: Ledger) -> None:
        self.week = week
        self.sent: set[str] = set()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """Attach the run's facts (status, graded, cost) to its first call report."""
        report = yield
        run = getattr(item, "run", None)
        if call.when != "call" or run is None or run.run_id in self.sent:
            return report
        graded = getattr(item, "graded", None)
        if graded is None:  # the engine raised: the run did not finish normally
            not_run = _not_run_status(item)
            if report.skipped and not_run:  # the spend cap or the circuit breaker
                self.sent.add(run.run_id)
                setattr(report, ATTR, {"run_id": run.run_id, "status": not_run,
                                       "graded": False})
            elif report.failed:
                self.sent.add(run.run_id)
                setattr(report, ATTR, {"run_id": run.run_id, "status": CRASHED,
                                       "graded": False})
            return report
        self.sent.add(run.run_id)
        ok = graded.status == OK and graded.judge_error is None and bool(graded.rows)
        setattr(report, ATTR, run_facts(
            self.week, run.run_id, graded.status, graded=ok,
            generated_now=graded.generated_now, judged_now=graded.judged_now))
        return report


def _not_run_status(item: pytest.Item) -> str:
    """``not_run…`` when the item's run was not started (its ``skilllift_run`` property)."""
    for key, value in getattr(item, "user_properties", ()):
        if key == "skilllift_run" and str(value).partition("|")[2].startswith("not_run"):
            return str(value).partition("|")[2]
    return ""


class ProgressLine:
    """Registered on the drawing process: counts runs and shows the line."""

    def __init__(self, config: pytest.Config, week: Ledger, week_key: str,
                 interval_s: float) -> None:
        self.config = config
        self.week = week
        self.week_key = week_key
        self._names: dict[str, str] = {}
        self.interval_s = interval_s
        self.progress = Progress()
        self.quiet = config.get_verbosity() < 0
        self._drawn = False
        self._col = 0
        self._last_print = time.monotonic()
        self._workers: set[str] = set()

    # -- totals -------------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """The total: the runs the collected items belong to (those already final in the ledger
        count as done)."""
        ids = {run.run_id for item in session.items if (run := getattr(item, "run", None))}
        if ids:
            self.progress.set_total(ids, finished_in_ledger(self.week, ids))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under ``-n`` the controller collects nothing: the runs are the workers' item ids
        up to the last ``::`` (every worker collects the same)."""
        self._workers.add(str(getattr(getattr(node, "gateway", None), "id", node)))
        self.progress.workers = len(self._workers)
        if self.progress.total == 0:
            ids_ = {run_id for nodeid in ids if (run_id := self._run_id(nodeid)) is not None}
            if ids_:
                self.progress.set_total(ids_, finished_in_ledger(self.week, ids_))

    def _run_id(self, nodeid: str) -> str | None:
        """A rubric item's id (``<file>.json[::<eval>]::<model>::<condition>::r<rep>::<item>``)
        → the run id the engine uses; None for any other test (a custom check, a trigger
        test, a plain test)."""
        match = _RUBRIC_ID.fullmatch(nodeid)
        if match is None:
            return None
        name = match["eval"]
        if name is None:
            path = match["path"]
            if path not in self._names:
                self._names[path] = prompt_name(self.config.rootpath / path)
            name = self._names[path]
        return make_run_id(name, match["label"], match["condition"], int(match["rep"]),
                           self.week_key)

    # -- reports ------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logstart(self) -> Generator[None, None, None]:
        """Erase the line while pytest writes a test's log, then draw it again."""
        self._erase()
        try:
            return (yield)
        finally:
            self._draw()

    # The end of a test's log clears and redraws the line exactly as its start does.
    pytest_runtest_logfinish = pytest_runtest_logstart

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, None, None]:
        """Count a finished run from its report's facts, around pytest's own writing."""
        self._erase()
        try:
            return (yield)
        finally:
            facts = getattr(report, ATTR, None)
            if isinstance(facts, dict) and self.progress.add(facts):
                self._changed = True
            self._draw()

    # Innermost wrapper: the line goes before pytest writes its final "[100%]".
    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtestloop(self) -> Generator[None, object, object]:
        """When the runs are over: erase the line for good, before pytest's "[100%]"."""
        try:
            return (yield)
        finally:
            self._erase()
            self._live = False

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        """Erase the line for good before the session's summary."""
        self._erase()
        self._live = False

    @pytest.hookimpl(trylast=True)  # inside the "skill lift" section, after its lines
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The final counts, once (not under ``-q``)."""
        if not self.quiet and self.progress.total:
            terminalreporter.write_line(self.progress.line())

    # -- drawing ------------------------------------------------------------------------
    _live = True
    _changed = False

    def _reporter(self) -> Any:
        return self.config.pluginmanager.get_plugin("terminalreporter")

    def _tty(self, tr: Any) -> Any:
        """The terminal writer when pytest writes to a terminal (the reporter's public
        ``isatty``), else None. The live line goes through its ``write_raw``, which does not
        move the column pytest counts for its result letters (``write`` would)."""
        isatty = getattr(tr, "isatty", None)
        return self.config.get_terminal_writer() if callable(isatty) and isatty() else None

    def _erase(self) -> None:
        if not self._drawn:
            return
        tr = self._reporter()
        out = self._tty(tr) if tr is not None else None
        if out is not None:
            # Clear our line, go back up to the end of pytest's line.
            out.write_raw("\r\x1b[2K\x1b[1A" + (f"\x1b[{self._col}C" if self._col else ""),
                          flush=True)
        self._drawn = False

    def _draw(self) -> None:
        if self.quiet or not self._live or self.progress.total == 0:
            return
        tr = self._reporter()
        if tr is None:
            return
        tw = self._tty(tr)
        if tw is not None:
            width = getattr(tw, "fullwidth", 80)
            self._col = tw.width_of_current_line
            tw.write_raw("\n" + self.progress.line()[: max(10, width - 1)], flush=True)
            self._drawn = True
        elif self._changed and time.monotonic() - self._last_print >= self.interval_s:
            # Not a terminal: no redrawing, one plain line per interval when runs finished.
            self._changed = False
            self._last_print = time.monotonic()
            tw = self.config.get_terminal_writer()
            if tw.width_of_current_line:  # pytest's result letters are mid-line
                tw.line()
            tw.line(self.progress.line())


def register(config: pytest.Config, state: SkillLiftSession) -> None:
    """Register the fact carrier (every process with runs) and, on the controller, the
    line; nothing for ``--collect-only``."""
    if config.option.collectonly:
        return
    config.pluginmanager.register(ProgressFacts(state.week), "skilllift-progress-facts")
    if not state.worker:
        s = state.settings
        line = ProgressLine(config, state.week, s.week, s.progress_interval_s)
        line.progress.simulated = s.demo  # the stand-in's dollars are scripted, not paid
        config.pluginmanager.register(line, "skilllift-progress-line")
