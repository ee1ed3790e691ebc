"""The ``skilllift`` command: one module per subcommand, on top of the layering."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import argparse


class Subparsers(Protocol):
    """What every subcommand module's ``add_parser`` receives: the action that
    ``ArgumentParser.add_subparsers()`` returns, as far as the modules use it (argparse's
    class for it is private, so it is not named here)."""

    def add_parser(self, name: str, *, help: str | None = ..., description: str | None = ...,
                   epilog: str | None = ...) -> argparse.ArgumentParser:
        """A new subcommand ``name`` and its parser."""
        ...
