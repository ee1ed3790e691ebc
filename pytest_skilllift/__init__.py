"""pytest-skilllift: measure whether agent skills make Claude Code answer better."""

__version__ = "0.1.0"
