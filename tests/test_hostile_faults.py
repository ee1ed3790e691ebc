"""Bounded under faults and size: a full or read-only disk, a huge file in a skill family.

- a week that cannot be written stops the engine at the first failed write, with a message
  naming the path, and no run is started again for it (a real full tmpfs when this process
  may mount one, else ``os.replace`` raising ``ENOSPC``);
- a skill family is hashed in chunks (a large file never sits in memory), and a family over
  ``--skill-lift-max-family-mb`` is an invalid install, named, instead of being copied into
  every with-skill run.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_skilllift.config import SettingsError
from pytest_skilllift.run.engine import skills_sha
from pytest_skilllift.runners.install import check_family
from pytest_skilllift.week.files import WeekWriteError, atomic_write_text
from pytest_skilllift.week.identity import skill_family_hash
from tests.test_run_engine import CountingGrader, FakeRunner, engine, spec


@pytest.fixture
def full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on a filesystem with no space left."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
                             capture_output=True, check=False).returncode == 0
    if mounted:
        with contextlib.suppress(OSError), (disk / "filler").open("wb") as fh:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
    else:  # no mount here: the same error, from the call that would meet it
        real = os.replace

        def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
            if str(dst).startswith(str(disk)):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            real(src, dst)

        monkeypatch.setattr(os, "replace", replace)
    try:
        yield disk
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_stops_the_engine_and_no_run_is_started_twice(full_disk: Path) -> None:
    runner, grader = FakeRunner(), CountingGrader()
    e = engine(full_disk / "week", runner, grader)
    with pytest.raises(WeekWriteError, match=r"cannot write .*: No space left on device; "
                                             r"free space on that filesystem"):
        e.result(spec("no-skill"))
    # Every later item of that run, and every other run, fails at once: nothing is started.
    for condition in ("no-skill", "with-skill"):
        with pytest.raises(WeekWriteError):
            e.result(spec(condition))
    assert len(runner.calls) <= 1 and grader.calls == 0


def test_a_read_only_week_is_a_clear_error(tmp_path: Path) -> None:
    disk = tmp_path / "ro"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(disk)],
                      capture_output=True, check=False).returncode != 0:
        pytest.skip("cannot mount a read-only tmpfs here (needs root); the plugin test "
                    "test_plugin_hostile covers the message")
    try:
        with pytest.raises(WeekWriteError, match=rf"cannot write {disk}/week/week.json: "
                                                 "Read-only file system; choose a writable"):
            atomic_write_text(disk / "week" / "week.json", "{}")
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.fixture
def big_family(tmp_path: Path) -> Path:
    """A skill family with a 300 MiB file (sparse: costs no disk)."""
    family = tmp_path / "skills" / "huge"
    family.mkdir(parents=True)
    (family / "SKILL.md").write_text("---\nname: huge\ndescription: x\n---\nbody\n")
    with (family / "dataset.bin").open("wb") as fh:
        fh.truncate(300 * 2**20)
    return family


@pytest.mark.slow
def test_a_family_is_hashed_in_chunks(big_family: Path) -> None:
    tracemalloc.start()
    try:
        skill_family_hash(big_family.parent, "huge")
        sha = skills_sha(big_family.parent, "huge")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sha.startswith("tree-")
    assert peak < 32 * 2**20, f"hashing held {peak / 2**20:.0f} MiB"


def test_a_family_over_the_size_limit_is_an_invalid_install_named(big_family: Path) -> None:
    error = check_family(big_family, max_bytes=100 * 2**20)
    assert error is not None
    assert error.startswith("invalid install: skill family 'huge' holds 300.0 MiB")
    assert "--skill-lift-max-family-mb" in error and "huge/dataset.bin (300.0 MiB)" in error
    assert check_family(big_family, max_bytes=None) is None  # 0: no limit


def test_the_family_limit_option_is_checked() -> None:
    from pytest_skilllift.config import _family_limit

    assert _family_limit("0") == 0.0 and _family_limit(12.5) == 12.5
    with pytest.raises(SettingsError, match="max-family-mb must be at least 0"):
        _family_limit("-1")
