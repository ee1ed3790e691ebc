"""``skilllift summarize WEEK_DIR``: write scorecard.md/json (+ plots, history) for a week.

Prints the lift table and the paths written; ``--print`` prints the whole scorecard.md,
``--json`` the whole scorecard.json (a big week's scorecard has a row per prompt and model).

Exit status: 0 for a clean week, 1 when the input had problems (a partial scorecard is
still written and says what is missing), 2 when WEEK_DIR is not a directory.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers


def add_parser(subparsers: Subparsers) -> None:
    """Register ``summarize`` on the ``skilllift`` subparsers (sets ``func``)."""
    p = subparsers.add_parser(
        "summarize",
        help="aggregate a week directory into scorecard.md / scorecard.json",
        description="Aggregate a week directory (manifest.csv, scores.csv) into the lift "
        "scorecard: scorecard.md, scorecard.json, plots, and the history upsert.",
    )
    p.add_argument("week_dir", metavar="WEEK_DIR", type=Path,
                   help="the week directory (holds manifest.csv and scores.csv)")
    p.add_argument("--history", type=Path, default=None, metavar="CSV",
                   help="history CSV (default: WEEK_DIR/../scorecard-history.csv)")
    p.add_argument("--no-plots", action="store_true", help="do not draw the PNG plots")
    p.add_argument("--print", action="store_true", dest="print_all",
                   help="print the whole scorecard.md (default: the lift table and the paths)")
    p.add_argument("--json", action="store_true",
                   help="print the whole scorecard.json")
    p.add_argument("--banner", default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; returns the exit status."""
    if "numpy" not in sys.modules:
        # numpy's OpenBLAS starts a thread per core when it loads, and they spin ≈ 0.1 s of
        # CPU waiting for work this command never gives them (the summary calls no BLAS
        # routine: its einsum is numpy's own loop, so no number depends on this) — a third
        # of a small week's summarize, taken from whatever else the machine runs.  The plot
        # worker inherits it.  A user's own setting wins.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from pytest_skilllift.report.scorecard import render_json
    from pytest_skilllift.report.summarize import summarize_week

    week_dir: Path = args.week_dir
    if not week_dir.is_dir():
        print(f"skilllift summarize: {week_dir}: not a directory", file=sys.stderr)
        return 2
    # A one-shot process that builds ~10^5 small objects (the scorecard's rows) and exits:
    # the cyclic collector would only rescan them again and again (≈ 7% of the run), and
    # collecting them (and matplotlib's) at interpreter exit is another ~0.3 s for nothing.
    gc.disable()
    atexit.register(gc.freeze)
    try:
        summary = summarize_week(week_dir, history=args.history, write=True,
                                 plots=not args.no_plots, banner=args.banner)
    except OSError as exc:  # unreadable inputs are problems in the summary; this is a write
        target = Path(exc.filename2 or exc.filename or week_dir)  # replace(tmp, dst): the dst
        if target.name.startswith(".") and target.name.endswith(".tmp"):
            target = target.parent  # a temp file beside the output: the directory refused it
        print(f"skilllift summarize: cannot write {target} ({exc.strerror or exc}); fix: "
              f"make {week_dir} writable, or pass --history PATH for the history file",
              file=sys.stderr)
        return 2
    if args.json or args.print_all:
        out = render_json(summary.data) if args.json else summary.markdown
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
    else:
        print("\n".join(summary.terminal_lines(scorecard_path=False)))
    for problem in summary.problems:
        print(f"problem: {problem}", file=sys.stderr)
    written = ", ".join(str(p) for p in summary.written)
    print(f"wrote {written}", file=sys.stderr if args.json or args.print_all else sys.stdout)
    return 1 if summary.problems else 0
