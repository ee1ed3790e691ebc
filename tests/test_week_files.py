"""The week directory's vocabulary: one atomic writer, one UTC stamp, one status order."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_skilllift.week import files
from pytest_skilllift.week.files import (
    RUN_STATUSES,
    TRANSCRIPT_ORDER,
    atomic_write_json,
    atomic_write_text,
    utc_stamp,
)


def test_atomic_write_replaces_whole_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "scores.csv"
    atomic_write_text(target, "a,b\r\n1,2\r\n")
    atomic_write_text(target, "new\n")
    assert target.read_bytes() == b"new\n"
    assert os.listdir(target.parent) == ["scores.csv"]
    atomic_write_json(tmp_path / "run.json", {"b": 1, "a": [1]})
    assert (tmp_path / "run.json").read_text() == '{\n  "a": [\n    1\n  ],\n  "b": 1\n}\n'


def test_a_failed_write_keeps_the_old_file(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "scorecard.md"
    atomic_write_text(target, "old")

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)  # the os module week.files renames with
    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(target, "new")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["scorecard.md"]


def test_utc_stamp_is_the_manifest_format() -> None:
    from pytest_skilllift.week.tables import _parse_utc

    assert utc_stamp(0) == "19700101T000000Z"
    assert utc_stamp(1786179600) == "20260808T090000Z"
    assert _parse_utc(utc_stamp(1786179600)) == 1786179600


def test_one_status_vocabulary() -> None:
    from pytest_skilllift.week.files import DROP_REASONS

    assert RUN_STATUSES == ("ok", "invalid", "errored", "budget_capped", "timeout", "no_answer",
                            "verifier_error")
    assert set(DROP_REASONS) == set(RUN_STATUSES)
    assert TRANSCRIPT_ORDER == ("invalid", "budget_capped", "errored", "no_answer")
    assert [RUN_STATUSES[c] for c in (files.STATUS_OK, files.STATUS_INVALID,
                                      files.STATUS_ERRORED, files.STATUS_BUDGET,
                                      files.STATUS_TIMEOUT, files.STATUS_NO_ANSWER)] == [
        "ok", "invalid", "errored", "budget_capped", "timeout", "no_answer"]


def test_lock_held_probes_the_ledgers_lock_without_waiting(tmp_path: Path) -> None:
    """The batch phase's probe (``run/batch_grade.py``) and the ledger's lock are one lock:
    held by another process → True at once; free → False; a link is refused, not truncated."""
    import subprocess
    import sys

    from pytest_skilllift.week.files import WeekLinkError, file_lock, lock_held

    lock = tmp_path / "run" / ".lock"
    assert lock_held(lock) is False
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from pytest_skilllift.week.files import file_lock\n"
         f"with file_lock(Path({str(lock)!r})):\n print('held', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert lock_held(lock) is True
    finally:
        holder.kill()
        holder.wait()
    with file_lock(lock):  # free again, and taken by this process's own lock
        pass
    assert lock_held(lock) is False
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (tmp_path / "linked.lock").symlink_to(target)
    with pytest.raises(WeekLinkError):
        lock_held(tmp_path / "linked.lock")
    assert target.read_text() == "keep me"
