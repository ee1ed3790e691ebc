"""Output files get the user's umask like any other file (artifact publishing reads them)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pytest_skilllift.week import files


def test_atomic_writes_follow_the_umask(tmp_path: Path) -> None:
    files._umask.cache_clear()
    old = os.umask(0o022)
    try:
        files.atomic_write_text(tmp_path / "scorecard.md", "# card\n")
        files.atomic_write_json(tmp_path / "scorecard.json", {"a": 1})
        plain = tmp_path / "plot.png"
        plain.write_bytes(b"png")
    finally:
        os.umask(old)
        files._umask.cache_clear()
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes == {"scorecard.md": 0o644, "scorecard.json": 0o644, "plot.png": 0o644}


def test_a_strict_umask_is_kept(tmp_path: Path) -> None:
    files._umask.cache_clear()
    old = os.umask(0o077)
    try:
        files.atomic_write_text(tmp_path / "manifest.csv", "a\n")
    finally:
        os.umask(old)
        files._umask.cache_clear()
    assert stat.S_IMODE((tmp_path / "manifest.csv").stat().st_mode) == 0o600
