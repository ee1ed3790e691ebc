"""The context of a depth run (standard, deep, certify): judge client, spend, store, Monte
Carlo runner; shared by ``skilllift score``/``certify`` and ``pytest --skill-lint``.

The runner defaults (docker image and network, per-run timeout) are those of the weekly run,
stated once in ``config.OPTIONS``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_skilllift.config import option_default

if TYPE_CHECKING:  # imported on use: a depth run's modules are many, the context is first
    from pytest_skilllift.lint.depth import DepthContext
    from pytest_skilllift.lint.skill_judge import SkillJudgeClient
    from pytest_skilllift.runners.base import Runner

DEFAULT_OUT = Path(".skilllift") / "depth"


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def make_context(
    depth: str,
    *,
    judges: int = 1,
    judge_model: str | None = None,
    max_spend: float | None = None,
    out: Path | None = None,
    mc_prompts: Path | None = None,
    mc_runs: int = 50,
    model: str = "sonnet",
    runner: str = "local",
    image: str = option_default("image"),
    docker_network: str = option_default("docker-network"),
    claude: str | None = None,
    max_turns: int | None = None,
    timeout: float = option_default("timeout"),
    breaker: int = option_default("breaker"),
    week: Path | None = None,
    corpus: Path | None = None,
    progress: Callable[[str], None] | None = _progress,
) -> DepthContext:
    """A :class:`~pytest_skilllift.lint.depth.DepthContext` (raises DepthUsageError and the
    loaders' errors on bad input). Used by the ``skilllift`` commands and by
    ``pytest --skill-lint``."""
    from pytest_skilllift.lint.depth import DepthContext, DepthUsageError, agent_config
    from pytest_skilllift.lint.elo import load_corpus
    from pytest_skilllift.lint.measured import load_scorecard
    from pytest_skilllift.lint.montecarlo import MCConfig, load_mc_prompts
    from pytest_skilllift.lint.spend import Budget, Store

    if judges < 1:
        raise DepthUsageError(f"--judges must be 1 or more, not {judges}")
    if mc_runs < 1:
        raise DepthUsageError(f"--mc-runs must be 1 or more, not {mc_runs}")
    if breaker < 0:
        raise DepthUsageError(f"--breaker must be a whole number of runs, at least 0 (0 turns "
                              f"the circuit breaker off), not {breaker}")
    if max_spend is not None and not max_spend >= 0:
        raise DepthUsageError(f"--max-spend must be 0 or more dollars, not {max_spend}")
    budget = Budget(max_spend)
    ctx = DepthContext(depth=depth, budget=budget, store=Store(out if out is not None
                                                               else DEFAULT_OUT),
                       judges=judges, progress=progress)
    ctx.client_factory = lambda: _client(judge_model)
    if week is not None:
        ctx.week_dir = week
        if depth in ("quick", "standard"):
            ctx.week_data = load_scorecard(week)
        elif not Path(week).is_dir():
            raise DepthUsageError(f"--week {week}: not a directory")
    if depth in ("deep", "certify") and week is None:
        if mc_prompts is not None:
            ctx.mc_prompts = load_mc_prompts(mc_prompts)
        from pytest_skilllift.model import CLAUDE_CODE, split_agent

        claude_path = "claude"  # the docker image's own CLI
        agent = split_agent(model)[0]  # --model AGENT:MODEL runs another agent's CLI
        agent_paths: dict[str, str] = {}
        if runner == "local" and agent != CLAUDE_CODE:
            from pytest_skilllift.runners import agents

            path = agents.find_cli(agent)
            if path is None:
                raise DepthUsageError(agents.missing_cli_message(agent))
            agent_paths[agent] = path
        elif runner == "local":
            from pytest_skilllift.runners.claude import find_claude

            found = find_claude(claude)
            if found is None:
                raise DepthUsageError(
                    "Claude Code CLI not found for the Monte Carlo runs: pass --claude PATH, "
                    "put claude on PATH, or install claude-agent-sdk (it bundles the CLI)")
            claude_path = found
        mc_agent = replace(agent_config(claude_path, Path("."), max_turns=max_turns,
                                        timeout_s=timeout), agent_paths=agent_paths)
        ctx.mc = MCConfig(agent=mc_agent, model_id=model, runs=mc_runs, breaker=breaker)
        ctx.runner_factory = _runner_factory(runner, image, docker_network)
    if depth == "certify":
        if corpus is None:
            raise DepthUsageError("certify needs --corpus INDEX (build one with `skilllift "
                                  "corpus init DIR`)")
        ctx.corpus = load_corpus(corpus)
    return ctx


def _client(model: str | None) -> SkillJudgeClient:
    from pytest_skilllift.lint.skill_judge import SkillJudgeClient

    return SkillJudgeClient(model=model)


def _runner_factory(runner: str, image: str, network: str) -> Callable[[], Runner]:
    if runner == "docker":
        def docker_runner() -> Runner:
            from pytest_skilllift.runners.docker import DockerRunner
            from pytest_skilllift.runners.inflight import process_inflight

            return DockerRunner(image, network=network, inflight=process_inflight())
        return docker_runner

    def local_runner() -> Runner:
        from pytest_skilllift.runners.inflight import process_inflight
        from pytest_skilllift.runners.local import LocalRunner

        # Listed while they run: an interrupt of the command stops them all (cli.main).
        return LocalRunner(inflight=process_inflight())
    return local_runner
