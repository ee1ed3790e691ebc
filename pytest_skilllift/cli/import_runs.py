"""``skilllift import harbor``: Harbor job directories read into a week directory.

    skilllift import harbor JOB_DIR… --out WEEK_DIR [--arm-from config|job-name|trial-name]
                            [--no-skill-pattern RE] [--reward-key KEY] [--tasks DIR]
                            [--output text|json]

Each trial (task × agent/model × attempt) becomes one run of the week; then ``skilllift
summarize WEEK_DIR`` gives the reward lift, pass rates, helped/hurt and the audit as for a
week this tool ran (docs/tasks.md, "Importing Harbor results"). Exit status: 0 imported
(trials it could not map are counted and named, not fatal); 1 nothing could be imported;
2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers


def add_parser(subparsers: Subparsers) -> None:
    """Register ``import`` (and its ``harbor``) on the ``skilllift`` sub-parser set."""
    from pytest_skilllift.run.tasks.harbor import ARM_SOURCES, NO_SKILL_PATTERN

    p = subparsers.add_parser(
        "import", help="read another harness's results into a week directory (import harbor)",
        description="Read results this tool did not run into a week directory.")
    sub = p.add_subparsers(dest="import_command", metavar="SOURCE",
                           help="where the results come from")
    h = sub.add_parser(
        "harbor", help="Harbor job directories (SkillsBench runs) → a week directory",
        description="Read Harbor job directories (one trial directory per task × agent/model "
        "× attempt: result.json with the verifier's rewards, config.json, agent/ logs, "
        "verifier/ files) and write a week directory: one run per trial (model label from the "
        "agent and model, condition from whether the trial ran with skills, rep from the "
        "attempt), manifest.csv, the verifier's per-test outcomes and files, the transcript "
        "where the agent is one this tool reads. Trials it cannot map are counted and named.")
    h.add_argument("jobs", nargs="+", type=Path, metavar="JOB_DIR",
                   help="Harbor job directories (jobs/<job_name>)")
    h.add_argument("--out", type=Path, required=True, metavar="WEEK_DIR",
                   help="the week directory to write (new, or without runs)")
    h.add_argument("--arm-from", choices=ARM_SOURCES, default=ARM_SOURCES[0],
                   help="how with-skill and no-skill trials are told apart: config (default: "
                   "the trial config's agent.skills, non-empty = with-skill), job-name or "
                   "trial-name (the name matching --no-skill-pattern = no-skill)")
    h.add_argument("--no-skill-pattern", default=NO_SKILL_PATTERN, metavar="RE",
                   help="with --arm-from job-name/trial-name: a name this regular expression "
                   f"finds is no-skill (default {NO_SKILL_PATTERN!r}: no-skills, without_skill…)")
    h.add_argument("--reward-key", default="", metavar="KEY",
                   help="the primary reward of verifier_result.rewards (default: 'reward', "
                   "else the first)")
    h.add_argument("--tasks", type=Path, default=None, metavar="DIR",
                   help="where the task directories are on this machine (their instruction and "
                   "skill families; default: the path each trial's config names, if present)")
    h.add_argument("--output", choices=["text", "json"], default="text",
                   help="report format on stdout (default text)")
    h.set_defaults(func=run_import_harbor)
    def usage(args: argparse.Namespace) -> int:  # the group alone: its help, status 2
        p.print_help()
        return 2

    p.set_defaults(func=usage)


def run_import_harbor(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``skilllift import harbor``."""
    from pytest_skilllift.lint.output import stdout
    from pytest_skilllift.report.terminal_text import terminal_safe
    from pytest_skilllift.run.tasks.harbor import HarborImportError, import_jobs

    out = out or stdout()
    try:
        report = import_jobs(list(args.jobs), args.out, arm_from=args.arm_from,
                             no_skill_pattern=args.no_skill_pattern,
                             reward_key=args.reward_key, tasks_dir=args.tasks)
    except HarborImportError as exc:
        print(f"skilllift import harbor: {exc}", file=sys.stderr)
        return 2
    if args.output == "json":
        json.dump(report.to_json(), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        for line in report.text().splitlines():
            print(terminal_safe(line), file=out)
        if report.runs:
            print(f"next: skilllift summarize {terminal_safe(args.out)}", file=out)
    return 0 if report.runs else 1
