"""The documentation matches the code: links resolve, every documented option, subcommand and
test command exists, and the README stays a front door."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_skilllift.cli.main import build_parser
from pytest_skilllift.config import OPTIONS

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FLAG = re.compile(r"--skill-(?:lift|lint)(?:-[a-z0-9]+)*")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _prose(path: Path) -> str:
    """The text without inline code spans (examples of what a user might write)."""
    return re.sub(r"`[^`\n]*`", "", _text(path))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(doc: Path) -> None:
    broken = []
    for target in LINK.findall(_prose(doc)):
        if target.startswith(("http://", "https://", "mailto:", "#")):
            continue
        path = target.split("#", 1)[0]
        if not (doc.parent / path).exists():
            broken.append(target)
    assert broken == []


def test_documented_options_exist() -> None:
    known = {"--skill-lift", "--skill-lint"} | {o.flag for o in OPTIONS}
    from pytest_skilllift.plugin import lint_hooks  # the --skill-lint-* options

    known |= set(FLAG.findall(_text(Path(lint_hooks.__file__))))
    unknown: dict[str, str] = {}
    for doc in DOCS:
        for flag in FLAG.findall(LINK.sub("]", _text(doc))):  # not in link targets
            if flag not in known:
                unknown.setdefault(flag, str(doc.relative_to(REPO)))
    assert unknown == {}


def test_documented_subcommands_exist(capsys: pytest.CaptureFixture[str]) -> None:
    used = set()
    for doc in DOCS:
        for line in _text(doc).splitlines():
            m = re.match(r"\s*(?:\$ )?skilllift ([a-z][a-z-]*)\b", line)
            if m:
                used.add(m.group(1))
    assert len(used) > 5
    missing = []
    for command in sorted(used):
        with pytest.raises(SystemExit) as done:  # argparse: 0 after --help, 2 if unknown
            build_parser(command).parse_args([command, "--help"])
        if done.value.code != 0:
            missing.append(command)
    capsys.readouterr()
    assert missing == []


def test_readme_is_a_front_door() -> None:
    readme = _text(REPO / "README.md")
    assert len(readme.splitlines()) <= 65
    assert "pytest --skill-lift-demo" in readme and "bash .ci/run" in readme
    assert "skilllift init" in readme and "--collect-only" in readme
    assert "skilllift view" in readme
    # .ci/run runs the test command the README names
    command = re.search(r"then `(\.venv/bin/pytest[^`]*)`", readme)
    assert command is not None
    assert command.group(1) in _text(REPO / ".ci" / "run").splitlines()[-1]
    assert "root" in readme  # .ci/run installs system packages
