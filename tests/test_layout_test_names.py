"""Where the tests live: each test file is named for the package it tests.

``tests/`` stays flat (fixture paths are relative to it): a test file is
``tests/test_<package>_<what>.py`` (or ``test_<package>.py``), ``<package>`` a top-level
package or module of ``pytest_skilllift`` (read from the tree, so a new package is known at
once), or ``tests/test_<group>_<what>.py`` for the few cross-cutting groups below.
docs/architecture.md ("Where the tests live") says the same for contributors.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
PACKAGE = REPO / "pytest_skilllift"

#: Tests that belong to no one package, by what they cover.
GROUPS = {
    "e2e": "a whole week end to end through pytest or the CLI (plugin, run, runners, report)",
    "hostile": "hostile input across the layers (docs/safety.md)",
    "docs": "the documentation and the shipped workflow agree with the code",
    "layout": "the package's layering and this file's naming rule",
    "packaging": "pyproject.toml's promises and the built wheel",
    "bench": "the benchmarks' own accounting (benchmarks/)",
}


def packages() -> list[str]:
    """The top-level packages and modules of pytest_skilllift, as the tree has them."""
    found = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    found |= {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    return sorted(found)


def misnamed(names: Iterable[str]) -> list[str]:
    """One message per test file name that says neither a package nor a group."""
    known = packages()
    clash = sorted(set(known) & set(GROUPS))
    assert not clash, f"a group has a package's name: {clash}"
    prefixes = known + sorted(GROUPS)
    out = []
    for name in names:
        stem = name.removeprefix("test_").removesuffix(".py")
        if not any(stem == p or stem.startswith(f"{p}_") for p in prefixes):
            out.append(
                f"tests/{name}: a test file's name says what it tests: "
                f"test_<package>_<what>.py with <package> one of {', '.join(known)}; or "
                f"test_<group>_<what>.py with <group> one of {', '.join(sorted(GROUPS))} "
                "(docs/architecture.md, 'Where the tests live'); rename it with git mv")
    return out


def test_every_test_file_is_named_for_its_package_or_group() -> None:
    names = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert len(names) > 100  # the glob found the suite
    problems = misnamed(names)
    assert not problems, "\n".join(problems)


def test_the_rule_names_the_file_and_refuses_what_only_looks_like_a_package() -> None:
    assert misnamed(["test_helpers.py"]) == [
        "tests/test_helpers.py: a test file's name says what it tests: test_<package>_<what>.py "
        f"with <package> one of {', '.join(packages())}; or test_<group>_<what>.py with "
        "<group> one of bench, docs, e2e, hostile, layout, packaging "
        "(docs/architecture.md, 'Where the tests live'); rename it with git mv"]
    # a package's name as the start of a longer word is not that package
    assert len(misnamed(["test_runs.py", "test_weekly.py", "test_e2ex.py"])) == 3
    assert misnamed(["test_run_engine.py", "test_runners_docker.py", "test_week.py",
                     "test_model.py", "test_e2e_first_week.py"]) == []
    assert {"agents", "cli", "config", "model", "report", "run", "runners", "week"} <= set(
        packages())


def test_the_tests_directory_is_flat() -> None:
    """Test modules sit in tests/ itself: fixtures are found relative to it, and the
    package-named files are the grouping."""
    nested = sorted(str(p.relative_to(REPO)) for p in TESTS.rglob("test_*.py")
                    if p.parent != TESTS and TESTS / "fixtures" not in p.parents)
    assert nested == []
