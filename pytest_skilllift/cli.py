"""The ``skilllift`` console script: side doors on a week directory and on skills.

Each subcommand lives in the module that owns it and registers itself through
``add_parser(subparsers)``; this file only dispatches.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from pytest_skilllift import __version__

#: subcommand modules, each exposing ``add_parser(subparsers) -> None`` which sets
#: ``func=callable(args) -> int`` on its parser.
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "pytest_skilllift.report.cli",  # summarize
    "pytest_skilllift.report.merge_cli",  # merge
    "pytest_skilllift.report.gate_cli",  # gate
    "pytest_skilllift.judge.calibrate",  # calibrate
    "pytest_skilllift.run.regrade",  # judge
    "pytest_skilllift.judge.agreement",  # judge-check
    "pytest_skilllift.judge.labels",  # label
    "pytest_skilllift.lint.cli",  # score, compare (skills or weeks)
    "pytest_skilllift.lint.depth_cli",  # certify, corpus init
    "pytest_skilllift.runners.image_cli",  # image build
    "pytest_skilllift.report.export",  # export (skill-creator layout)
)


def build_parser() -> argparse.ArgumentParser:
    """The full parser: every subcommand module registers its own subparsers."""
    parser = argparse.ArgumentParser(
        prog="skilllift",
        description="Skill-lift tooling: summarize a week, score skills statically, build images.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        module = importlib.import_module(name)
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``skilllift`` script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return int(func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
