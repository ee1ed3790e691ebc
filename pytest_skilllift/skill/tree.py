"""Walking a skill tree: every folder and file, links listed and never entered, without
recursion and with a depth cap (what the scan, the install and a revision's hash share).

Python's recursive walks (``os.walk``, ``Path.rglob`` in 3.11) raise RecursionError near
1,000 levels: a 1,200-level folder in a skill family was a traceback in ``skilllift scan``
and an INTERNALERROR of every session. Pure filesystem logic, no pytest.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Final

__all__ = ["MAX_TREE_DEPTH", "tree_paths", "walk_nofollow"]

#: Folder levels a walk of a skill tree descends at most: a deeper folder is not entered, and
#: the walker's caller names it (a scan finding, a refused install). Python's recursive walks
#: (``os.walk``, ``Path.rglob`` before 3.12/3.13) raise RecursionError near 1,000 levels.
MAX_TREE_DEPTH: Final = 64


def walk_nofollow(root: Path, *, max_depth: int = MAX_TREE_DEPTH,
                  too_deep: list[Path] | None = None
                  ) -> Iterator[tuple[Path, list[str], list[str]]]:
    """``os.walk(root, followlinks=False)``, top-down, without recursion: ``(folder, dirs,
    files)``; ``dirs`` may be pruned in place. A link to a folder is listed in ``dirs`` (as
    os.walk does) and never entered. A folder more than ``max_depth`` levels below ``root``
    is not entered: it is appended to ``too_deep`` (never silently left out)."""
    stack: list[tuple[Path, int]] = [(Path(root), 0)]
    while stack:
        here, depth = stack.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        dirs: list[str] = []
        names: list[str] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else names).append(entry.name)
        yield here, dirs, names
        for d in reversed(dirs):
            path = here / d
            if os.path.islink(path):
                continue
            if depth + 1 > max_depth:
                if too_deep is not None:
                    too_deep.append(path)
                continue
            stack.append((path, depth + 1))


def tree_paths(root: Path, *, max_depth: int = MAX_TREE_DEPTH,
               too_deep: list[Path] | None = None) -> list[Path]:
    """Every path under ``root`` sorted as ``sorted(root.rglob("*"))`` sorts them (links
    listed, never entered), by :func:`walk_nofollow`: no recursion, depth capped."""
    out: list[Path] = []
    for here, dirs, names in walk_nofollow(root, max_depth=max_depth, too_deep=too_deep):
        out += [here / n for n in (*dirs, *names)]
    return sorted(out)
