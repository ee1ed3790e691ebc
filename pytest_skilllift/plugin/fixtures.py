"""pytest glue for writing your own evals: the fixtures, their parametrization, the hooks' wiring.

- ``skill_lift_judge`` (session): the judge every rubric item is graded through; override it
  in a ``conftest.py`` (wrap it or replace it) and every graded run of the session uses yours.
- ``skill_lift_run``: a test requesting it is parametrized over the week's runs (ids
  ``[<prompt>::<model>::<condition>::r<rep>]``) and receives one run, generated and graded
  once and shared with that run's rubric items; ``@pytest.mark.skill_lift(prompts=…,
  families=…, models=…, conditions=…)`` narrows the runs.
- ``skill_lift_week`` (session): the week directory and its numbers, every run of the
  session finished first.

Loaded by ``plugin/hooks.py`` (``pytest_plugins``); nothing here computes.
PYTEST_DONT_REWRITE: pytest's documented marker — this module has no asserts to rewrite.
"""

from __future__ import annotations

import json
import warnings
from typing import TYPE_CHECKING, Any

import pytest

from pytest_skilllift.judge.session_judge import SessionJudge, SkillLiftJudge
from pytest_skilllift.model import ItemVerdict, RunSpec
from pytest_skilllift.plugin.collect.invoked import InvokedTest
from pytest_skilllift.plugin.collect.items import SESSION_KEY, RubricTest, report_hook_errors
from pytest_skilllift.plugin.hookcalls import HookError, call_hook
from pytest_skilllift.plugin.session import SkillLiftSession
from pytest_skilllift.report.week_view import SkillLiftWeek
from pytest_skilllift.run.matrix import keywords_of, narrow, run_key
from pytest_skilllift.run.view import SkillLiftRun
from pytest_skilllift.week.files import OK, RUN_FILE

if TYPE_CHECKING:
    from pytest_skilllift.report.card import Scorecard
    from pytest_skilllift.report.extra_sections import Section

#: user_properties key of a check item: its id without the run, and the run's coordinates.
CHECK_PROP = "skilllift_check"
NEEDS_FLAG = "needs --skill-lift (or --skill-lift-demo)"


def _state(config: pytest.Config, what: str) -> SkillLiftSession:
    state = config.stash.get(SESSION_KEY, None)
    if state is None:
        pytest.skip(f"{what} {NEEDS_FLAG}")
    return state


@pytest.fixture(scope="session")
def skill_lift_judge(request: pytest.FixtureRequest) -> SessionJudge:
    """The session's judge: ``grade(prompt, answer, rubric) -> JudgeResult``.

    The configured judge model with the blind, shuffled protocol, the evidence check,
    retries and cost accounting; under ``-n`` the controller's one shared client. Every rubric
    item of the session is graded through this fixture: override it in a ``conftest.py``
    (request ``skill_lift_judge`` in your own fixture of that name to wrap it).
    """
    return _state(request.config, "skill_lift_judge").judge


@pytest.fixture
def skill_lift_run(request: pytest.FixtureRequest,
                   skill_lift_judge: SkillLiftJudge) -> SkillLiftRun:
    """One run of the week (final answer, transcript and events, signals, audit, cost,
    grades), generated and graded once and shared with its rubric items. An excluded run
    skips the test with the reason."""
    state = _state(request.config, "skill_lift_run")
    spec = getattr(request, "param", None)
    if not isinstance(spec, RunSpec):
        pytest.fail("skill_lift_run is parametrized by pytest-skilllift over the week's runs; "
                    "narrow it with @pytest.mark.skill_lift(prompts=…, conditions=…) instead "
                    "of parametrizing it yourself", pytrace=False)
    graded = state.result(spec, skill_lift_judge)
    status = "ungraded" if graded.judge_error else graded.status
    request.node.user_properties.append(("skilllift_run", f"{graded.run_id}|{status}"))
    if graded.status != OK:
        pytest.skip(f"run excluded ({graded.status}): {graded.reason}")
    return state.run_view(spec)


@pytest.fixture(scope="session")
def skill_lift_week(request: pytest.FixtureRequest,
                    skill_lift_judge: SkillLiftJudge) -> SkillLiftWeek:
    """The week directory and its numbers for whole-week assertions (your own gate in
    Python). Every run this session collected is finished first — generated and graded
    exactly once, by whichever process gets to it — so the numbers cover them all.
    Custom-check outcomes are tallied when the session ends and are not in it."""
    state = _state(request.config, "skill_lift_week")
    runs: dict[str, RunSpec] = {}
    for item in request.session.items:
        spec = run_of(item)
        if spec is not None:
            runs.setdefault(spec.run_id, spec)
    for spec in runs.values():
        state.result(spec, skill_lift_judge)
    from pytest_skilllift.report.summarize import summarize_week

    if any(state.week.root.glob(f"*/{RUN_FILE}")):
        state.week.rebuild_csvs()
    return SkillLiftWeek(state.week.root, summarize_week(state.week.root, write=False,
                                                         plots=False))


def run_of(item: pytest.Item) -> RunSpec | None:
    """The run an item belongs to (a run's own item, or a check parametrized with
    ``skill_lift_run``), else None."""
    if isinstance(item, (RubricTest, InvokedTest)):  # an item of the run's own node
        return item.run
    callspec = getattr(item, "callspec", None)
    spec = callspec.params.get("skill_lift_run") if callspec is not None else None
    return spec if isinstance(spec, RunSpec) else None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item) -> None:
    """Hook errors raised while this phase generated or graded a run (a rubric item, a check,
    a whole-week test) travel with its report — to the controller under -n."""
    if SESSION_KEY in item.config.stash:
        report_hook_errors(item)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``skill_lift_run`` over the week's runs, narrowed by the marker."""
    if "skill_lift_run" not in metafunc.fixturenames:
        return
    state = metafunc.config.stash.get(SESSION_KEY, None)
    if state is None:
        return  # the fixture skips, saying the flag is needed
    options: dict[str, Any] = {}
    for mark in reversed(list(metafunc.definition.iter_markers("skill_lift"))):
        if mark.args:
            pytest.fail(f"{metafunc.definition.nodeid}: @pytest.mark.skill_lift takes keyword "
                        f"arguments only (prompts=, families=, models=, conditions=), got "
                        f"{mark.args!r}", pytrace=False)
        options.update(mark.kwargs)
    matrix = state.matrix()
    if matrix.problems and not state.matrix_warned:
        state.matrix_warned = True  # once a session: the same files fail the rubric items too
        for problem in matrix.problems:
            warnings.warn(pytest.PytestWarning(
                f"skill_lift_run: prompt file left out of the checks' runs: {problem}"),
                stacklevel=1)
    try:
        runs = narrow(matrix.runs, options)
    except ValueError as exc:
        pytest.fail(f"{metafunc.definition.nodeid}: {exc}", pytrace=False)
    params = []
    for spec in runs:
        family, leaf = keywords_of(spec.prompt)
        params.append(pytest.param(spec, id=run_key(spec), marks=pytest.mark.skill_lift(
            family=family, skill=leaf, prompt=spec.prompt.name, agent=spec.agent)))
    metafunc.parametrize("skill_lift_run", params, indirect=True)


def pytest_itemcollected(item: pytest.Item) -> None:
    """A check of one run: the run's family and leaf as ``-k`` keywords, and what the
    controller needs to tally its outcome (travels with every report, also from workers)."""
    spec = run_of(item) if not isinstance(item, (RubricTest, InvokedTest)) else None
    if spec is None:
        return
    item.extra_keyword_matches.update((*keywords_of(spec.prompt), spec.agent))
    callspec = item.callspec  # type: ignore[attr-defined]
    rest = callspec.id.replace(run_key(spec), "", 1).strip("-")
    test = item.nodeid.split("[", 1)[0] + (f"[{rest}]" if rest else "")
    meta = {"test": test, "prompt": spec.prompt.name, "skill_family": spec.prompt.family,
            "model": spec.model_label, "condition": spec.condition, "rep": str(spec.rep),
            "run_id": spec.run_id}
    item.user_properties.append((CHECK_PROP, json.dumps(meta, sort_keys=True)))


def wire_hooks(config: pytest.Config, state: SkillLiftSession) -> None:
    """Connect the session's hook points to ``pytest_skilllift_*`` implementations."""
    hook, root = config.hook, config.rootpath

    def make_runner() -> Any:
        out = call_hook(hook.pytest_skilllift_make_runner, root, firstresult=True,
                        config=config)
        if out.errors:
            raise HookError("; ".join(out.errors))
        return out.first

    def run_finished(run: SkillLiftRun) -> list[str]:
        return call_hook(hook.pytest_skilllift_run_finished, root, config=config,
                         run=run).errors

    def run_graded(run: SkillLiftRun, verdicts: tuple[ItemVerdict, ...]) -> list[str]:
        return call_hook(hook.pytest_skilllift_run_graded, root, config=config, run=run,
                         verdicts=verdicts).errors

    def sections(data: Scorecard) -> tuple[list[Section], list[str]]:
        from pytest_skilllift.report.extra_sections import sections_from

        out = call_hook(hook.pytest_skilllift_scorecard_sections, root, config=config,
                        scorecard=data)
        found: list[Section] = []
        errors = list(out.errors)
        for name, value in out.results:
            try:
                found += sections_from(value, name)
            except ValueError as exc:
                errors.append(f"pytest_skilllift_scorecard_sections in {name}: {exc}")
        return found, errors

    state.runner_hook = make_runner
    state.run_finished_hook = run_finished
    state.run_graded_hook = run_graded
    state.sections_hook = sections
