"""``skilllift calibrate``: the command of :mod:`pytest_skilllift.judge.calibrate` (the judge's
self-agreement check); the arguments and the printing, the check itself stays there."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_skilllift.config import option_default
from pytest_skilllift.judge import calibrate as core
from pytest_skilllift.judge.calibrate import (
    MUST_UNANIMITY_BAR,
    CalibrationError,
    calibrate,
    earlier_calibration,
    pick_runs,
    read_week_calibration,
    record_week_calibration,
)
from pytest_skilllift.trace.transcript import final_answer
from pytest_skilllift.week.files import CALIBRATION_FILE, atomic_write_text

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers


def _run(args: argparse.Namespace) -> int:
    from pytest_skilllift.judge.client import Judge

    week = Path(args.week_dir)
    run_ids = list(args.run or [])
    if args.runs:
        run_ids += [r for r in pick_runs(week, args.runs, args.seed) if r not in run_ids]
    if not run_ids:
        print("skilllift calibrate: name a run (--run RUN_ID) or how many to pick (--runs K); "
              f"{week} has no graded run to pick" if args.runs else
              "skilllift calibrate: name a run (--run RUN_ID) or how many to pick (--runs K)",
              file=sys.stderr)
        return 2
    judge = Judge(args.model)
    data: dict[str, Any] = {}
    for run_id in run_ids:
        kept = (None if args.fresh else
                earlier_calibration(week, run_id, judge.model, args.samples, args.bar))
        if kept is not None:
            # Resuming an interrupted pass: this run was calibrated the same way already.
            print(f"calibration of {run_id}: kept from an earlier pass ({kept['graded_samples']} "
                  f"of {args.samples} samples graded by {judge.model}; --fresh to redo it)")
            continue
        try:
            result = calibrate(week, run_id, args.samples, judge, bar=args.bar,
                               transcript_answer=final_answer)
        except CalibrationError as err:
            print(f"skilllift calibrate: {err}", file=sys.stderr)
            return 2
        for line in result.lines():
            print(line)
        atomic_write_text(week / run_id / CALIBRATION_FILE,
                          json.dumps(result.to_json(), indent=2) + "\n")
        if result.graded_samples < 2:
            print(f"skilllift calibrate: fewer than two samples of {run_id} were graded; no "
                  "agreement to report", file=sys.stderr)
            return 2
        data = record_week_calibration(week, result)
    # Every run kept from an earlier pass: the file already holds them and their summary.
    summary = (data or read_week_calibration(week))["summary"]
    share = summary["must_unanimous_share"]
    flips = ", ".join(
        f"{t} {'n/a' if s['flip_rate'] is None else format(s['flip_rate'], '.0%')} "
        f"({s['split']}/{s['items']})" for t, s in summary["by_type"].items())
    print(f"week {week.name}: {summary['runs']} run(s) calibrated; flip rate {flips}; musts "
          f"unanimous {'n/a' if share is None else format(share, '.0%')} (bar >= "
          f"{summary['bar']:.0%}) -> {'PASS' if summary['passed'] else 'FAIL'}; "
          f"written to {week / CALIBRATION_FILE}")
    return 0 if summary["passed"] else 1


def add_parser(subparsers: Subparsers) -> None:
    """Register ``skilllift calibrate``."""
    parser = subparsers.add_parser(
        "calibrate",
        help="judge self-agreement: grade runs' answers N times, report per-item unanimity "
             "and flip rates (kept in WEEK_DIR/calibration.json for the scorecard)",
        description=core.__doc__.split("\n\n")[1] if core.__doc__ else None,
    )
    parser.add_argument("week_dir", metavar="WEEK_DIR", help="the week directory")
    parser.add_argument("--run", action="append", metavar="RUN_ID",
                        help="a run to re-grade (repeat for several)")
    parser.add_argument("--runs", type=int, default=0, metavar="K",
                        help="also pick K graded runs of the week at random (see --seed)")
    parser.add_argument("--seed", default="0", metavar="SEED", help="seed for --runs (default 0)")
    parser.add_argument("--samples", type=int, default=3, metavar="N",
                        help="judge samples (default 3)")
    parser.add_argument("--model", default=None, metavar="MODEL",
                        help=f"judge model (default {option_default('judge-model')})")
    parser.add_argument("--bar", type=float, default=MUST_UNANIMITY_BAR, metavar="SHARE",
                        help="required share of unanimous must items (default 0.95)")
    parser.add_argument("--fresh", action="store_true",
                        help="calibrate every run again, also those an earlier pass with the "
                             "same model, samples and bar calibrated (by default they are "
                             "kept, so an interrupted command resumes)")
    parser.set_defaults(func=_run)
