"""The built wheel, installed in a fresh virtual environment, runs the demo in an empty directory.

The wheel is built from this checkout (``pip wheel``, hatchling in an isolated build) and
installed with ``--no-deps`` into a new venv; the dependencies come from the test's own
environment through a ``.pth`` line (installing them again, the bundled CLI's 400 MB among
them, would take minutes for no extra evidence). The test checks that the demo's code and data
are the wheel's, not this checkout's.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from pytest_skilllift.runners.claude import bundled_claude

REPO = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.cli,
    pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing"),
]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
                    str(REPO)], check=True, capture_output=True, timeout=600)
    (built,) = out.glob("pytest_skilllift-*.whl")
    return built


def test_wheel_ships_the_demo_project(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n.removeprefix("pytest_skilllift/demo/") for n in names
               if n.startswith("pytest_skilllift/demo/")}
    expected = {str(p.relative_to(REPO / "pytest_skilllift" / "demo"))
                for p in (REPO / "pytest_skilllift" / "demo").rglob("*")
                if p.is_file() and "__pycache__" not in p.parts}
    assert expected and expected <= shipped
    assert any(n.startswith("evals/test-prompts/") for n in shipped)


def test_demo_runs_from_the_wheel_in_an_empty_directory(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    target = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                             "['purelib'])"], check=True, capture_output=True, text=True,
                            timeout=60).stdout.strip()
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    target, str(wheel)], check=True, capture_output=True, timeout=300)
    # The dependencies: this environment's site-packages, after the new venv's own (a .pth
    # line adds the directory but not the .pth files in it, so this checkout's editable
    # install stays out).
    Path(target, "zz_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "ANTHROPIC_", "PYTHONPATH"))}
    where = subprocess.run([str(python), "-c", "import pytest_skilllift; print("
                            "pytest_skilllift.__file__)"], cwd=empty, env=env, check=True,
                           capture_output=True, text=True, timeout=60).stdout.strip()
    assert where.startswith(target), where  # the wheel's code, not this checkout's
    result = subprocess.run([str(python), "-m", "pytest", "--skill-lift-demo", "-n", "2",
                             "-p", "no:cacheprovider"], cwd=empty, env=env,
                            capture_output=True, text=True, timeout=900)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    lines = out.strip().splitlines()
    stats = next(ln for ln in reversed(lines) if " passed" in ln and ln.startswith("="))
    assert "failed" not in stats and "missing" in stats, stats
    assert lines[-1].startswith("demo ran (scripted models, not a measurement): lift sonnet +")
    week = next((empty / "evals" / "weekly-demo").iterdir())
    assert (week / "scorecard.md").is_file()
    assert f"scorecard: {week / 'scorecard.md'}" in lines[-1]
    assert not (empty / "evals" / "test-prompts").exists()  # read from the package, not here
