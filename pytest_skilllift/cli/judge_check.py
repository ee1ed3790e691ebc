"""``skilllift judge-check WEEK_DIR --labels LABELS.csv``: the command of
:mod:`pytest_skilllift.judge.agreement` (the judge against people); the measures stay there."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_skilllift.judge.agreement import CHECK_FILE, LabelError, check_week, report_lines
from pytest_skilllift.judge.graded import GradedWeekError
from pytest_skilllift.week.files import atomic_write_json

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers


def _run(args: argparse.Namespace) -> int:
    week = Path(args.week_dir)
    if not week.is_dir():
        print(f"skilllift judge-check: {week}: not a directory", file=sys.stderr)
        return 2
    try:
        report = check_week(week, Path(args.labels))
    except (LabelError, GradedWeekError) as err:
        print(f"skilllift judge-check: {err}", file=sys.stderr)
        return 2
    atomic_write_json(week / CHECK_FILE, report)
    if args.output == "json":
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        for line in report_lines(report):
            print(line)
    print(f"wrote {week / CHECK_FILE} (the next summarize shows the trust state)",
          file=sys.stderr)
    return 1 if report["unmatched"] else 0


def add_parser(subparsers: Subparsers) -> None:
    """Register ``skilllift judge-check``."""
    parser = subparsers.add_parser(
        "judge-check",
        help="agreement of the judge with human labels: kappa, TPR/TNR, trust state",
        description="Compare a week's judge verdicts with human labels (LABELS.csv: prompt,"
                    "model,condition,rep,item_type,item_index|item_text,verdict). Reports raw "
                    "agreement, Cohen's kappa and per item type the judge's true-positive and "
                    "true-negative rates (avoid: violation detection and false alarms) with "
                    "Wilson 95% intervals, lists disagreements and unmatched rows, and writes "
                    "WEEK_DIR/judge-check.json with the trust state (trusted, provisional, "
                    "untrusted, unmeasured) the scorecard shows.",
    )
    parser.add_argument("week_dir", metavar="WEEK_DIR", help="the graded week directory")
    parser.add_argument("--labels", required=True, metavar="LABELS.csv",
                        help="human verdicts, one row per item (skilllift label writes a sheet)")
    parser.add_argument("--output", choices=("text", "json"), default="text",
                        help="report format on stdout (default text)")
    parser.set_defaults(func=_run)
