"""``skilllift lint-evals``: the eval files themselves (rubric shape, leakage, trigger sets,
history).

    skilllift lint-evals [--prompts DIR] [--skills DIR] [--triggers DIR] [--weeks DIR]
                         [--last N] [--output text|json] [--strict]

Defaults are the plugin's layout (``config.OPTIONS``: evals/test-prompts, skills,
evals/triggers) under the current directory; skill-creator ``evals.json`` files are found as
``--skill-lift`` finds them. Exit status: 0 (warnings are reported, not failed) — 1 with
``--strict`` when there is any; 2 usage error (no eval file found, a bad --weeks).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers


def _default(name: str) -> str:
    from pytest_skilllift.config import OPTIONS

    return str(next(o.default for o in OPTIONS if o.name == name))


def add_parser(subparsers: Subparsers) -> None:
    """Register ``lint-evals`` on the ``skilllift`` sub-parser set."""
    p = subparsers.add_parser(
        "lint-evals",
        help="lint the eval files: rubric shape (3-5 must, 1-3 bonus, 1-3 avoid), leakage, "
        "trigger sets, non-discriminating and contested items from history",
        description="Check prompt files, trigger files and skill-creator evals.json: rubric "
        "shape against qdrant/skills SCORING.md, empty/duplicate items, prompts naming their "
        "skill, items quoting the SKILL.md, trigger sets without negatives; with --weeks, "
        "items met in both arms every week and items contested in two or more weeks.",
    )
    p.add_argument("--prompts", type=Path, default=None, metavar="DIR",
                   help="prompt JSON files (default: evals/test-prompts)")
    p.add_argument("--skills", type=Path, default=None, metavar="DIR",
                   help="skills root (default: skills)")
    p.add_argument("--triggers", type=Path, default=None, metavar="DIR",
                   help="trigger files <family>.json (default: evals/triggers)")
    p.add_argument("--site", default="", metavar="URL",
                   help="URL prefix stripped from skill_url")
    p.add_argument("--weeks", type=Path, default=None, metavar="DIR",
                   help="the weekly folder (week directories holding scores.csv), or one week")
    p.add_argument("--last", type=int, default=None, metavar="N",
                   help="history: the last N weeks (default 4); an item is judged over at "
                   "least 2")
    p.add_argument("--output", choices=["text", "json"], default="text",
                   help="report format on stdout (default text)")
    p.add_argument("--strict", action="store_true", help="exit 1 when there is any finding")
    p.set_defaults(func=run_lint_evals)


def run_lint_evals(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``skilllift lint-evals``."""
    from pytest_skilllift.lint import evals
    from pytest_skilllift.lint.output import stdout
    from pytest_skilllift.run.skill_creator import find_evals_files

    out = out or stdout()
    cwd = Path.cwd()
    prompts = args.prompts or cwd / _default("prompts")
    skills = args.skills or cwd / _default("skills")
    triggers = args.triggers or cwd / _default("triggers")
    if args.weeks is not None and not args.weeks.is_dir():
        print(f"skilllift lint-evals: --weeks {args.weeks}: not a directory (give the weekly "
              "folder, e.g. evals/weekly)", file=sys.stderr)
        return 2
    last = evals.LAST_WEEKS if args.last is None else args.last
    if last < 1:
        print(f"skilllift lint-evals: --last must be at least 1, got {last}", file=sys.stderr)
        return 2
    result = evals.lint_evals(
        prompts_dir=prompts, skills_root=skills, triggers_dir=triggers,
        skill_creator_files=find_evals_files(cwd, skills), weeks=args.weeks, base=cwd,
        last=last, site=args.site)
    if result.files == 0:
        print(f"skilllift lint-evals: no eval file found (prompts {prompts}, triggers "
              f"{triggers}, skill-creator evals under {skills}); name them with --prompts / "
              "--triggers / --skills", file=sys.stderr)
        return 2
    if args.output == "json":
        json.dump(result.to_json(), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        for f in result.findings:
            print(f.text(), file=out)
        print(result.summary(), file=out)
    return 1 if args.strict and result.findings else 0
