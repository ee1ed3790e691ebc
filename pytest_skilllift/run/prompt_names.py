"""Prompt names across a prompt directory: one name, one file.

A prompt's ``name`` is its identity everywhere downstream (run ids, run directories, the
CSVs' ``prompt`` column), so two files with the same name would silently share runs: the
second would never run and its tests would report the first's verdicts. This module finds
such collisions before anything runs. Pure logic: no pytest.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from pytest_skilllift.run.prompts import PromptError, is_heldout


def prompt_files(prompts_dir: Path, heldout: bool) -> list[Path]:
    """Every prompt file a session may collect (resolved; ``discord-*`` only with
    ``heldout``): the files whose names must be unique."""
    if not prompts_dir.is_dir():
        return []
    return sorted(p.resolve() for p in prompts_dir.rglob("*.json")
                  if heldout or not is_heldout(p))


def declared_names(paths: Iterable[Path]) -> dict[str, list[Path]]:
    """``name`` → the files declaring it (sorted). Files that cannot be read or hold no
    string ``name`` are left out: their own validation reports them."""
    owners: dict[str, list[Path]] = {}
    for path in sorted(paths):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):  # its own validation reports it
            continue
        name = data.get("name") if isinstance(data, dict) else None
        if isinstance(name, str) and name.strip():
            owners.setdefault(name, []).append(path)
    return owners


def check_unique(path: Path, name: str, owners: dict[str, list[Path]]) -> None:
    """Raise ``PromptError`` when an earlier file (in sorted order) declares ``name`` too.

    The first file keeps the name and runs; every later one is a collection error naming
    both files, so no run is shared and no verdict is reported twice.
    """
    files = owners.get(name, [])
    first = files[0] if files else path
    if first == path:
        return
    raise PromptError(path, "name", f"is {name!r}, already the name of {first} (two prompt "
                      "files with one name would share their runs and verdicts)",
                      f"give one of {first.name} and {path.name} another name")


def file_name_mismatch(path: Path, name: str) -> str | None:
    """A warning text when ``name`` differs from the file's name (a likely copy-paste slip:
    run ids and test ids use the name, so the file is hard to find from a run id)."""
    if name == path.stem:
        return None
    return (f"{path}: field 'name' is {name!r} but the file is {path.name}; run ids, test "
            f"ids and the CSVs use the name. Fix: rename the file to {name}.json or set "
            f"\"name\": \"{path.stem}\"")
