"""``skilllift score --depth standard|deep``, ``skilllift certify`` and ``skilllift corpus init``.

    skilllift score PATH --depth standard [--judges N] [--max-spend USD] [--threshold N]
    skilllift score PATH --depth deep [--mc-prompts FILE] [--mc-runs N] [--week DIR] ...
    skilllift certify PATH --corpus INDEX [...the deep options]
    skilllift corpus init DIR [--out FILE]

The judge talks to the Messages API through the ``anthropic`` SDK (``ANTHROPIC_API_KEY``,
``ANTHROPIC_BASE_URL``); the Monte Carlo runs use the real Claude Code CLI (``--claude``, else
``claude`` on PATH, else the CLI bundled with claude-agent-sdk) or the docker image.

Exit status: 0; 1 when a skill's composite is under ``--threshold``; 2 for usage errors.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pytest_skilllift.config import option_default
from pytest_skilllift.lint.depth_context import DEFAULT_OUT, make_context

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers
    from pytest_skilllift.lint.depth import DepthContext

#: The weekly run's defaults (``config.OPTIONS``), which the Monte Carlo runs share.
_IMAGE, _NETWORK = option_default("image"), option_default("docker-network")
_TIMEOUT = option_default("timeout")
_BREAKER = option_default("breaker")


def add_depth_arguments(p: argparse.ArgumentParser, *, certify: bool = False) -> None:
    """The options of the model layers (shared by ``score`` and ``certify``)."""
    g = p.add_argument_group("model layers (standard, deep, certify)")
    g.add_argument("--judges", type=int, default=1, metavar="N",
                   help="independent LLM judges, averaged; Cohen's kappa between them (default 1)")
    g.add_argument("--judge-model", default=None, metavar="MODEL",
                   help=f"judge model (default {option_default('judge-model')})")
    g.add_argument("--max-spend", type=float, default=None, metavar="USD",
                   help="stop starting paid calls and runs once this many dollars are spent; "
                        "what was not run is counted in the report")
    g.add_argument("--out", type=Path, default=None, metavar="DIR",
                   help=f"where results are kept so a rerun resumes without paying twice "
                        f"(default {DEFAULT_OUT})")
    g.add_argument("--mc-prompts", type=Path, default=None, metavar="FILE",
                   help="Monte Carlo prompts: .txt (one per line) or JSON (list, skill-creator "
                        "evals/trigger evals, qdrant prompt files); default: the skill's "
                        "evals/*.json, else the judge's imagined trigger prompts")
    g.add_argument("--mc-runs", type=int, default=50, metavar="N",
                   help="Monte Carlo runs; prompts are repeated in order to reach N (default 50)")
    g.add_argument("--model", default="sonnet", metavar="MODEL",
                   help="model the CLI runs for Monte Carlo (default sonnet); AGENT:MODEL "
                        "runs another agent, e.g. codex:gpt-5.5 (docs/agents.md)")
    g.add_argument("--runner", choices=["local", "docker"], default="local",
                   help="where each CLI run executes, as in the weekly run (default local)")
    g.add_argument("--image", default=_IMAGE, metavar="IMAGE",
                   help=f"docker image (--runner docker; default {_IMAGE})")
    g.add_argument("--docker-network", default=_NETWORK, metavar="MODE",
                   help="docker network (--runner docker)")
    g.add_argument("--claude", default=None, metavar="PATH", help="Claude Code CLI (local runner)")
    g.add_argument("--max-turns", type=int, default=None, metavar="N", help="per-run --max-turns")
    g.add_argument("--timeout", type=float, default=_TIMEOUT, metavar="S",
                   help=f"per-run timeout in seconds (default {_TIMEOUT:g})")
    g.add_argument("--breaker", type=int, default=_BREAKER, metavar="N",
                   help="circuit breaker: after N runs in a row fail with the same outage "
                        "(API unreachable, key refused, model not found) the rest are not "
                        f"run, counted in the report; 0 turns it off (default {_BREAKER})")
    if certify:
        g.add_argument("--corpus", type=Path, default=None, metavar="INDEX",
                       help="gold corpus index from `skilllift corpus init` (the file or its "
                            "directory); required")


#: (option, attribute, default, the least depth that uses it)
_DEPTH_OPTIONS: tuple[tuple[str, str, Any, str], ...] = (
    ("--judges", "judges", 1, "standard"),
    ("--judge-model", "judge_model", None, "standard"),
    ("--max-spend", "max_spend", None, "standard"),
    ("--out", "out", None, "standard"),
    ("--mc-prompts", "mc_prompts", None, "deep"),
    ("--mc-runs", "mc_runs", 50, "deep"),
    ("--model", "model", "sonnet", "deep"),
    ("--runner", "runner", "local", "deep"),
    ("--image", "image", _IMAGE, "deep"),
    ("--docker-network", "docker_network", _NETWORK, "deep"),
    ("--claude", "claude", None, "deep"),
    ("--max-turns", "max_turns", None, "deep"),
    ("--timeout", "timeout", _TIMEOUT, "deep"),
    ("--breaker", "breaker", _BREAKER, "deep"),
)
_ORDER = {"quick": 0, "standard": 1, "deep": 2, "certify": 3}


def unused_options(args: argparse.Namespace) -> list[str]:
    """Options given that the chosen depth never uses (a usage error, not silently ignored)."""
    depth = _ORDER[args.depth]
    return [f"{flag} needs --depth {least} or deeper" for flag, attr, default, least
            in _DEPTH_OPTIONS if getattr(args, attr, default) != default and depth < _ORDER[least]]


def add_parser(subparsers: Subparsers) -> None:
    """Register ``certify`` and ``corpus`` on the ``skilllift`` sub-parser set."""
    c = subparsers.add_parser(
        "certify",
        help="static + LLM judge + Monte Carlo + Elo against a gold corpus; assigns a badge",
        description="PluginEval's certification of a skill: every layer, Elo ranking against "
        "an indexed gold corpus, and a badge that needs both the composite and the Elo bound.",
    )
    c.add_argument("path", type=Path, metavar="PATH",
                   help="SKILL.md, a skill directory, or a tree of skills")
    c.add_argument("--output", choices=["text", "json"], default="text",
                   help="report format on stdout (default text)")
    c.add_argument("--threshold", type=float, default=None, metavar="N",
                   help="exit 1 when any skill's composite is under N (0-100)")
    c.add_argument("--week", type=Path, default=None, metavar="DIR",
                   help="use a week's measured runs for Monte Carlo instead of new runs")
    add_depth_arguments(c, certify=True)
    c.set_defaults(func=run_certify, depth="certify")

    k = subparsers.add_parser("corpus", help="gold corpus for Elo ranking (certify)")
    ksub = k.add_subparsers(dest="corpus_command", metavar="ACTION",
                            help="what to do with the corpus")
    init = ksub.add_parser("init", help="index every skill under DIR",
                           description="Index every SKILL.md under DIR (id, name, content hash, "
                           "static composite) for certify's Elo matches.")
    init.add_argument("dir", type=Path, metavar="DIR",
                      help="a directory of gold-standard skills (searched recursively)")
    init.add_argument("--out", type=Path, default=None, metavar="FILE",
                      help="index file (default DIR/skilllift-corpus.json)")
    init.set_defaults(func=run_corpus_init)
    def usage(args: argparse.Namespace) -> int:  # the group alone: its help, status 2
        k.print_help()
        return 2

    k.set_defaults(func=usage)


def run_certify(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``skilllift certify``."""
    if args.corpus is None:
        print("skilllift certify: --corpus INDEX is required (build one with `skilllift corpus "
              "init DIR`)", file=sys.stderr)
        return 2
    return run_depth(args, out)


def run_corpus_init(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``skilllift corpus init``."""
    from pytest_skilllift.lint.elo import CorpusError, init_corpus

    out = out or sys.stdout
    try:
        index, entries = init_corpus(args.dir, args.out)
    except CorpusError as exc:
        print(f"skilllift corpus init: {exc}", file=sys.stderr)
        return 2
    print(f"indexed {len(entries)} skill(s) into {index}", file=out)
    return 0


def run_depth(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """A depth run (standard, deep, certify) over one skill or a tree."""
    from pytest_skilllift.lint.analyze import LintUsageError, resolve_skills
    from pytest_skilllift.lint.depth import DepthUsageError, evaluate, write_depth_text
    from pytest_skilllift.lint.elo import CorpusError
    from pytest_skilllift.lint.measured import WeekError
    from pytest_skilllift.lint.montecarlo import MCPromptError
    from pytest_skilllift.lint.output import stdout as _stdout
    from pytest_skilllift.lint.output import write_json
    from pytest_skilllift.skill.skillfile import load_skill

    out = out or _stdout()
    name = "certify" if args.depth == "certify" else "score"
    unused = unused_options(args)
    if unused:
        print(f"skilllift {name}: {'; '.join(unused)}", file=sys.stderr)
        return 2
    try:
        ctx = build_context(args)
        root, single, dirs, walk = resolve_skills(args.path)
        if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
            # Before any call: without a key every judge layer would be UNSCORED, exit 0.
            raise DepthUsageError(
                f"{'certify' if args.depth == 'certify' else '--depth ' + args.depth} grades "
                "the skill with a model judge and needs "
                "ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the environment; neither is "
                "set. --depth quick needs no model.")
        reports = []
        for d in dirs:
            reports.append(evaluate(load_skill(d), ctx))
    except (LintUsageError, WeekError, DepthUsageError, MCPromptError, CorpusError) as exc:
        print(f"skilllift {name}: {exc}", file=sys.stderr)
        return 2
    finally:
        if "ctx" in locals():
            ctx.close()
    threshold = args.threshold
    under = [r for r in reports if threshold is not None and r.composite.score < threshold]
    spend = {"max_spend": ctx.budget.cap, "spent_usd": round(ctx.budget.spent, 6),
             "cap_reached": ctx.budget.exhausted()}
    if args.output == "json":
        payload: dict[str, Any]
        if single:
            payload = reports[0].to_json()
        else:
            payload = {"root": str(root), "n_skills": len(reports),
                       "skills": [r.to_json() for r in reports],
                       "walk_findings": [f.to_json() for f in walk]}
        payload["spend"] = spend
        if threshold is not None:
            payload["threshold"] = {"value": threshold, "passed": not under,
                                    "under": [r.base.skill.rel_id for r in under]}
        write_json(payload, out)
    else:
        for i, r in enumerate(reports):
            if i:
                print("\n" + "-" * 72, file=out)
            write_depth_text(r, out)
        cap = "" if ctx.budget.cap is None else f" of --max-spend ${ctx.budget.cap:g}" + (
            " (cap reached)" if ctx.budget.exhausted() else "")
        print(f"\nspent ${ctx.budget.spent:.4f}{cap}", file=out)
        if threshold is not None:
            print(f"threshold {threshold:g}: {len(under)} of {len(reports)} skill(s) under"
                  if under else f"threshold {threshold:g}: all {len(reports)} skill(s) pass",
                  file=out)
    return 1 if under else 0


def build_context(args: argparse.Namespace) -> DepthContext:
    """The shared context of a depth run from the parsed options (raises on bad usage)."""
    return make_context(
        args.depth, judges=args.judges, judge_model=args.judge_model, max_spend=args.max_spend,
        out=args.out, mc_prompts=args.mc_prompts, mc_runs=args.mc_runs, model=args.model,
        runner=args.runner, image=args.image, docker_network=args.docker_network,
        claude=args.claude, max_turns=args.max_turns, timeout=args.timeout,
        breaker=args.breaker, week=args.week, corpus=getattr(args, "corpus", None))
