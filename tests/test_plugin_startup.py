"""What every pytest process pays before the first run: the plugin keeps it small."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def test_plugin_loads_without_assertion_rewrite_warnings(pytester: pytest.Pytester) -> None:
    """pytest's own rules decide what it rewrites (the package edits none of its state);
    ``pytest_plugins`` naming the fixtures module after it was imported is no warning, because
    that module says ``PYTEST_DONT_REWRITE`` (pytest's documented marker)."""
    pytester.makepyfile(test_loaded="""
        import sys

        def test_loaded():
            assert "pytest_skilllift.plugin.fixtures" in sys.modules
    """)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-W", "error::pytest.PytestAssertRewriteWarning")
    result.assert_outcomes(passed=1)


def test_importing_the_package_imports_nothing_else() -> None:
    """``import pytest_skilllift`` (every pytest process does) loads none of its modules and
    no third-party library; a public name loads its own module on first use."""
    code = ("import sys; import pytest_skilllift as p; "
            "print(sorted(m for m in sys.modules if m.startswith('pytest_skilllift') "
            "or m.split('.')[0] in ('numpy', 'anthropic', 'docker', 'matplotlib', 'pytest'))); "
            "p.RunSpec; print('pytest_skilllift.model' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["['pytest_skilllift']", "True"]


def test_public_names() -> None:
    """``__all__`` is what users write code against, each name from its home module."""
    import pytest_skilllift as p

    assert sorted(p.__all__) == sorted(["__version__", *p._EXPORTS]) == p.__all__
    for name, module in p._EXPORTS.items():
        assert getattr(p, name).__module__ == module, name
    assert set(p.__all__) <= set(dir(p))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = p.nope
    assert (Path(p.__file__).parent / "py.typed").is_file()  # PEP 561: the hints are public


def test_lint_analysis_loads_only_with_skill_lint(pytester: pytest.Pytester) -> None:
    """Every pytest process loads the lint plugin; its analysis modules (YAML, the checks)
    are imported only when ``--skill-lint`` asks for them."""
    pytester.makepyfile(test_lint_imports="""
        import sys

        def test_not_imported():
            assert "pytest_skilllift.lint.analyze" not in sys.modules
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
