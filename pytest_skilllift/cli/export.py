"""``skilllift export WEEK_DIR --format skill-creator OUT``: the command of
:mod:`pytest_skilllift.report.export` (a week in skill-creator's layout); the export stays there."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_skilllift.report.export import FORMATS, export_skill_creator
from pytest_skilllift.week.files import MANIFEST_CSV, SCORES_CSV, WeekLinkError

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers


def add_parser(subparsers: Subparsers) -> None:
    """Register ``export`` on the ``skilllift`` subparsers (sets ``func``)."""
    p = subparsers.add_parser(
        "export", help="write a week in another tool's layout (skill-creator's viewer)",
        description="Write a week directory in Anthropic skill-creator's benchmark layout: "
        "per run grading.json, per skill and model benchmark.json (configurations "
        "with_skill / without_skill), so its viewer and aggregate_benchmark.py read it.")
    p.add_argument("week_dir", metavar="WEEK_DIR", type=Path,
                   help="the week directory (holds manifest.csv and scores.csv)")
    p.add_argument("out", metavar="OUT", type=Path, help="output directory (created)")
    p.add_argument("--format", choices=FORMATS, required=True, dest="fmt",
                   help="output layout: skill-creator")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; returns the exit status (2 when WEEK_DIR is unusable)."""
    week_dir: Path = args.week_dir
    missing = [n for n in (MANIFEST_CSV, SCORES_CSV) if not (week_dir / n).is_file()]
    if not week_dir.is_dir() or missing:
        print(f"skilllift export: {week_dir}: not a week directory (missing "
              f"{', '.join(missing) or 'the directory'})", file=sys.stderr)
        return 2
    try:
        result = export_skill_creator(week_dir, args.out)
    except WeekLinkError as exc:  # before OSError: it is one, but the week's, not the output's
        print(f"skilllift export: refused, {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"skilllift export: cannot write into {args.out}: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {result.gradings} grading.json and {len(result.benchmarks)} benchmark.json "
          f"under {args.out}")
    if result.skipped:
        print(f"{len(result.skipped)} run(s) not exported (named in benchmark.json notes):",
              file=sys.stderr)
        for run_id, reason in result.skipped:
            print(f"  {run_id}: {reason}", file=sys.stderr)
    return 0
