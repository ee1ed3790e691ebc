"""``pytest --skill-lift`` against hostile settings and hostile disks, end to end.

The real bundled CLI against the stand-in (``test_plugin_e2e``'s project: two prompts, one
model, four runs):

- ``--skill-lift-out`` naming a folder that is not a week is refused before the first run,
  and nothing in it changes;
- ``--skill-lift-fresh -k`` regrades the selected runs only; the others keep their grades
  and their rows of scores.csv;
- a model answer with escape sequences and a GitHub workflow command reaches the failure
  report inert;
- a full disk stops the session at its first failed write, no run started twice, with a
  message naming the path; a read-only week is a clear error, not a traceback.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.testing.agent_script import skill_agent
from pytest_skilllift.testing.judge_script import _reply, _verdicts, keyword_judge
from pytest_skilllift.testing.replies import Reply
from pytest_skilllift.testing.server import StandIn
from tests.test_plugin_e2e import make_project, n_items, pytestmark, rows, run

__all__ = ["pytestmark"]


def test_out_that_is_not_a_week_is_refused_before_the_first_run(
        pytester: pytest.Pytester, standin: Any) -> None:
    make_project(pytester)
    folder = pytester.path / "Documents"
    folder.mkdir()
    (folder / "manifest.csv").write_text("my,own\n1,2\n")
    (folder / "thesis.tex").write_text("\\begin{document}")
    (folder / "drafts").mkdir()
    (folder / "drafts" / "grades.json").write_text("{\"mine\": true}")
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    result = run(pytester, standin, "-p", "no:xdist", f"--skill-lift-out={folder}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "not a week directory and not empty" in err and "thesis.tex" in err
    assert standin.count("agent") == 0
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "xdist-2"])
def test_fresh_with_k_regrades_only_the_selected_runs(pytester: pytest.Pytester,
                                                      standin: Any, workers: int) -> None:
    root = make_project(pytester)
    mode = ("-n", str(workers)) if workers else ("-p", "no:xdist")
    assert run(pytester, standin, *mode).ret == 0
    week = root / "week"
    first = rows(week / "scores.csv")
    other = [r for r in first if r["prompt"] == "python-packaging-pyproject"]
    assert other and standin.count("judge") == 4
    untouched = {p.parent.name: p.read_bytes() for p in week.glob("python-packaging*/grades.json")}
    result = run(pytester, standin, *mode, "--skill-lift-fresh", "-k", "git-bisect-regression")
    assert result.ret == 0, result.stdout.str()
    assert standin.count("judge") == 4 + 2  # the two selected runs, regraded once each
    again = rows(week / "scores.csv")
    assert len(again) == len(first) == 2 * n_items("git-bisect-regression.json",
                                                   "python-packaging-pyproject.json")
    assert [r for r in again if r["prompt"] == "python-packaging-pyproject"] == other
    assert {p.parent.name: p.read_bytes()
            for p in week.glob("python-packaging*/grades.json")} == untouched


ANSWER = ("Use git bisect.\x1b[2J\x1b]0;owned\x07\n::error file=README.md::the build is broken\n"
          "Revert commits one at a time on the main branch.")


def _hostile_agent(body: dict[str, Any]) -> Reply:
    return Reply.text(ANSWER)


def _quoting_judge(body: dict[str, Any]) -> Reply:
    """Marks every avoid item violated, quoting the hostile part of the answer verbatim."""
    _answer, verdicts = _verdicts(body)
    for entry in verdicts:
        if entry["verdict"] in ("clean", "violated"):
            entry["verdict"], entry["evidence"] = "violated", ANSWER[15:]
    return _reply(body, {"verdicts": verdicts})


def test_model_text_reaches_the_failure_report_inert(pytester: pytest.Pytester) -> None:
    make_project(pytester, prompts=("git-bisect-regression.json",))
    with StandIn(agent=_hostile_agent, judge=_quoting_judge) as api:
        result = run(pytester, api, "-p", "no:xdist", "-rA")
    out = result.stdout.str() + result.stderr.str()
    assert "violated" in out and "the build is broken" in out  # the evidence is shown …
    assert "\x1b" not in out and "\x07" not in out  # … without its escape sequences
    assert not [line for line in out.splitlines() if line.lstrip().startswith("::")]
    assert "\\::error file=README.md::" in out


@contextlib.contextmanager
def _mount(path: Path, options: str) -> Iterator[None]:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); needs root")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "xdist-2"])
def test_a_full_disk_stops_the_session_at_the_first_failed_write(
        pytester: pytest.Pytester, workers: int) -> None:
    root = make_project(pytester)
    disk = root / "small-disk"
    conversations: list[str] = []

    def counting_agent(body: dict[str, Any]) -> Reply:
        if len(body.get("messages") or []) == 1:  # the first turn of a run
            conversations.append(str(body["messages"][0])[:80])
        return skill_agent(body)

    with _mount(disk, "size=256k"), StandIn(agent=counting_agent, judge=keyword_judge) as api:
        filler = disk / "filler"
        with contextlib.suppress(OSError), filler.open("wb") as fh:
            while True:
                fh.write(b"\0" * 4096)
                fh.flush()
        # Room for week.json, not for a run's transcript: the disk fills during the first run.
        with filler.open("r+b") as rw:
            rw.truncate(filler.stat().st_size - 8 * 4096)
        mode = ("-n", str(workers)) if workers else ("-p", "no:xdist")
        result = run(pytester, api, *mode, f"--skill-lift-out={disk}/week")
        out = result.stdout.str() + result.stderr.str()
        assert "INTERNALERROR" not in out and "Traceback" not in out, out
        assert "the week cannot be written" in out and "No space left" in out, out
        assert result.ret != 0
        # At most one paid run per process was started (the one whose files could not be
        # saved): no rubric item of it started it again, no run was started after it.
        assert len(conversations) <= max(1, workers), conversations
        assert api.count("judge") <= max(1, workers)  # graded once, its grades not saved


def test_a_read_only_week_is_a_clear_error(pytester: pytest.Pytester, standin: Any) -> None:
    root = make_project(pytester)
    disk = root / "ro-disk"
    with _mount(disk, "ro,size=64k"):
        result = run(pytester, standin, "-p", "no:xdist", f"--skill-lift-out={disk}/week")
        err = result.stderr.str()
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + err
        assert "Traceback" not in err and "Read-only file system" in err
        assert f"{disk}/week" in err and standin.count("agent") == 0
