"""``skilllift plan [pytest args]``: the runs a week would make and their price, before any run.

The same collection as ``pytest --skill-lift --collect-only`` with the same arguments (``-k``,
``-n``, ``--skill-lift-out``, ``--skill-lift-max-spend``…, so the same selection rules): it
prints the plan — runs new, resumed, to grade, reused from a baseline week — the judge calls,
and the estimate of generation $, judge $ and wall time per (agent, model, arm), from the
repository's previous weeks when they exist, else from the price table (``run.estimate``).
No API is called and nothing is written.

Exit status: pytest's (0 when the selection holds tests, 5 when it is empty, 4 a usage error).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers

#: Quiet collection: the per-file counts, then the plan (the test ids would bury it).
COLLECT_ARGS = ("--skill-lift", "--collect-only", "-qq", "-p", "no:cacheprovider")


def add_parser(subparsers: Subparsers) -> None:
    """Register ``plan`` on the ``skilllift`` subparsers (sets ``func``)."""
    p = subparsers.add_parser(
        "plan",
        help="the runs a week would make and their estimated $ and time (no API call)",
        description="Collect like pytest --skill-lift --collect-only with the given pytest "
        "arguments (-k, -n, --skill-lift-out, --skill-lift-max-spend …) and print the runs to "
        "make (new, resumed, to grade, reused from a baseline week), the judge calls and the "
        "estimated generation $, judge $ and wall time per (agent, model, arm) with a range, "
        "beside the spend cap. From the previous weeks beside the week directory when they "
        "hold runs of the same label and arm, else from the price table. No API call; "
        "nothing is written.",
    )
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="PYTEST_ARGS",
                   help="arguments for pytest, e.g. -k qdrant -n 3 --skill-lift-max-spend=20")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the collection (pytest in a child process: its plugin is then imported fresh and
    its assertion rewriting applies); returns pytest's exit status."""
    import subprocess
    import sys

    extra = [a for a in args.pytest_args if a != "--"]
    return subprocess.run([sys.executable, "-m", "pytest", *COLLECT_ARGS, *extra],
                          check=False).returncode
