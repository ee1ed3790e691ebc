"""``skilllift init`` and the eval files against hostile projects (issue: third round of
hostile input): pytest settings in pyproject.toml, a dangling ``evals`` link, a prompt JSON
nested 100,000 deep or holding a 5,000-digit integer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skilllift.cli import main as cli
from pytest_skilllift.config import DEMO_PROJECT

PYPROJECT = """[project]
name = "mine"
version = "0"

[tool.pytest.ini_options]
testpaths = ["tests"]
python_files = ["check_*.py"]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(DEMO_PROJECT / "skills", tmp_path / "skills")
    return tmp_path


def test_init_never_shadows_pytest_settings_in_pyproject(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "pyproject.toml").write_text(PYPROJECT)
    (project / "tests").mkdir()
    (project / "tests" / "check_mine.py").write_text("def test_mine():\n    pass\n")
    assert cli.main(["init", str(project)]) == 0
    assert not (project / "pytest.ini").exists()
    out = capsys.readouterr().out
    assert "[tool.pytest.ini_options]" in out and 'skill_lift_prompts = "evals/test-prompts"' in out
    # The project's own tests are still collected (pytest.ini would have shadowed python_files).
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:randomly", "-p", "no:cacheprovider"], cwd=project,
                          capture_output=True, text=True, timeout=120, check=False)
    assert "check_mine.py::test_mine" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize(("name", "text", "section"), [
    ("tox.ini", "[pytest]\ntestpaths = tests\n", "[pytest]"),
    ("setup.cfg", "[tool:pytest]\ntestpaths = tests\n", "[tool:pytest]"),
])
def test_init_with_settings_in_an_ini_file(project: Path, name: str, text: str, section: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    (project / name).write_text(text)
    assert cli.main(["init", str(project)]) == 0
    assert not (project / "pytest.ini").exists()
    out = capsys.readouterr().out
    assert section in out and "skill_lift_prompts = evals/test-prompts" in out


def test_a_dangling_evals_link_is_a_clear_error(project: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    os.symlink(project / "nowhere", project / "evals")
    assert cli.main(["init", str(project)]) == 2
    err = capsys.readouterr().err
    assert "evals is a symbolic link to" in err and "does not exist" in err
    assert "Traceback" not in err


DEEP = "[" * 100_000 + "]" * 100_000
HUGE = '{"name": "huge", "prompt": "q", "rubric": [{"type": "must", "text": "x", "weight": ' + \
       "9" * 5000 + "}]}"


@pytest.mark.parametrize(("name", "text"), [("deep.json", DEEP), ("huge.json", HUGE)])
def test_a_pathological_prompt_json_is_a_collection_error_naming_it(
        pytester: pytest.Pytester, name: str, text: str) -> None:
    prompts = pytester.path / "evals" / "test-prompts"
    prompts.mkdir(parents=True)
    (prompts / name).write_text(text)
    (pytester.path / "skills").symlink_to(DEMO_PROJECT / "skills")
    result = pytester.runpytest_subprocess("--skill-lift", "--collect-only", "-p",
                                           "no:cacheprovider")
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out
    assert f"ERROR collecting evals/test-prompts/{name}" in out
    assert result.ret in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.INTERRUPTED)
    lint = subprocess.run([sys.executable, "-m", "pytest_skilllift.cli", "lint-evals",
                           "--prompts", str(prompts), "--skills", str(pytester.path / "skills")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" not in lint.stderr and name in lint.stdout + lint.stderr
