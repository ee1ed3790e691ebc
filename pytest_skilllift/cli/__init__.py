"""The ``skilllift`` command: one module per subcommand, on top of the layering."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse
    from typing import TypeAlias

    #: What every subcommand module's ``add_parser`` receives: the action
    #: ``ArgumentParser.add_subparsers()`` returns (argparse's class for it is private, so
    #: this is the one place that names it).
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
