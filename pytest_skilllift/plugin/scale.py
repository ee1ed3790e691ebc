"""pytest glue for a week at CI scale: ``--skill-lift-shard``, ``--skill-lift-max-spend`` and
``--skill-lift-judge-batch``. Registered by ``plugin.py`` on the controller and on every xdist
worker; it computes nothing itself (the split is ``week.shards``, the spend ``week.spend``, the
batch step ``run.batch_grade``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

from pytest_skilllift.model import RunSpec
from pytest_skilllift.plugin.collect.items import RubricTest
from pytest_skilllift.plugin.collect.triggers import TriggerTest
from pytest_skilllift.plugin.fixtures import run_of
from pytest_skilllift.plugin.session import SkillLiftSession
from pytest_skilllift.run import wiring
from pytest_skilllift.week.files import TRIGGERS_DIR
from pytest_skilllift.week.shards import (
    TRIGGER,
    RunKey,
    Shard,
    ShardError,
    ShardPlan,
    assign,
    read_plan,
    record_shard,
    write_plan,
)

if TYPE_CHECKING:
    from pytest_skilllift.judge.batch import BatchJudge


def _runs(items: list[pytest.Item]) -> dict[str, RunSpec]:
    """The runs of the items (rubric items, and checks parametrized over ``skill_lift_run``),
    in item order."""
    runs: dict[str, RunSpec] = {}
    for item in items:
        run = run_of(item)
        if run is not None:
            runs.setdefault(run.run_id, run)
    return runs


def _shard_unit(item: pytest.Item) -> tuple[str, RunKey] | None:
    """The run an item belongs to, for the split: its directory relative to the week and its
    key (a trigger run lives in ``triggers/``). None for a test of no run."""
    run = run_of(item)
    if run is not None:
        return run.run_id, RunKey(run.prompt.name, run.model_label, run.condition, run.rep,
                                  run.with_skill)
    if isinstance(item, TriggerTest):
        spec = item.spec
        return (f"{TRIGGERS_DIR}/{spec.run_id}",
                RunKey(spec.prompt_name, spec.model_label, TRIGGER, spec.rep, True))
    return None


def _refuse_overridden_judge(items: list[pytest.Item]) -> None:
    """Batch judging sends the configured judges' requests to their batch APIs; a
    ``skill_lift_judge`` replaced in a conftest.py would be bypassed, so say so and stop."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.get("skill_lift_judge") if info is not None else None
        if not defs:
            continue
        func = getattr(defs[-1], "func", None)
        where = getattr(func, "__module__", "pytest_skilllift.plugin.fixtures")
        if where != "pytest_skilllift.plugin.fixtures":
            raise pytest.UsageError(
                f"--skill-lift-judge-batch grades with the configured judge through its "
                f"provider's batch API, but skill_lift_judge is overridden (in {where}); run "
                "without --skill-lift-judge-batch to grade through your judge")
        return


def _worker_index(config: pytest.Config) -> int:
    workerinput = getattr(config, "workerinput", None)
    wid = str(workerinput.get("workerid", "gw0")) if workerinput else "gw0"
    return int(wid[2:]) if wid[2:].isdigit() else 0


class ScalePlugin:
    """Shard selection, the batch-judging phase, and their lines in the terminal summary."""

    def __init__(self, state: SkillLiftSession) -> None:
        self.state = state
        shard = state.settings.shard
        self.shard = Shard.parse(shard) if shard else None
        self.plan: ShardPlan | None = None

    # -- shards ------------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        """Keep this shard's runs. Runs first, before ``-k``/``-m`` deselect anything, so a
        run's shard depends on the prompt set alone, never on the selection."""
        if self.shard is None:
            return
        units = {item: _shard_unit(item) for item in items}
        keys = dict(u for u in units.values() if u is not None)
        placed = assign(keys.values(), self.shard.count)
        shard_of = {rid: placed[key] for rid, key in keys.items()}
        n_items = Counter(u[0] for item, u in units.items() if u is not None
                          and isinstance(item, (RubricTest, TriggerTest)))
        self.plan = ShardPlan(self.shard, shard_of, dict(n_items))
        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        for item in items:
            # A run's checks go where its rubric items go; tests of no run (whole-week
            # tests) stay in every shard and see that shard's runs.
            unit = units[item]
            mine = unit is None or shard_of[unit[0]] == self.shard.index
            (keep if mine else drop).append(item)
        if drop:
            items[:] = keep
            config.hook.pytest_deselected(items=drop)

    # -- before the first item: the plan on file, then (batch judging) generate and grade ------
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Before the first item: record this shard and the plan; with batch judging, generate
        every run, then grade them in batches."""
        if session.config.option.collectonly:
            return
        if self.shard is not None and not self.state.worker:
            # After the controller wrote week.json (its runtestloop hook runs first).
            try:
                record_shard(self.state.settings.out_dir, self.shard)
            except ShardError as exc:
                self.state.refused = True
                raise pytest.UsageError(str(exc)) from None
        if self.plan is not None:
            write_plan(self.state.settings.out_dir, self.plan)
        if self.state.settings.judge_batch:
            specs = list(_runs(session.items).values())
            if specs:
                _refuse_overridden_judge(session.items)
                self._generate_then_grade(session.config, specs)

    def _generate_then_grade(self, config: pytest.Config, specs: list[RunSpec]) -> None:
        from pytest_skilllift.run.batch_grade import generate_first, grade_in_batches
        from pytest_skilllift.run.triggers import skill_families

        tr = None if hasattr(config, "workerinput") else \
            config.pluginmanager.get_plugin("terminalreporter")

        def say(line: str) -> None:
            if tr is not None:
                tr.write_line(f"[skill-lift batch] {line}")

        from pytest_skilllift.run.batch_grade import panel_of

        state = self.state
        judge = wiring.batch_judge(state.settings, state.week, log=say)
        paths = batch_paths(panel_of(judge))
        say(f"generating {len(specs)} run(s) first; they are graded in batches after ({paths})")
        n = {"done": 0}

        def progress(spec: RunSpec, status: str) -> None:
            n["done"] += 1
            say(f"  [{n['done']}/{len(specs)}] {spec.run_id}: {status}")

        try:
            generate_first(state.weekrun, specs, offset=_worker_index(config),
                           progress=progress)
            from pytest_skilllift.judge.panel import PanelCache

            s = state.settings
            phase = grade_in_batches(state.weekrun, specs, judge, state.batch_results,
                                     samples=s.judge_samples,
                                     families=skill_families(s.skills_root),
                                     mask=s.judge_mask, cache=PanelCache(state.week.root),
                                     evidence_policy="flag" if s.evidence == "flag"
                                     else "reject")
        except ValueError as exc:  # an unreadable judge-batches.json: stop before paying twice
            raise pytest.UsageError(str(exc)) from None
        finally:
            for _name, one in panel_of(judge):
                one.close()
        if phase.requested:
            say(f"graded {phase.graded} of {phase.requested} run(s) in batches "
                f"(submitted {len(phase.submitted)}, resumed {len(phase.resumed)}); "
                f"{len(phase.ungraded)} ungraded" + files_note(phase.deleted,
                                                              phase.undeleted))


def files_note(deleted: list[str], undeleted: dict[str, str]) -> str:
    """The batch line's account of the provider's files (OpenAI's batch input, output and
    error files): how many were deleted and, never silently, how many stay and which."""
    if not deleted and not undeleted:
        return ""
    note = f"; {len(deleted)} provider file(s) deleted"
    if undeleted:
        note += (f", {len(undeleted)} could not be deleted and stay on the provider's "
                 f"storage ({', '.join(sorted(undeleted))}; why in judge-batches.json)")
    return note


def batch_paths(judges: Sequence[tuple[str, BatchJudge]]) -> str:
    """Which path each judge's grading takes, with the price it is billed at: ``judge via
    API (batch, 50% of list)`` — the cost line of batch judging."""
    from pytest_skilllift.judge.batch import BATCH_PRICE_FACTOR

    return "; ".join(f"{name} via the {judge.api_name} API at {BATCH_PRICE_FACTOR:.0%} of the "
                     "list price" for name, judge in judges)


def summary_lines(state: SkillLiftSession) -> list[str]:
    """The terminal summary's lines for shards, the spend cap and batch judging."""
    s = state.settings
    lines: list[str] = []
    if s.shard:
        try:
            plan = read_plan(s.out_dir)
        except ValueError as exc:
            plan = None
            lines.append(f"shard {s.shard}: {exc}")
        if plan is not None:
            mine, total = plan.mine, len(plan.runs)
            others = [r for r in plan.runs if r not in set(mine)]
            lines.append(
                f"shard {plan.shard}: this job's share is {len(mine)} of the week's {total} "
                f"runs ({plan.items_of(mine)} items); the other {len(others)} runs "
                f"({plan.items_of(others)} items) are deselected: they belong to the other "
                f"{plan.shard.count - 1} shard(s). Merge the shards with skilllift merge.")
    spend = state.spend
    if spend is not None and spend.cap_usd is not None:
        cap = s.max_spend_usd if s.max_spend_usd is not None else spend.cap_usd
        line = (f"spend: ${spend.spent_usd:.2f} of the ${cap:.2f} cap (generation "
                f"${spend.generation_usd:.2f}, judge ${spend.judge_usd:.2f})")
        if spend.not_run_spend_cap:
            line += (f"; cap reached: {len(spend.not_run_spend_cap)} run(s) not run: spend "
                     "cap (raise --skill-lift-max-spend and run again to finish the week)")
        lines.append(line)
    if s.judge_batch:
        from pytest_skilllift.judge.batch import BATCH_PRICE_FACTOR, BatchStore
        from pytest_skilllift.judge.factory import session_judges
        from pytest_skilllift.judge.providers import BATCH_APIS

        lines.append("batch judging: " + "; ".join(
            f"{spec.name} via the {BATCH_APIS[spec.provider]} API at "
            f"{BATCH_PRICE_FACTOR:.0%} of the list price"
            for spec in session_judges(s.judge_model, s.judges)))

        store = BatchStore(s.out_dir)
        try:
            store.load()
        except ValueError as exc:
            lines.append(f"batch judging: {exc}")
        else:
            current = [b for b in store.batches if b.get("epoch") == store.epoch]
            if current:
                done = sum(1 for b in current if b.get("status") == "ended")
                apis = sorted({BATCH_APIS.get(str(b.get("api") or "anthropic"), "?")
                               for b in current})
                left = store.files_left()
                lines.append(f"batch judging: {len(current)} batch(es) on file through "
                             f"{', '.join(apis)} ({done} ended), ids in {store.path.name}; "
                             f"judge cost at the batch price ({BATCH_PRICE_FACTOR:.0%} of "
                             "the list price, each provider's published batch discount)"
                             + (f"; {len(left)} provider file(s) could not be deleted and "
                                f"stay on the provider's storage ({', '.join(sorted(left))})"
                                if left else ""))
    return lines


def register(config: pytest.Config, state: SkillLiftSession) -> ScalePlugin:
    """Register the plugin (every process of the session)."""
    plugin = ScalePlugin(state)
    config.pluginmanager.register(plugin, "skilllift-scale")
    return plugin
