"""``skilllift tasks check``: Harbor tasks checked before a week is paid for on them.

    skilllift tasks check [DIR…] [--skills DIR] [--static] [--keep DIR] [--output text|json]

DIR is a task directory (holds ``task.toml``) or a folder of them (default: the ini's
``skill_lift_tasks`` default, ``evals/tasks``). Per task: the static lint (seconds), then in
the task's own containers, with no agent and no spend, the oracle (``solution/solve.sh`` then
the verifier: reward 1) and the no-op (the verifier on an untouched workspace: a reward, below
1); ``--static`` runs the lint only (no docker). docs/tasks.md, "Checking a task". Exit
status: 0 no task broken; 1 a task is broken; 2 usage error (no task found, no docker).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers


def _default(name: str) -> str:
    from pytest_skilllift.config import OPTIONS

    return str(next(o.default for o in OPTIONS if o.name == name))


def add_parser(subparsers: Subparsers) -> None:
    """Register ``tasks`` (and its ``check``) on the ``skilllift`` sub-parser set."""
    p = subparsers.add_parser(
        "tasks", help="Harbor tasks: check a task's verifier and solution before paying for "
        "runs (tasks check)",
        description="Commands on Harbor task directories (docs/tasks.md).")
    sub = p.add_subparsers(dest="tasks_command", metavar="SUBCOMMAND",
                           help="what to do with the tasks")
    c = sub.add_parser(
        "check", help="lint each task, then run its oracle and no-op in docker (no agent)",
        description="Per task: the static lint (instruction naming a skill of the task, "
        "tests/ or solution/ reachable from the image, a verifier fetching at verify time, "
        "task.toml out of range, a missing test.sh, skills failing the security scan); then, "
        "in the task's own containers with no agent and no spend, the oracle (solution/solve.sh "
        "then the verifier: the reward must be 1) and the no-op (nothing runs: the verifier "
        "must write a reward, below 1). Exit 1 when a task is broken.")
    c.add_argument("paths", nargs="*", type=Path, metavar="DIR",
                   help="task directories or folders of them (default: evals/tasks)")
    c.add_argument("--skills", type=Path, default=None, metavar="DIR",
                   help="the project's skills root, for tasks naming a family in [metadata] "
                   "skill (default: skills)")
    c.add_argument("--static", action="store_true",
                   help="the lint only: no container, no docker needed")
    c.add_argument("--keep", type=Path, default=None, metavar="DIR",
                   help="keep the probes' run folders (verifier output, reward, tests) here "
                   "(default: a temporary folder, removed)")
    c.add_argument("--output", choices=["text", "json"], default="text",
                   help="report format on stdout (default text)")
    c.set_defaults(func=run_tasks_check)
    def usage(args: argparse.Namespace) -> int:  # the group alone: its help, status 2
        p.print_help()
        return 2

    p.set_defaults(func=usage)


def run_tasks_check(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``skilllift tasks check``."""
    from pytest_skilllift.lint.output import stdout
    from pytest_skilllift.report.terminal_text import terminal_safe
    from pytest_skilllift.run.tasks.check import lint_task, probe_task, render_text
    from pytest_skilllift.run.tasks.reader import is_task_dir, task_dirs

    out = out or stdout()
    cwd = Path.cwd()
    roots = list(args.paths) or [cwd / _default("tasks")]
    skills = args.skills or cwd / _default("skills")
    folders: list[Path] = []
    for root in roots:
        if not root.is_dir():
            print(f"skilllift tasks check: {root}: not a directory (give a task directory or "
                  "a folder of them)", file=sys.stderr)
            return 2
        found = [root] if is_task_dir(root) else task_dirs(root)
        if not found:
            print(f"skilllift tasks check: {root}: no task directory (a folder holding "
                  "task.toml) under it", file=sys.stderr)
            return 2
        folders += [f for f in found if f not in folders]
    checks = [lint_task(f, skills) for f in folders]
    if not args.static:
        try:
            from pytest_skilllift.runners.task_check import TaskProbe

            prober = TaskProbe()
        except RuntimeError as exc:
            print(f"skilllift tasks check: {exc}; --static runs the lint alone",
                  file=sys.stderr)
            return 2
        try:
            with tempfile.TemporaryDirectory(prefix="skilllift-tasks-check-") as tmp:
                work = args.keep or Path(tmp)
                for check in checks:
                    print(f"skilllift tasks check: {check.name}: oracle and no-op…",
                          file=sys.stderr)
                    probe_task(check, prober, skills, work)
        finally:
            prober.close()
    if args.output == "json":
        json.dump({"tasks": [c.to_json() for c in checks], "static_only": bool(args.static),
                   "broken": sum(c.broken for c in checks)}, out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        print(terminal_safe(render_text(checks, static_only=bool(args.static))), file=out)
    return 1 if any(c.broken for c in checks) else 0
