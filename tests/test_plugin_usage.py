"""Using the plugin without a key: listing the tests works; a run says what it needs, before
anything starts.  No CLI run here (nothing gets that far)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_plugin_e2e import make_project


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two prompts, one model (haiku), one rep; no key anywhere in the environment."""
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    return make_project(pytester)


def test_collect_only_needs_no_key(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest_subprocess("--skill-lift", "--collect-only", "-q",
                                           "-p", "no:cacheprovider")
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(
        ["evals/test-prompts/git-bisect-regression.json::haiku::no-skill::r1::must-1"])
    assert "ANTHROPIC_API_KEY" not in result.stdout.str() + result.stderr.str()
    assert not (project / "week").exists() or not any((project / "week").glob("*/run.json"))


def test_k_with_collect_only_needs_no_key(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest_subprocess("--skill-lift", "--collect-only", "-q",
                                           "-k", "haiku and with-skill", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stderr.str()
    ids = [ln for ln in result.stdout.lines if "::" in ln]
    assert ids and all("::haiku::with-skill::" in ln for ln in ids)
    result.stdout.fnmatch_lines(["*deselected*"])  # the no-skill arm was listed out


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "n2"])
def test_a_run_without_a_key_says_what_it_needs(pytester: pytest.Pytester, project: Path,
                                                 xdist: tuple[str, ...]) -> None:
    result = pytester.runpytest_subprocess("--skill-lift", "-p", "no:cacheprovider", *xdist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "the runs need ANTHROPIC_API_KEY" in err and "--collect-only" in err
    assert not any(project.glob("week/*/run.json"))  # nothing was started
