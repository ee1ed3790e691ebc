"""``skilllift gate WEEK_DIR [--gate EXPR ...] [--output text|json]``: a CI verdict on a week.

The same verdict ``pytest --skill-lift --skill-lift-gate=…`` gives at the end of a session,
on a finished week directory (weeks written by the qdrant pipeline included). Without
``--gate`` it uses the gates recorded in the week's ``week.json`` — the gates the run started
with, not an edited config. Nothing is written into the week.

Exit status: 0 every hard gate passed; 1 a hard gate failed or the coverage guard tripped;
2 a usage error (not a week, a bad gate, no gate at all, an unreadable week.json).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers


def add_parser(subparsers: Subparsers) -> None:
    """Register ``gate`` on the ``skilllift`` subparsers (sets ``func``)."""
    p = subparsers.add_parser(
        "gate",
        help="quality gates on a week directory: exit 1 when a hard gate fails",
        description="Measure quality gates [SCOPE.]METRIC OP VALUE[:hard|:soft] on a week "
        "directory. Metrics: must_lift, must_lift_ci_low, composite_lift, must_coverage, "
        "bonus_rate, composite, pass_rate, avoid_violations, trigger_miss_rate, coverage, "
        "verdict. SCOPE: a model label, no-skill / with-skill, a prompt name, chained with "
        "dots. Exit 0 all hard gates pass, 1 a hard gate failed or the coverage guard "
        "tripped, 2 usage error.",
    )
    p.add_argument("week_dir", metavar="WEEK_DIR", type=Path,
                   help="the week directory (holds manifest.csv and scores.csv)")
    p.add_argument("--gate", action="append", default=None, metavar="EXPR",
                   help="a gate, e.g. must_lift_ci_low>0 or haiku.with-skill.pass_rate>=0.8:soft "
                   "(repeatable; default: the gates recorded in WEEK_DIR/week.json)")
    p.add_argument("--output", choices=["text", "json"], default="text",
                   help="report format on stdout (default text)")
    p.add_argument("--min-coverage", type=float, default=None, metavar="SHARE",
                   help="coverage guard: least share of graded runs (default: the week's "
                   "recorded value, else 0.5)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the subcommand; returns the exit status."""
    from pytest_skilllift.model import DEFAULT_MIN_COVERAGE
    from pytest_skilllift.report import gates as gatemod
    from pytest_skilllift.report.gates import append_step_summary, measure
    from pytest_skilllift.report.summarize import summarize_week
    from pytest_skilllift.week.files import MANIFEST_CSV, SCORES_CSV, WEEK_JSON
    from pytest_skilllift.week.identity import WeekFileError, read_week_record

    out = out or sys.stdout
    week_dir: Path = args.week_dir
    if not week_dir.is_dir() or not any((week_dir / n).is_file()
                                        for n in (MANIFEST_CSV, SCORES_CSV)):
        return _usage(f"{week_dir}: not a week directory (no {MANIFEST_CSV} or {SCORES_CSV})")
    try:
        record = read_week_record(week_dir)
    except WeekFileError as exc:
        return _usage(str(exc))
    texts = list(args.gate or (record.gates if record else ()))
    if not texts:
        where = ("its week.json records no gate" if record else
                 "it has no week.json (a week from the qdrant pipeline, or from before gates)")
        return _usage(f"{week_dir}: no gate to measure: {where}; pass --gate EXPR")
    minimum = args.min_coverage
    if minimum is None:
        minimum = record.min_coverage if record else DEFAULT_MIN_COVERAGE
    if not 0.0 <= minimum <= 1.0:
        return _usage(f"--min-coverage must be within [0, 1], got {minimum}")
    summary = summarize_week(week_dir, write=False, plots=False)
    scopes = gatemod.Scopes(models=tuple(summary.week.models),
                            prompts=tuple(summary.week.prompts),
                            conditions=tuple(c for c in summary.week.arm_names
                                             if c != "with-skill@REF"))
    try:
        gates, warnings = gatemod.load_gates(texts, scopes)
    except gatemod.GateError as exc:
        return _usage(str(exc))
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for problem in summary.problems:
        print(f"problem: {problem}", file=sys.stderr)
    report = measure(gates, summary, minimum, week_dir.name)
    if args.output == "json":
        json.dump(report.to_json(), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        if not args.gate:
            out.write(f"gates recorded in {week_dir / WEEK_JSON}\n")
        out.write("\n".join(gatemod.text_lines(report)) + "\n")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        append_step_summary(Path(step_summary), report, summary.data)
    return 0 if report.passed else 1


def _usage(message: str) -> int:
    print(f"skilllift gate: {message}", file=sys.stderr)
    return 2
