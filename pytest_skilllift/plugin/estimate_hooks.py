"""pytest glue for the price before the run (``run.estimate``): after collection the
controller prints the plan and its estimate — with ``--collect-only`` too, where nothing runs
and nothing is written — and a session that runs records it in the week (``estimate.json``)
before its first run. Registered on the controller only; it computes nothing itself.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pytest

from pytest_skilllift.model import CLAUDE_CODE, RunSpec, split_agent
from pytest_skilllift.plugin.fixtures import run_of
from pytest_skilllift.plugin.session import SkillLiftSession
from pytest_skilllift.run import estimate as est
from pytest_skilllift.run.concurrency import default_cap
from pytest_skilllift.run.matrix import run_key, run_scope


def _workers(config: pytest.Config) -> int:
    """The xdist workers ``-n`` / ``--tx`` asks for (also under ``--collect-only``, where
    xdist starts none), 1 without xdist."""
    n = getattr(config.option, "numprocesses", None)
    if isinstance(n, str):
        n = os.cpu_count() or 1 if n in ("auto", "logical") else int(n) if n.isdigit() else 1
    if isinstance(n, int) and n > 0:
        return n
    count = 0
    for spec in getattr(config.option, "tx", None) or ():
        num, star, _ = str(spec).partition("*")
        count += int(num) if star and num.isdigit() else 1
    return max(1, count)


class EstimatePlugin:
    """The plan's lines after collection; ``estimate.json`` before the first run."""

    def __init__(self, state: SkillLiftSession, config: pytest.Config) -> None:
        self.state = state
        self.config = config
        self.estimate: est.Estimate | None = None
        self._recorded = False

    def compute(self, specs: Sequence[RunSpec]) -> est.Estimate:
        """The estimate of running ``specs`` with the session's settings."""
        s = self.state.settings
        from pytest_skilllift.week.spend import SpendMeter

        workers = _workers(self.config)
        cap = default_cap(s.max_concurrency,
                          claude_code=any(split_agent(m)[0] == CLAUDE_CODE for _, m in s.models),
                          workers=workers)
        planned = est.plan_runs(specs, s.out_dir, fresh=s.fresh,
                                baseline_from=str(s.baseline_from or ""))
        weeks = est.previous_weeks(s.out_dir)
        now = SpendMeter(s.out_dir).spent() if s.out_dir.is_dir() else None
        spent = (now.generation_usd, now.judge_usd) if now is not None else (0.0, 0.0)
        self.estimate = est.estimate(
            planned, est.read_history(weeks), judge_model=s.judge_model,
            judge_samples=s.judge_samples, workers=workers, concurrency=cap,
            cap_usd=s.max_spend_usd, spent=spent, history_weeks=[w.name for w in weeks])
        return self.estimate

    def pytest_report_collectionfinish(self, items: Sequence[pytest.Item]) -> list[str]:
        """Not under xdist (its controller collects nothing; see the node hook below)."""
        runs: dict[str, RunSpec] = {}
        for item in items:
            run = run_of(item)
            if run is not None:
                runs.setdefault(run.run_id, run)
        if not runs:
            return []
        return self._lines(list(runs.values()))

    def _lines(self, specs: Sequence[RunSpec]) -> list[str]:
        """The plan's lines; an estimate that cannot be made is said, never a failed run."""
        try:
            return est.lines(self.compute(specs), simulated=self.state.settings.demo)
        except (OSError, ValueError) as exc:
            return [f"skill-lift plan: no estimate ({type(exc).__name__}: {exc})"]

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        """Under xdist: the first worker's collection (its test ids) is the selection."""
        if self.estimate is not None:
            return
        matrix = self.state.matrix()
        by_key = {run_key(r): r for r in matrix.runs}
        names_by_path = matrix.names_by_path(self.state.settings.rootdir)
        names = {r.prompt.name for r in matrix.runs}
        selected: dict[str, RunSpec] = {}
        for nodeid in ids:
            scope = run_scope(nodeid, names_by_path, names)
            spec = by_key.get(scope.removeprefix("run:")) if scope else None
            if spec is not None:
                selected.setdefault(spec.run_id, spec)
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        lines = self._lines(list(selected.values()))
        if tr is not None:
            for line in lines:
                tr.write_line(line)
        self._record()

    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """After the controller opened the week (its runtestloop hook runs first)."""
        self._record()

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """After the lift table: what rate limits did to the session's concurrency."""
        if self.config.option.collectonly:
            return
        from pytest_skilllift.run.concurrency import summary_line
        from pytest_skilllift.week.files import CONCURRENCY_FILE

        line = summary_line(self.state.settings.out_dir / CONCURRENCY_FILE)
        if line:
            terminalreporter.write_line(line, yellow=True)

    def _record(self) -> None:
        if (self._recorded or self.estimate is None or self.state.refused
                or self.config.option.collectonly or not self.state.settings.out_dir.is_dir()):
            return
        self._recorded = True
        est.record(self.state.settings.out_dir, self.estimate)


def register(config: pytest.Config, state: SkillLiftSession) -> None:
    """On the controller."""
    config.pluginmanager.register(EstimatePlugin(state, config), "skilllift-estimate")
