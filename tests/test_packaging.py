"""What pyproject.toml promises: one Python floor, every import declared, one version."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_skilllift import __version__
from pytest_skilllift.cli import main as cli

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_one_python_floor() -> None:
    floor = PYPROJECT["project"]["requires-python"]
    assert floor == ">=3.11"
    assert PYPROJECT["tool"]["mypy"]["python_version"] == "3.11"
    assert PYPROJECT["tool"]["ruff"]["target-version"] == "py311"
    assert sys.version_info >= (3, 11)


@pytest.mark.slow
def test_every_imported_third_party_module_is_declared() -> None:
    declared = {_name(r) for r in PYPROJECT["project"]["dependencies"]}
    optional = {_name(r) for extra in PYPROJECT["project"]["optional-dependencies"].values()
                for r in extra}
    dists = importlib.metadata.packages_distributions()
    missing = {}
    for f in (REPO / "pytest_skilllift").rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in ("pytest_skilllift", "__future__"):
                    continue
                owners = {_name(d) for d in dists.get(top, [top])}
                if not owners & (declared | optional):
                    missing[top] = f"{f.relative_to(REPO)} (from {sorted(owners)})"
    assert missing == {}


def test_the_package_is_type_checked_strictly() -> None:
    """mypy runs in strict mode (``.ci/run``) over the package, whose hints ship (PEP 561),
    and over the tests and benchmarks, so what they call is checked against those hints."""
    mypy = PYPROJECT["tool"]["mypy"]
    assert mypy["strict"] is True
    assert mypy["files"] == ["pytest_skilllift", "tests", "benchmarks"]
    assert "packages" not in mypy and "exclude" not in mypy  # nothing left out of the check
    assert (REPO / "pytest_skilllift" / "py.typed").is_file()


def test_version_is_stated_once_and_shown(capsys: pytest.CaptureFixture[str]) -> None:
    assert "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "pytest_skilllift/__init__.py"
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"skilllift {__version__}\n"
