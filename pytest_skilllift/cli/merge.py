"""``skilllift merge OUT_WEEK_DIR SHARD_WEEK_DIR...``: put a sharded week together, then summarize.

The merge itself (checks, copies, what is missing) is :mod:`pytest_skilllift.week.merge`; this
command then rebuilds ``manifest.csv``/``scores.csv`` from the run directories and writes the
scorecard, as ``skilllift summarize`` does.

Exit status: 0 when every planned run is in ``OUT``; 1 when runs are still missing (the merge
of what arrived is done and reported: run it again as more shards arrive); 2 when the shards
cannot be merged (nothing was copied) or an argument is wrong.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers


def add_parser(subparsers: Subparsers) -> None:
    """Register ``merge`` on the ``skilllift`` subparsers (sets ``func``)."""
    p = subparsers.add_parser(
        "merge",
        help="merge the shard week directories of one week (--skill-lift-shard) and summarize",
        description="Copy the run directories of each shard (pytest --skill-lift "
        "--skill-lift-shard=I/N) into OUT_WEEK_DIR, after checking that the shards come from "
        "the same week (split and identity) and that no run appears twice with different "
        "content (identical duplicates, e.g. a retried shard, are fine). Reports the runs "
        "missing from every shard, rebuilds manifest.csv and scores.csv and writes the "
        "scorecard. Idempotent: run it again as more shards arrive.",
    )
    p.add_argument("out", metavar="OUT_WEEK_DIR", type=Path,
                   help="the merged week directory (created if needed; name it like the "
                        "shards' week directory, e.g. evals/weekly/20260808)")
    p.add_argument("shards", metavar="SHARD_WEEK_DIR", type=Path, nargs="+",
                   help="a shard's week directory")
    p.add_argument("--history", type=Path, default=None, metavar="CSV",
                   help="history CSV (default: OUT_WEEK_DIR/../scorecard-history.csv)")
    p.add_argument("--no-plots", action="store_true", help="do not draw the PNG plots")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; returns the exit status."""
    from pytest_skilllift.report.summarize import summarize_week
    from pytest_skilllift.week.ledger import Ledger
    from pytest_skilllift.week.merge import MergeRefused, merge_shards

    try:
        result = merge_shards(args.out, args.shards)
    except MergeRefused as refused:
        print(f"skilllift merge: refused, nothing was copied into {args.out}:", file=sys.stderr)
        for problem in refused.problems:
            print(f"  - {problem}", file=sys.stderr)
        return 2
    for line in result.lines():
        print(line)
    from pytest_skilllift.run.triggers import rebuild_trigger_table

    manifest_rows, score_rows = Ledger(args.out).rebuild_csvs()
    print(f"rebuilt manifest.csv ({manifest_rows} runs) and scores.csv ({score_rows} items)")
    trigger_rows = rebuild_trigger_table(args.out)
    if trigger_rows:
        print(f"rebuilt triggers/triggers.csv ({trigger_rows} trigger runs)")
    summary = summarize_week(args.out, history=args.history, plots=not args.no_plots)
    print("\n".join(summary.terminal_lines()))
    for problem in summary.problems:
        print(f"problem: {problem}", file=sys.stderr)
    if result.n_missing or result.incomplete:
        print(f"skilllift merge: {result.n_missing} planned run(s) missing and "
              f"{len(result.incomplete)} unfinished run(s) not copied; merge again when the "
              "rest of the shards arrive (or rerun the shard that lacks them)", file=sys.stderr)
        return 1
    return 0
