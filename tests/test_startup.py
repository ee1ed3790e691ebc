"""What every pytest process pays before the first run: the plugin keeps it small."""

from __future__ import annotations

import pytest


def test_package_is_not_assertion_rewritten(pytester: pytest.Pytester) -> None:
    """pytest would parse and compile every module of the plugin again in each process (and
    each xdist worker) to rewrite asserts it has none of; ``_rewrite`` opts the package out,
    and pytest must not warn about it (``pytest_plugins`` names the fixtures module)."""
    pytester.makepyfile(test_loaders="""
        import sys

        def test_loaders():
            import pytest_skilllift.plugin.fixtures, pytest_skilllift.plugin.session
            for name in ("pytest_skilllift.plugin.session", "pytest_skilllift.plugin.fixtures",
                         "pytest_skilllift.config"):
                loader = type(sys.modules[name].__loader__).__name__
                assert loader != "AssertionRewritingHook", (name, loader)
    """)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-W", "error::pytest.PytestAssertRewriteWarning")
    result.assert_outcomes(passed=1)


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
