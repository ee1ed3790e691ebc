"""``skilllift score DIR`` on a tree: each skill's top findings under the table (what to fix
first), the count of the others and the command that shows every one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_skilllift.cli import score as cli
from pytest_skilllift.lint.analyze import score_path
from pytest_skilllift.testing.skill_dirs import write_skill


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    write_skill(root / "other", name="other")
    write_skill(root / "sizing", name="sizing",
                body="# Sizing\n\n## Related\nSee also [other](../other/SKILL.md).\n")
    write_skill(root / "broken", name="broken", description="short",
                body="[gone](references/gone.md)\n")
    return root


def _score(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert cli.main(["score", *argv]) == 0
    return capsys.readouterr().out


def _blocks(out: str) -> dict[str, list[str]]:
    """``skill -> its lines`` of the "top findings" blocks."""
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in out.splitlines():
        head = re.fullmatch(r"(\S+) \(\d+\.\d\): top findings", line)
        if head:
            current = blocks.setdefault(head.group(1), [])
        elif current is not None and line.startswith("  "):
            current.append(line)
        else:
            current = None
    return blocks


def test_each_skill_shows_its_top_findings_and_where_the_rest_are(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _score(capsys, str(tree))
    blocks = _blocks(out)
    run = score_path(tree)
    assert set(blocks) == {r.skill.rel_id for r in run.reports if cli.top_findings(r)}
    assert set(blocks) == {"other", "sizing", "broken"}
    for r in run.reports:
        items = cli.top_findings(r)
        lines = blocks[r.skill.rel_id]
        shown = [ln for ln in lines if not ln.startswith(("  …", "      fix:"))]
        assert len(shown) == min(len(items), cli.TOP_FINDINGS)
        more = len(items) - cli.TOP_FINDINGS
        if more > 0:
            assert lines[-1] == f"  … {more} more: skilllift score {tree / r.skill.rel_id}"
    assert f"every finding of a skill: skilllift score {tree}/<skill>" in out


def test_anti_patterns_come_first_then_the_heaviest_sub_checks(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = _blocks(_score(capsys, str(tree)))
    (report,) = [r for r in score_path(tree).reports if r.skill.rel_id == "broken"]
    flags = [f.flag for f in report.all_findings]
    assert "ORPHAN_REFERENCE" in flags
    broken = blocks["broken"]
    shown = [ln for ln in broken if not ln.startswith(("  …", "      fix:"))]
    assert [ln.split(":")[0].strip() for ln in shown] == flags[:cli.TOP_FINDINGS]
    assert broken[1].startswith("      fix: ")  # each finding with its fix
    # The sub-check lines name different checks (one reason each before any second one).
    checks = [ln.split()[0] for ln in blocks["sizing"] if not ln.startswith("  …")]
    assert len(checks) == len(set(checks))


def test_the_command_it_points_to_shows_the_hidden_findings(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (report,) = [r for r in score_path(tree).reports if r.skill.rel_id == "other"]
    hidden = cli.top_findings(report)[cli.TOP_FINDINGS:]
    assert hidden
    single = _score(capsys, str(tree / "other"))
    for item in hidden:
        reason = item.split(": ", 1)[1]  # "<check> <score>: <reason>"
        assert reason in single
