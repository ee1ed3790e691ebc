"""Files this tool did not write are never replaced: the qdrant pipeline's scorecard.md."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skilllift.week.files import SCORECARD_OURS_MD

REF_WEEK = (Path(__file__).resolve().parent / "fixtures" / "data" / "qdrant-skills" / "weekly"
            / "20260808")


@pytest.mark.slow
def test_summarize_keeps_the_qdrant_pipelines_scorecard(tmp_path: Path) -> None:
    week = tmp_path / "weekly" / REF_WEEK.name
    shutil.copytree(REF_WEEK, week)
    theirs = (week / "scorecard.md").read_bytes()
    for _ in range(2):  # and again: the second summary still knows whose file it is
        done = subprocess.run([sys.executable, "-m", "pytest_skilllift.cli.main", "summarize",
                               str(week), "--no-plots"], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert (week / "scorecard.md").read_bytes() == theirs
        ours = (week / SCORECARD_OURS_MD).read_text()
        assert ours.startswith("# Weekly Skill Scorecard")
        assert "kept byte for byte; this summary is scorecard-skilllift.md" in ours
        assert str(week / SCORECARD_OURS_MD) in done.stdout + done.stderr
