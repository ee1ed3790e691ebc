"""What counts as a week directory, checked before anything is written into one.

A typo in ``--skill-lift-out`` (or ``skilllift merge OUT``, ``skilllift judge --out``) must
not make the tool overwrite someone's ``manifest.csv`` or ``scorecard.md``: a directory that
is not empty is written into only when it is a week — one this tool created (its
``week.json``), a qdrant/skills pipeline week (its ``manifest.csv`` with the qdrant columns),
or one that holds nothing but week files and run folders. Pure filesystem logic, no pytest.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from pytest_skilllift.week import files
from pytest_skilllift.week.columns import MANIFEST_COLUMNS

#: Names a week directory may hold (ours, and what the qdrant pipeline writes).
WEEK_NAMES: frozenset[str] = frozenset(
    getattr(files, name) for name in dir(files)
    if name.isupper() and isinstance(getattr(files, name), str)
    and not name.startswith(("UTC_", "OK", "INVALID", "ERRORED", "BUDGET", "TIMEOUT",
                              "NO_ANSWER")))
#: How many of a refused directory's entries the message names.
SHOWN = 5


class NotAWeek(Exception):
    """The directory is not empty and not a week; the message names what is in it."""


def check_week_dir(path: Path, option: str = "--skill-lift-out") -> None:
    """Raise :class:`NotAWeek` unless ``path`` is absent, empty, or a week directory."""
    path = Path(path)
    if not path.exists():
        return
    if not path.is_dir():
        raise NotAWeek(f"{option}={path}: is not a directory; name a week directory (new or "
                       "one this tool wrote)")
    entries = sorted(os.scandir(path), key=lambda e: e.name)
    if not entries or is_week(path, entries):
        return
    shown = [e.name + ("/" if e.is_dir(follow_symlinks=False) else "")
             for e in entries[:SHOWN]]
    more = f" and {len(entries) - SHOWN} more" if len(entries) > SHOWN else ""
    raise NotAWeek(
        f"{option}={path}: not a week directory and not empty (it holds "
        f"{', '.join(shown)}{more}); nothing was written. A week directory is one this tool "
        f"created (it has {files.WEEK_JSON}) or a qdrant/skills pipeline week (its "
        f"{files.MANIFEST_CSV}). Fix: name a new or empty directory, or the week you meant")


def is_week(path: Path, entries: list[os.DirEntry[str]] | None = None) -> bool:
    """Whether ``path`` is a week directory (see the module docstring)."""
    if (path / files.WEEK_JSON).is_file() and not (path / files.WEEK_JSON).is_symlink():
        return True
    manifest = path / files.MANIFEST_CSV
    if _qdrant_manifest(manifest):
        return True
    if os.path.lexists(manifest):
        return False  # a manifest.csv of something else: never overwritten
    for entry in entries if entries is not None else list(os.scandir(path)):
        if entry.name in WEEK_NAMES or entry.name.startswith("."):
            continue
        if entry.is_dir(follow_symlinks=False) and (
                os.path.lexists(os.path.join(entry.path, files.RUN_FILE))
                or os.path.lexists(os.path.join(entry.path, files.LOCK_FILE))):
            continue  # a run folder (finished, or only its lock)
        return False
    return True


def _qdrant_manifest(path: Path) -> bool:
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            header = next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return tuple(header[:len(MANIFEST_COLUMNS)]) == MANIFEST_COLUMNS
