"""``skilllift view WEEK_DIR [--out DIR] [--compare OTHER_WEEK_DIR] [--serve [--port N]]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers

__all__ = ["add_parser"]


def _run(args: argparse.Namespace) -> int:
    from pytest_skilllift.view.site import CSP_SERVED, CSP_STATIC, ViewError, build_site

    week = Path(args.week_dir)
    if not week.is_dir():
        print(f"skilllift view: {week}: not a directory", file=sys.stderr)
        return 2
    if args.compare is not None and not Path(args.compare).is_dir():
        print(f"skilllift view: --compare {args.compare}: not a directory", file=sys.stderr)
        return 2
    if args.port is not None and not args.serve:
        print("skilllift view: --port needs --serve", file=sys.stderr)
        return 2
    if args.idle_timeout is not None and not args.serve:
        print("skilllift view: --idle-timeout needs --serve", file=sys.stderr)
        return 2
    if args.idle_timeout is not None and not args.idle_timeout >= 0:
        print(f"skilllift view: --idle-timeout must be 0 (never) or a number of seconds, not "
              f"{args.idle_timeout}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else None
    try:
        site = build_site(week, out, compare=Path(args.compare) if args.compare else None,
                          csp=CSP_SERVED if args.serve else CSP_STATIC)
    except ViewError as err:
        print(f"skilllift view: {err}", file=sys.stderr)
        return 2
    for problem in site.problems:
        print(f"skilllift view: input problem: {problem}", file=sys.stderr)
    print(f"wrote {site.index} ({site.pages} prompt pages)")
    if site.history_compare:
        print(f"compare: {site.history_compare}")
    if not args.serve:
        return 0
    from pytest_skilllift.view.serve import DEFAULT_IDLE_TIMEOUT, serve

    return serve(week, site.index.parent, port=args.port or 0, sample=args.sample,
                 seed=args.seed, idle_timeout=(DEFAULT_IDLE_TIMEOUT if args.idle_timeout is None
                                               else args.idle_timeout))


def add_parser(subparsers: Subparsers) -> None:
    """Register ``skilllift view``."""
    parser = subparsers.add_parser(
        "view",
        help="the week as an offline HTML site (answers, quotes, tool calls); --serve labels",
        description="Write a static, self-contained HTML site of the week (default "
                    "WEEK_DIR/view/index.html; open it from disk, nothing is fetched from the "
                    "network): the scorecard's headline numbers, every table sortable, a page "
                    "per prompt with its rubric × runs verdicts, each run's answer with the "
                    "judge's evidence quote marked, the two arms side by side and the run's "
                    "tool calls. --serve serves it on 127.0.0.1 and adds blind labelling into "
                    "WEEK_DIR/labels.csv, the file skilllift judge-check reads. The server "
                    "ends on Ctrl-C, or by itself after --idle-timeout seconds with no "
                    "request (default 1800).",
    )
    parser.add_argument("week_dir", metavar="WEEK_DIR", help="the week directory")
    parser.add_argument("--out", metavar="DIR", default="",
                        help="where to write the site (default WEEK_DIR/view)")
    parser.add_argument("--compare", metavar="OTHER_WEEK_DIR", default=None,
                        help="also write compare.html: skilllift compare WEEK_DIR OTHER_WEEK_DIR, "
                             "linked to both weeks' prompt pages (default: the previous "
                             "comparable week the history names, when it is beside this one)")
    parser.add_argument("--serve", action="store_true",
                        help="serve the site on 127.0.0.1 and add the labelling page")
    parser.add_argument("--port", type=int, default=None, metavar="PORT",
                        help="port for --serve (default: a free one)")
    parser.add_argument("--idle-timeout", type=float, default=None, metavar="SECONDS",
                        help="with --serve: stop after this many seconds without a request "
                             "(default 1800; 0: only Ctrl-C stops it)")
    parser.add_argument("--sample", type=int, default=30, metavar="N",
                        help="items in the labelling sample (as skilllift label; default 30)")
    parser.add_argument("--seed", default="0", metavar="SEED",
                        help="seed of the labelling sample (as skilllift label)")
    parser.set_defaults(func=_run)
