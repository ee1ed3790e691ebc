"""What a session is built from, made from its ``Settings``: the agent configuration, the
runner, the grader, the batch step, and the parts the engine and the trigger runs share (the
concurrency limit, the circuit breakers, the spend gate). No pytest here: the pytest glue
(``plugin/session.py``) holds one of each and calls these factories.

Everything is a plain function of the settings (and the session's in-flight registry), so
the factories can be read — and tested — without a pytest session.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_skilllift.agents import registry
from pytest_skilllift.config import Settings, SettingsError
from pytest_skilllift.judge.protocol import Grader
from pytest_skilllift.model import CLAUDE_CODE, AgentConfig, JudgeResult, RunSpec, split_agent
from pytest_skilllift.run.breaker import NOT_RUN_OUTAGE, CircuitBreaker
from pytest_skilllift.run.concurrency import ConcurrencyLimit, default_cap
from pytest_skilllift.run.engine import WeekRun
from pytest_skilllift.runners import agents
from pytest_skilllift.runners.base import Runner
from pytest_skilllift.runners.claude import find_claude
from pytest_skilllift.runners.inflight import Inflight
from pytest_skilllift.week.files import CONCURRENCY_FILE, TRIGGERS_DIR
from pytest_skilllift.week.ledger import Ledger

if TYPE_CHECKING:
    from pytest_skilllift.run.batch_grade import BatchJudges, BatchResults
    from pytest_skilllift.run.triggers import TriggerRun
    from pytest_skilllift.week.spend import SpendRecord

#: A reason not to start a run (``WeekRun.start_gate``), or None to start it.
StartGate = Callable[[RunSpec], "str | None"]


# -- the agents ------------------------------------------------------------------------
def leave_out_missing_agents(settings: Settings) -> Settings:
    """The settings without the optional labels (the demo's Codex and Gemini CLI labels)
    whose agent CLI this session cannot run — not installed here, or, with the docker runner,
    not in the image — each named with its fix (``Settings.labels_not_run``), so the demo
    still runs its Claude Code labels on a machine without them. With
    ``--skill-lift-agent-install`` (local runner) nothing is left out: :func:`agent_config`
    installs them. Labels a user asked for are never optional (a usage error instead)."""
    wanted = {label: split_agent(model)[0] for label, model in settings.models
              if label in settings.optional_labels}
    if not wanted or (settings.agent_install and settings.runner != "docker"):
        return settings
    if settings.runner == "docker":
        have = image_agents(settings.image)
        missing = {label: f"{agent} CLI not in the docker image {settings.image} "
                          f"(skilllift image add-agents --base {settings.image} --tag TAG, "
                          "then --skill-lift-image=TAG)"
                   for label, agent in wanted.items() if agent not in have}
    else:
        missing = {label: f"{name} CLI not installed (npm i -g "
                          f"{registry.agent(name).pinned}, or --skill-lift-agent-install)"
                   for label, name in wanted.items() if agents.find_cli(name) is None}
    return settings.without_labels(missing)


def image_agents(image: str) -> dict[str, str]:
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


def other_agents(settings: Settings) -> list[str]:
    """The agents beside Claude Code that the labels name, in label order."""
    found = (split_agent(m)[0] for _, m in settings.models)
    return list(dict.fromkeys(a for a in found if a != CLAUDE_CODE))


def agent_env(settings: Settings) -> dict[str, str]:
    """The session's own variables for the runs (over the host's): its extra environment
    and, with a base URL, each agent's base-URL variable."""
    env = dict(settings.extra_env)
    if settings.base_url:
        # Every agent reaches the same endpoint through its own variable (the demo).
        env.update({a.base_url_var: settings.base_url + a.stand_in_path
                    for a in registry.AGENTS.values()})
    return env


def agent_config(settings: Settings) -> AgentConfig:
    """How every run of the session calls its agent CLI; ``SettingsError`` when a CLI cannot
    be found (or installed, with ``--skill-lift-agent-install``) or an agent's URL is bad."""
    s = settings
    env = agent_env(s)
    others = other_agents(s)
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
        paths = _agent_paths(s, others)
    return AgentConfig(claude_path=claude, skills_root=s.skills_root,
                       allowed_tools=s.allowed_tools, permission_mode=s.permission_mode,
                       max_turns=s.max_turns, max_budget_usd=s.max_budget_usd,
                       timeout_s=s.timeout_s, env=env, allow_unsafe=s.allow_unsafe,
                       agent_paths=paths,
                       max_family_bytes=int(s.max_family_mb * 2**20) or None)


def _agent_paths(settings: Settings, wanted: list[str]) -> dict[str, str]:
    """Each agent's CLI; a missing one is installed (``--skill-lift-agent-install``) or
    a usage error naming its npm package."""
    paths = {a: agents.find_cli(a) for a in wanted}
    missing = [a for a, p in paths.items() if p is None]
    if missing and settings.agent_install:
        error = agents.npm_install(missing, agents.default_install_dir())
        if error:
            raise SettingsError(f"--skill-lift-agent-install: {error}")
        paths.update({a: agents.find_cli(a) for a in missing})
        missing = [a for a, p in paths.items() if p is None]
    if missing:
        raise SettingsError("; ".join(agents.missing_cli_message(a) for a in missing))
    return {a: p for a, p in paths.items() if p is not None}


# -- before the first run ----------------------------------------------------------------
def check_ready_to_run(settings: Settings) -> str | None:
    """Before the first run (listing tests needs neither): a key, so no run fails for the
    want of one after the week started, a CLI to run, and the labels' models answering;
    the preflight's line."""
    check_credentials(settings)
    agent_config(settings)  # raises when no CLI can be found
    return preflight(settings)


def check_credentials(settings: Settings) -> None:
    """A real run needs a key before the first paid call, not after 200 runs failed."""
    if settings.demo or settings.base_url:
        return
    keys = [registry.agent(a).key_var for a in other_agents(settings)
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


def preflight(settings: Settings) -> str | None:
    """Each (agent, model) label's model asked once (its API's free model lookup, as the
    agent's definition says) before the matrix starts: a mistyped model, a refused key or
    an unreachable API stops the session here, naming the label, the cause and the fix
    (``runners.preflight``). The agents' endpoints are the ones their runs get
    (:func:`agent_env`). Not for the scripted stand-in, nor Claude Code on Bedrock /
    Vertex (another API), nor with ``--skill-lift-preflight=off``. Returns its line (what
    was checked, what could not be and why), None when it did not run."""
    from pytest_skilllift.runners import preflight as check

    if not settings.preflight or settings.demo:
        return None
    found = check.run(settings.models, {**os.environ, **agent_env(settings)})
    if found.problems:
        raise SettingsError(check.stop_message(found.problems))
    return found.line()


# -- the runner --------------------------------------------------------------------------
def make_runner(settings: Settings, inflight: Inflight,
                supplied: Callable[[], Runner | None] | None = None) -> Runner:
    """Prompt runs go to the configured runner — or the one ``supplied`` returns (the
    ``pytest_skilllift_make_runner`` hook) —, Harbor task runs to the task runner (docker,
    whatever the prompts' runner: a task's run is its container). Each is made on first use."""
    from pytest_skilllift.runners.task_docker import SplitRunner

    return SplitRunner(lambda: _prompt_runner(settings, inflight, supplied),
                       lambda: _task_runner(settings, inflight))


def _task_runner(settings: Settings, inflight: Inflight) -> Runner:
    from pytest_skilllift.runners.task_docker import TaskRunner

    s = settings
    claude = Path(s.claude) if s.claude and Path(s.claude).is_file() else None
    return TaskRunner(network=s.docker_network, week=s.week, inflight=inflight, claude=claude)


def _prompt_runner(settings: Settings, inflight: Inflight,
                   supplied: Callable[[], Runner | None] | None) -> Runner:
    if supplied is not None:
        runner = supplied()  # pytest_skilllift_make_runner
        if runner is not None:
            return runner
    if settings.runner == "docker":
        from pytest_skilllift.runners.docker import DockerRunner

        return DockerRunner(settings.image, network=settings.docker_network,
                            week=settings.week, inflight=inflight)
    from pytest_skilllift.runners.local import LocalRunner

    return LocalRunner(inflight=inflight)


# -- the grader --------------------------------------------------------------------------
def make_grader(settings: Settings, week: Ledger, *, worker: bool,
                batch: Callable[[], BatchResults]) -> Grader:
    """The engine's grader: the batch step's results (``--skill-lift-judge-batch``: graded
    there, never directly), the controller's judge service from an xdist worker, or a judge
    client of this process (:func:`local_grader`)."""
    if settings.judge_batch:
        grader: Grader = batch()
        return grader
    if worker and settings.judge_url:
        from pytest_skilllift.judge.service import RemoteGrader

        return RemoteGrader(settings.judge_url, settings.judge_token)
    return local_grader(settings, week)


def local_grader(settings: Settings, week: Ledger) -> Grader:
    """The configured judge (or ``--skill-lift-judges`` panel), sampled and masked, as a
    client of this process."""
    from pytest_skilllift.judge.factory import build_judge, session_judges
    from pytest_skilllift.judge.mask import MaskingGrader
    from pytest_skilllift.judge.panel import PanelCache, PanelJudge
    from pytest_skilllift.judge.providers import JudgeSpec
    from pytest_skilllift.judge.samples import SampledJudge
    from pytest_skilllift.run.triggers import skill_families

    s = settings
    evidence = "flag" if s.evidence == "flag" else "reject"

    def one(spec: JudgeSpec) -> Grader:
        judge = build_judge(spec, env=s.extra_env, base_url=s.base_url or None,
                            evidence=evidence)
        # Built ahead of the first grade under xdist (warm_judge): the SDK's import too.
        judge.prepare()
        return SampledJudge(judge, samples=s.judge_samples)

    specs = session_judges(s.judge_model, s.judges)
    grader: Grader = (one(specs[0]) if len(specs) == 1 else
                      PanelJudge([(spec.name, one(spec)) for spec in specs],
                                 cache=PanelCache(week.root), evidence_policy=evidence))
    return MaskingGrader(grader, skill_families(s.skills_root), mask=s.judge_mask)


# -- the batch step (--skill-lift-judge-batch) ---------------------------------------------
def batch_results(settings: Settings, week: Ledger) -> BatchResults:
    """The results the batch step hands the engine (named for the judge, or the panel)."""
    from pytest_skilllift.judge.factory import session_judges
    from pytest_skilllift.judge.panel import panel_name
    from pytest_skilllift.run.batch_grade import BatchResults

    s = settings
    name = panel_name([j.name for j in session_judges(s.judge_model, s.judges)])
    return BatchResults(week, name)


def batch_judge(settings: Settings, week: Ledger,
                log: Callable[[str], None] | None = None) -> BatchJudges:
    """The batch client of the session's judge (its provider's batch API), or a panel's
    ``(name, client)`` pairs sharing one batch file (``judge.factory.build_batch_judges``)."""
    from pytest_skilllift.judge.factory import build_batch_judges, session_judges

    s = settings
    judges: BatchJudges = build_batch_judges(
        session_judges(s.judge_model, s.judges), week.root, env=s.extra_env,
        base_url=s.base_url or None, poll_s=s.judge_batch_poll_s, log=log,
        evidence="flag" if s.evidence == "flag" else "reject")
    return judges


# -- what the lift's runs and the trigger runs share ---------------------------------------
def concurrency(settings: Settings, inflight: Inflight) -> ConcurrencyLimit:
    """The session's limit on agent runs in flight, shared by its processes through the
    session's directory (``run.concurrency``)."""
    s = settings
    cap = default_cap(s.max_concurrency,
                      claude_code=any(split_agent(m)[0] == CLAUDE_CODE for _, m in s.models),
                      workers=int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1))
    return ConcurrencyLimit(inflight.root / "concurrency", cap,
                            check=inflight.check_not_stopping)


def breaker(settings: Settings, inflight: Inflight, side: str = "runs") -> CircuitBreaker | None:
    """``--skill-lift-breaker``: the session's circuit breaker for its runs (or, ``side=
    "judge"``, its judge), shared by its processes through the in-flight registry's
    directory; None when it is off."""
    if settings.breaker <= 0:
        return None
    return CircuitBreaker(inflight.root / f"{side}-outcomes.log", settings.breaker)


def breaker_lines(settings: Settings, inflight: Inflight, runs: dict[str, str],
                  trigger_runs: dict[str, str]) -> list[str]:
    """What the circuit breakers held back this session (controller, at the end), given
    each lift and trigger run's reported status."""
    lines = []
    held = [r for r, st in runs.items() if st == NOT_RUN_OUTAGE]
    # Trigger runs share the breaker (one API behind both): counted with the lift's.
    held_triggers = [r for r, st in trigger_runs.items() if st == NOT_RUN_OUTAGE]
    lift, judge = breaker(settings, inflight), breaker(settings, inflight, "judge")
    cause = lift.open_cause() if lift is not None else None
    if (held or held_triggers) and lift is not None:
        of_which = (f" ({len(held_triggers)} of them trigger runs)"
                    if held_triggers else "")
        lines.append(f"circuit breaker: {len(held) + len(held_triggers)} run(s)"
                     f"{of_which} not run: {cause} — "
                     f"{lift.threshold} consecutive runs failed with it, so no further "
                     "run was started; fix it and run again (the next session runs "
                     "them): exit status 1")
    judge_cause = judge.open_cause() if judge is not None else None
    if judge_cause and judge is not None:
        lines.append(f"circuit breaker: judging stopped: {judge_cause} — "
                     f"{judge.threshold} consecutive judge calls failed with it; the runs "
                     "left stay ungraded (never scored zero) and are graded next session")
    return lines


def spend_gate(settings: Settings, week: Ledger) -> StartGate | None:
    """``--skill-lift-max-spend``: the start gate every run of this process asks (lift and
    trigger runs alike: give both the same gate, one cap), or None without a cap."""
    if settings.max_spend_usd is None:
        return None
    from pytest_skilllift.week.spend import SpendCap

    return SpendCap(week.root, settings.max_spend_usd).check


# -- the engine and the trigger runs -------------------------------------------------------
@dataclasses.dataclass
class Hooks:
    """The session's callbacks the engine calls (the pytest glue's hooks behind them)."""

    runner: Callable[[], Runner | None] | None = None
    generated: Callable[[RunSpec], None] | None = None
    graded: Callable[[RunSpec, JudgeResult], None] | None = None


def week_run(settings: Settings, week: Ledger, *, session_id: str, inflight: Inflight,
             grader: Callable[[], Grader], hooks: Hooks,
             gate: StartGate | None) -> WeekRun:
    """The engine of one process: the week's runs generated once and graded once, with the
    session's runner, grader, start gate, breakers, concurrency limit and the
    ``--skill-lift-baseline-from`` plan."""
    from pytest_skilllift.run.baseline import session_source

    run = WeekRun(week, agent_config(settings),
                  lambda: make_runner(settings, inflight, hooks.runner), grader,
                  site=settings.site, session_id=session_id,
                  baseline=session_source(settings.baseline_from, settings.out_dir))
    run.on_generated = hooks.generated
    run.on_graded = hooks.graded
    run.start_gate = gate
    run.breaker = breaker(settings, inflight)
    run.judge_breaker = breaker(settings, inflight, "judge")
    run.concurrency = concurrency(settings, inflight)
    if settings.fresh:  # regrade the runs this session selects, once each
        run.regrade_pass = session_id
    return run


def trigger_run(settings: Settings, week: Ledger, *, inflight: Inflight,
                runner: Callable[[], Runner | None] | None,
                gate: StartGate | None) -> TriggerRun:
    """Trigger runs (``run.triggers.TriggerRun``): the lift's agent config and runner, only
    ``--max-turns`` changed, into ``<week>/triggers/``; the lift's start gate, breaker (one
    API behind lift and trigger runs) and concurrency limit."""
    from pytest_skilllift.run.triggers import TriggerRun

    agent = dataclasses.replace(agent_config(settings), max_turns=settings.triggers_max_turns)
    triggers = TriggerRun(week.root / TRIGGERS_DIR, agent,
                          lambda: make_runner(settings, inflight, runner))
    triggers.start_gate = gate
    triggers.breaker = breaker(settings, inflight)
    triggers.concurrency = concurrency(settings, inflight)
    return triggers


# -- the end of the session (controller) ---------------------------------------------------
def close_week(settings: Settings, week: Ledger, inflight: Inflight, runs: dict[str, str],
               trigger_runs: dict[str, str]) -> tuple[SpendRecord, bool]:
    """The week's own files at the end of a session, before its scorecard: spend.json (the
    runs the spend cap and the breaker kept from starting, from each run's reported status),
    the concurrency summary and the trigger table. Returns the spend record and whether the
    week holds trigger runs."""
    from pytest_skilllift.run.triggers import rebuild_trigger_table
    from pytest_skilllift.week.spend import NOT_RUN, update_spend

    def held(status: str) -> list[str]:
        return ([r for r, st in runs.items() if st == status]
                + [f"{TRIGGERS_DIR}/{r}" for r, st in trigger_runs.items() if st == status])

    spend = update_spend(week.root, settings.max_spend_usd, held(NOT_RUN),
                         held(NOT_RUN_OUTAGE))
    concurrency(settings, inflight).write_summary(week.root / CONCURRENCY_FILE)
    return spend, rebuild_trigger_table(week.root) > 0
