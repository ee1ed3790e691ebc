"""``pytest --skill-lint`` end to end with pytester: ids, failure text, xdist."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilllift.testing.skill_dirs import write_skill

CLEAN_BODY = "# Clean\n\n## Related\nSee also [bad](../bad/SKILL.md).\n"
BAD_BODY = "# Bad\n\nRead [rubrics](references/rubrics.md) first.\n"
CHECKS = (
    "OVER_CONSTRAINED",
    "EMPTY_DESCRIPTION",
    "MISSING_TRIGGER",
    "BLOATED_SKILL",
    "ORPHAN_REFERENCE",
    "DEAD_CROSS_REF",
    "FRONTMATTER_RULES",
    "SKILL_FILE",
    "LINKS",
    "SECURITY",
)


def make_skills(base: Path, bad: bool = True) -> None:
    write_skill(base / "skills" / "clean", name="clean", body=CLEAN_BODY)
    if bad:
        write_skill(base / "skills" / "bad", name="bad", body=BAD_BODY)
    else:
        write_skill(base / "skills" / "bad", name="bad", body="# fine\n")


def test_each_check_is_a_test_with_stable_ids(pytester: pytest.Pytester) -> None:
    make_skills(pytester.path)
    result = pytester.runpytest("--skill-lint", "-v", "-p", "no:cacheprovider")
    for check in CHECKS:
        result.stdout.fnmatch_lines([f"skills/clean::{check} PASSED*"])
    result.stdout.fnmatch_lines(
        ["skills/bad::MISSING_TRIGGER PASSED*", "skills/bad::ORPHAN_REFERENCE FAILED*"]
    )
    result.assert_outcomes(passed=2 * len(CHECKS) - 1, failed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"*collected {2 * len(CHECKS)} items"])


def test_failure_shows_evidence_and_fix_without_traceback(pytester: pytest.Pytester) -> None:
    make_skills(pytester.path)
    result = pytester.runpytest("--skill-lint", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        [
            "*_ skills/bad::ORPHAN_REFERENCE _*",
            "ORPHAN_REFERENCE: line 7: [..](references/rubrics.md) but references/rubrics.md "
            "does not exist (the skill has no references/ directory)",
            "  fix: Create references/rubrics.md or remove the link.",
            "*anti-pattern penalty x0.95*",
            "FAILED skills/bad::ORPHAN_REFERENCE - ORPHAN_REFERENCE: line 7*",
        ]
    )
    text = result.stdout.str()
    assert "Traceback" not in text and "def runtest" not in text and "SkillLintFailure" not in text


def test_clean_skills_pass(pytester: pytest.Pytester) -> None:
    make_skills(pytester.path, bad=False)
    result = pytester.runpytest("--skill-lint", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2 * len(CHECKS))
    assert result.ret == 0


def test_with_xdist(pytester: pytest.Pytester) -> None:
    make_skills(pytester.path)
    result = pytester.runpytest_subprocess("--skill-lint", "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2 * len(CHECKS) - 1, failed=1)
    result.stdout.fnmatch_lines(["FAILED skills/bad::ORPHAN_REFERENCE*"])


def test_path_option_keyword_selection_and_lint_alongside_tests(
    pytester: pytest.Pytester,
) -> None:
    make_skills(pytester.path / "elsewhere")
    pytester.makepyfile(test_unit="def test_ok():\n    assert True\n")
    result = pytester.runpytest(
        "--skill-lint", "--skill-lint-path=elsewhere/skills", "-k", "bad", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=len(CHECKS) - 1, failed=1, deselected=len(CHECKS) + 1)
    result = pytester.runpytest("--skill-lint", "--skill-lint-path=elsewhere/skills", "-q")
    result.assert_outcomes(passed=2 * len(CHECKS), failed=1)  # the unit test runs too


def test_not_active_without_the_flag(pytester: pytest.Pytester) -> None:
    make_skills(pytester.path)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_missing_root_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--skill-lint", "--skill-lint-path=nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--skill-lint: skills root *nowhere is not a directory*"])
    assert "--skill-lint-path=DIR" in result.stderr.str()


def test_directories_given_as_arguments_are_linted(pytester: pytest.Pytester) -> None:
    """``pytest --skill-lint more/skills``: the argument is the skills root, not a test path
    that leaves the default root looked for (and missing)."""
    make_skills(pytester.path / "more", bad=True)
    make_skills(pytester.path / "other", bad=False)
    result = pytester.runpytest("--skill-lint", "more/skills", "other/skills/clean", "-rf",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3 * len(CHECKS) - 1, failed=1)
    result.stdout.fnmatch_lines(["FAILED more/skills/bad::ORPHAN_REFERENCE*"])
    # without --skill-lint the same arguments are ordinary test paths: nothing to collect
    result = pytester.runpytest("more/skills", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_threshold_ini_adds_a_composite_test(pytester: pytest.Pytester) -> None:
    make_skills(pytester.path)
    pytester.makeini("[pytest]\nskill_lint_threshold = 68\n")
    result = pytester.runpytest("--skill-lint", "-p", "no:cacheprovider", "-k", "COMPOSITE")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["skills/bad::COMPOSITE: composite 65.9 < threshold 68 *", "  weakest: *"]
    )


def test_broken_skill_file_and_tree_loop(pytester: pytest.Pytester) -> None:
    (pytester.path / "skills" / "bin").mkdir(parents=True)
    (pytester.path / "skills" / "bin" / "SKILL.md").write_bytes(b"\x00\x01\x02")
    (pytester.path / "skills" / "loop").symlink_to("loop")
    result = pytester.runpytest("--skill-lint", "-p", "no:cacheprovider", "-rf")
    result.stdout.fnmatch_lines(
        [
            "FAILED skills/bin::EMPTY_DESCRIPTION*",
            "FAILED skills/bin::MISSING_TRIGGER*",
            "FAILED skills/bin::SKILL_FILE - BINARY_FILE: SKILL.md contains NUL bytes*",
            "FAILED skills::SKILLS_TREE - SYMLINK_LOOP: *",
        ]
    )


def test_skills_root_from_main_plugin_ini(pytester: pytest.Pytester) -> None:
    """``skill_lift_skills`` belongs to the main plugin; when it is registered we honour it."""
    config = pytester.parseconfig()
    try:
        config.getini("skill_lift_skills")
    except ValueError:
        pytest.skip("main plugin does not register skill_lift_skills yet")
    make_skills(pytester.path / "custom")
    pytester.makeini("[pytest]\nskill_lift_skills = custom/skills\n")
    result = pytester.runpytest("--skill-lint", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2 * len(CHECKS) - 1, failed=1)
    result.stdout.fnmatch_lines(["FAILED custom/skills/bad::ORPHAN_REFERENCE*"])
