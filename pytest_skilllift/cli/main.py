"""The ``skilllift`` console script: side doors on a week directory and on skills.

Each subcommand is a module of this package that registers itself through
``add_parser(subparsers)`` and calls the core package that owns the work; this file only
dispatches.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
from collections.abc import Iterator, Sequence
from types import FrameType

from pytest_skilllift import __version__

#: subcommand modules, each exposing ``add_parser(subparsers) -> None`` which sets
#: ``func=callable(args) -> int`` on its parser.
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "pytest_skilllift.cli.init",  # init
    "pytest_skilllift.cli.summarize",  # summarize
    "pytest_skilllift.cli.merge",  # merge
    "pytest_skilllift.cli.gate",  # gate
    "pytest_skilllift.cli.calibrate",  # calibrate
    "pytest_skilllift.cli.judge",  # judge
    "pytest_skilllift.cli.judge_check",  # judge-check
    "pytest_skilllift.cli.label",  # label
    "pytest_skilllift.cli.score",  # score, compare (skills or weeks)
    "pytest_skilllift.cli.certify",  # certify, corpus init
    "pytest_skilllift.cli.scan",  # scan (security)
    "pytest_skilllift.cli.lint_evals",  # lint-evals
    "pytest_skilllift.cli.image",  # image build
    "pytest_skilllift.cli.export",  # export (skill-creator layout)
    "pytest_skilllift.cli.view",  # view (the offline HTML site, labelling)
    "pytest_skilllift.cli.plan",  # plan (the runs and their price, before the run)
    "pytest_skilllift.cli.tasks",  # tasks check (Harbor tasks: lint, oracle, no-op)
    "pytest_skilllift.cli.import_runs",  # import harbor (Harbor job directories → a week)
)


#: ``skilllift --help``'s epilog: the commands a first week needs, in the order it needs them.
EXAMPLES = """\
examples:
  skilllift init .                          scaffold pytest.ini, prompt and trigger files
  pytest --skill-lift --collect-only -q     list the runs and rubric items a week would grade
  skilllift plan -n 3                       the runs to make and their estimated $ and time
  pytest --skill-lift -k git-bisect         one real week, for the prompts matching -k
  skilllift summarize evals/weekly/20260808 rebuild the scorecard of a week directory
  skilllift view evals/weekly/20260808      the week as an offline HTML site
  skilllift score skills                    static quality of every skill under skills/
  skilllift gate evals/weekly/20260808 --gate 'must_lift_ci_low>0'
                                            exit 1 when a hard gate fails
"""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser: every subcommand module registers its own subparsers.

    With ``command``, registration stops at the module that registers it: ``skilllift
    summarize`` then imports only its own module, not every other subcommand's libraries.
    An unknown or absent command registers them all (``--help`` and the "invalid choice"
    error list every command).
    """
    parser = argparse.ArgumentParser(
        prog="skilllift",
        description="Skill-lift tooling: summarize a week, score skills statically, build images.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,  # keeps the examples' lines
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND",
                                help="one of the commands below; skilllift COMMAND --help "
                                "for its own options")
    for name in SUBCOMMAND_MODULES:
        module = importlib.import_module(name)
        module.add_parser(sub)
        if command is not None and command in sub.choices:
            break
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``skilllift`` script."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    # The top-level parser has no option that takes a value: the first word is the command.
    command = next((a for a in args_list if not a.startswith("-")), None)
    parser = build_parser(command)
    if command == "plan" and not {"-h", "--help"} & set(args_list):
        # Every word after ``plan`` is pytest's (-k, -n, --skill-lift-…), unparsed here.
        at = args_list.index("plan")
        args = parser.parse_args(args_list[:at + 1])
        args.pytest_args = args_list[at + 1:]
    else:
        args = parser.parse_args(args_list)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    with _signals_interrupt():
        try:
            return int(func(args))
        except KeyboardInterrupt as exc:
            return _interrupted(str(args.command), exc)
        finally:
            _forget_registry()


def _forget_registry() -> None:
    """Remove the command's registry of agent runs, when it made one (no temp dir left)."""
    inflight = sys.modules.get("pytest_skilllift.runners.inflight")
    registry = getattr(inflight, "_PROCESS", None)
    if registry is not None:
        registry.remove()


#: pytest's "interrupted" exit status (``pytest.ExitCode.INTERRUPTED``), for every command.
INTERRUPTED = 2


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise KeyboardInterrupt like Ctrl-C (once), so a cancelled job
    stops its agents and keeps what it wrote instead of dying mid-way."""
    raised = False

    def handle(signum: int, frame: FrameType | None) -> None:
        nonlocal raised
        if not raised:  # a second signal must not break the clean-up of the first
            raised = True
            raise KeyboardInterrupt(signal.Signals(signum).name)

    old = {}
    for sig in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)):
        if sig is not None:
            with contextlib.suppress(ValueError, OSError):
                old[sig] = signal.signal(sig, handle)
    try:
        yield
    finally:
        for sig, handler in old.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, handler)


def _interrupted(command: str, exc: KeyboardInterrupt) -> int:
    """Stop the agent CLIs this command started; say so; pytest's interrupted status."""
    from pytest_skilllift.runners.inflight import process_inflight

    inflight = process_inflight()
    stopped = sorted({*inflight.stop_all(), *inflight.stopped_runs()})
    inflight.remove()
    what = (f"{len(stopped)} agent run(s) in flight were stopped" if stopped
            else "no agent run was in flight")
    print(f"skilllift {command}: interrupted ({exc or 'SIGINT'}): {what}; what was written "
          "so far is kept: run the same command again to resume", file=sys.stderr)
    return INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
