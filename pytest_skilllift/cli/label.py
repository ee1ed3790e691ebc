"""``skilllift label WEEK_DIR --sample 30 --seed S > labels.csv``: the command of
:mod:`pytest_skilllift.judge.labels` (a sheet for a person to fill); the sampling stays there."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_skilllift.judge.graded import GradedWeekError, read_graded_items
from pytest_skilllift.judge.labels import stratified_sample, write_sheet
from pytest_skilllift.trace.transcript import final_answer

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers


def _run(args: argparse.Namespace) -> int:
    week = Path(args.week_dir)
    if not week.is_dir():
        print(f"skilllift label: {week}: not a directory", file=sys.stderr)
        return 2
    if args.sample < 1:
        print(f"skilllift label: --sample must be at least 1, not {args.sample}",
              file=sys.stderr)
        return 2
    try:
        items = read_graded_items(week)
    except GradedWeekError as err:
        print(f"skilllift label: {err}", file=sys.stderr)
        return 2
    sample, counts = stratified_sample(items, args.sample, args.seed)
    if not sample:
        print(f"skilllift label: {week / 'scores.csv'} has no graded item to sample",
              file=sys.stderr)
        return 2
    missing = write_sheet(sys.stdout, week, sample, final_answer)
    available = sum(n for _t, n in counts.values())
    per = ", ".join(f"{t} {v} {k}/{n}" for (t, v), (k, n) in counts.items())
    print(f"sampled {len(sample)} of {available} graded items (seed {args.seed}): {per}",
          file=sys.stderr)
    if len(sample) < args.sample:
        print(f"only {len(sample)} graded items exist; all of them are on the sheet",
              file=sys.stderr)
    if missing:
        print(f"{missing} row(s) have no final answer (run directory missing)", file=sys.stderr)
    print("fill the verdict column (one of the choices), then: skilllift judge-check "
          f"{week} --labels <this file>", file=sys.stderr)
    return 0


def add_parser(subparsers: Subparsers) -> None:
    """Register ``skilllift label``."""
    parser = subparsers.add_parser(
        "label",
        help="a stratified sample of graded items, with answers, for a person to label",
        description="Print a CSV sheet of a stratified random sample of the week's graded "
                    "items (equal shares of must met/missing, bonus met/absent, avoid "
                    "violated/clean) with each run's final answer and an empty verdict column "
                    "for a person to fill in; feed it to skilllift judge-check. The judge's "
                    "verdicts are not shown, so the labels are blind.",
    )
    parser.add_argument("week_dir", metavar="WEEK_DIR", help="the graded week directory")
    parser.add_argument("--sample", type=int, default=30, metavar="N",
                        help="items to draw (default 30)")
    parser.add_argument("--seed", default="0", metavar="SEED",
                        help="random seed; the same week and seed give the same sheet")
    parser.set_defaults(func=_run)
