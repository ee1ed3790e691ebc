"""Frontmatter against the Agent Skills specification and its validator (skill-creator's
``quick_validate.py``): every invalid variant the validator rejects is caught, a valid skill
passes, and keys only Claude Code reads warn without failing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilllift.lint.analyze import analyze
from pytest_skilllift.skill.skillfile import load_skill
from pytest_skilllift.testing.skill_dirs import GOOD_DESCRIPTION

VALID = f"---\nname: widget-sizer\ndescription: \"{GOOD_DESCRIPTION}\"\n---\n# Body\n"


def _fm(lines: str) -> str:
    return f"---\n{lines}\n---\n# Body\n"


#: (id, SKILL.md text, the flag that must be reported). Each is a file the specification's
#: validator rejects; the last five are the rules this project used to miss.
VARIANTS: list[tuple[str, str, str]] = [
    ("no-frontmatter", "# Just a body\n", "NO_FRONTMATTER"),
    ("unterminated", "---\nname: x\ndescription: y\n# Body\n", "BROKEN_FRONTMATTER"),
    ("bad-yaml", _fm("name: [unclosed\ndescription: y"), "BROKEN_FRONTMATTER"),
    ("not-a-mapping", _fm("- name\n- description"), "BROKEN_FRONTMATTER"),
    ("missing-name", _fm(f'description: "{GOOD_DESCRIPTION}"'), "NAME_MISSING"),
    ("missing-description", _fm("name: widget-sizer"), "DESCRIPTION_MISSING"),
    ("name-not-kebab", _fm(f'name: Widget_Sizer\ndescription: "{GOOD_DESCRIPTION}"'),
     "NAME_INVALID"),
    ("name-too-long", _fm(f'name: {"a" * 65}\ndescription: "{GOOD_DESCRIPTION}"'),
     "NAME_TOO_LONG"),
    ("description-not-text", _fm("name: widget-sizer\ndescription: [a, b]"),
     "DESCRIPTION_NOT_TEXT"),
    ("description-too-long", _fm(f'name: widget-sizer\ndescription: "{"Use when x. " * 100}"'),
     "DESCRIPTION_TOO_LONG"),
    ("name-leading-hyphen", _fm(f'name: -widget\ndescription: "{GOOD_DESCRIPTION}"'),
     "NAME_HYPHEN_EDGE"),
    ("name-trailing-hyphen", _fm(f'name: widget-\ndescription: "{GOOD_DESCRIPTION}"'),
     "NAME_HYPHEN_EDGE"),
    ("name-double-hyphen", _fm(f'name: widget--sizer\ndescription: "{GOOD_DESCRIPTION}"'),
     "NAME_CONSECUTIVE_HYPHENS"),
    ("compatibility-too-long",
     _fm(f'name: widget-sizer\ndescription: "{GOOD_DESCRIPTION}"\ncompatibility: "{"x" * 501}"'),
     "COMPATIBILITY_TOO_LONG"),
]


def _report(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    d = tmp_path / "skills" / "widget-sizer"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(text, encoding="utf-8")
    return analyze(load_skill(d))


def test_fourteen_variants_are_distinct_files() -> None:
    assert len(VARIANTS) == 14
    assert len({v[1] for v in VARIANTS}) == 14


@pytest.mark.parametrize(("text", "flag"), [v[1:] for v in VARIANTS], ids=[v[0] for v in VARIANTS])
def test_each_invalid_variant_is_an_error(tmp_path: Path, text: str, flag: str) -> None:
    report = _report(tmp_path, text)
    hits = [f for f in report.findings if f.flag == flag]
    assert hits, [f.flag for f in report.findings]
    assert all(f.severity == "error" for f in hits)
    # Every frontmatter rule names the public rule it enforces.
    for f in report.findings:
        if f.check == "FRONTMATTER_RULES":
            assert f.source, f.flag


def test_the_valid_skill_has_no_frontmatter_finding(tmp_path: Path) -> None:
    report = _report(tmp_path, VALID)
    assert [f.flag for f in report.findings] == []


def test_spec_rules_cite_the_specification(tmp_path: Path) -> None:
    report = _report(tmp_path, _fm(f'name: a--b-\ndescription: "{GOOD_DESCRIPTION}"'))
    flags = {f.flag: f for f in report.findings}
    assert set(flags) >= {"NAME_HYPHEN_EDGE", "NAME_CONSECUTIVE_HYPHENS"}
    for flag in ("NAME_HYPHEN_EDGE", "NAME_CONSECUTIVE_HYPHENS"):
        assert "agentskills.io/specification" in (flags[flag].source or "")
        assert "quick_validate.py" in (flags[flag].source or "")
    assert "'a-b'" in flags["NAME_CONSECUTIVE_HYPHENS"].fix


def test_compatibility_boundaries(tmp_path: Path) -> None:
    ok = _report(tmp_path / "a", _fm(f'name: w\ndescription: "{GOOD_DESCRIPTION}"\n'
                                     f'compatibility: "{"x" * 500}"'))
    assert not [f for f in ok.findings if f.flag.startswith("COMPATIBILITY")]
    empty = _report(tmp_path / "b", _fm(f'name: w\ndescription: "{GOOD_DESCRIPTION}"\n'
                                        'compatibility: ""'))
    assert [f.flag for f in empty.findings] == ["COMPATIBILITY_INVALID"]
    listed = _report(tmp_path / "c", _fm(f'name: w\ndescription: "{GOOD_DESCRIPTION}"\n'
                                         "compatibility: [git]"))
    assert [f.flag for f in listed.findings] == ["COMPATIBILITY_INVALID"]


def test_unknown_keys_warn_and_name_claude_code_keys(tmp_path: Path) -> None:
    text = _fm(f'name: w\ndescription: "{GOOD_DESCRIPTION}"\nmodel: sonnet\n'
               "disable-model-invocation: true\nargument-hint: \"[file]\"\nfavourite: blue\n"
               "license: MIT\nmetadata:\n  owner: team")
    report = _report(tmp_path, text)
    [w] = report.findings
    assert w.flag == "UNKNOWN_FRONTMATTER_KEYS" and w.severity == "warning" and w.is_warning
    assert "argument-hint, disable-model-invocation, favourite, model" in w.evidence
    assert "Claude Code reads argument-hint, disable-model-invocation, model" in w.evidence
    assert "nothing reads favourite" in w.evidence
    assert w.to_json()["severity"] == "warning"
    assert "code.claude.com/docs/en/skills" in (w.source or "")


def test_claude_code_only_skill_passes_lint_with_a_warning(pytester: pytest.Pytester) -> None:
    d = pytester.path / "skills" / "cc-only"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(
        _fm(f'name: cc-only\ndescription: "{GOOD_DESCRIPTION}"\nmodel: haiku\n'
            "user-invocable: false\nwhen_to_use: when sizing"),
        encoding="utf-8",
    )
    bad = pytester.path / "skills" / "bad-name"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text(
        _fm(f'name: bad--name\ndescription: "{GOOD_DESCRIPTION}"'), encoding="utf-8")
    result = pytester.runpytest("--skill-lint", "-v", "-p", "no:cacheprovider",
                                "-k", "FRONTMATTER_RULES")
    result.stdout.fnmatch_lines([
        "skills/bad-name::FRONTMATTER_RULES FAILED*",
        "skills/cc-only::FRONTMATTER_RULES PASSED*",
    ])
    result.stdout.fnmatch_lines([
        "NAME_CONSECUTIVE_HYPHENS: name 'bad--name' contains consecutive hyphens*",
        "  rule: Agent Skills specification*",
        "*SkillLintWarning: skills/cc-only::FRONTMATTER_RULES: UNKNOWN_FRONTMATTER_KEYS*"
        "Claude Code reads model, user-invocable, when_to_use*",
    ])
    result.assert_outcomes(passed=1, failed=1, warnings=1)
