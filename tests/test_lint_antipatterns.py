"""Anti-pattern triggers at their exact PluginEval boundaries; Claude Code frontmatter rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilllift.lint.analyze import analyze
from pytest_skilllift.lint.antipatterns import (
    detect_anti_patterns,
    frontmatter_rule_findings,
    has_trigger,
)
from pytest_skilllift.skill.skillfile import load_skill
from pytest_skilllift.testing.skill_dirs import write_skill


def flags(skill_dir: Path) -> list[str]:
    return [f.flag for f in detect_anti_patterns(load_skill(skill_dir))]


def rule_flags(skill_dir: Path) -> list[str]:
    return [f.flag for f in frontmatter_rule_findings(load_skill(skill_dir))]


# --- OVER_CONSTRAINED: more than 15 MUST/ALWAYS/NEVER ----------------------------------------


@pytest.mark.parametrize(("n", "flagged"), [(15, False), (16, True)])
def test_over_constrained_boundary(tmp_path: Path, n: int, flagged: bool) -> None:
    words = ["MUST", "ALWAYS", "NEVER"]
    body = "\n".join(f"You {words[i % 3]} do step {i}." for i in range(n)) + "\n"
    write_skill(tmp_path / "s", body=body)
    assert ("OVER_CONSTRAINED" in flags(tmp_path / "s")) is flagged


def test_over_constrained_counts_only_shouted_whole_words(tmp_path: Path) -> None:
    body = "you must never always\n" * 10 + "MUSTARD NEVERMORE ALWAYS_ON\n" * 10
    write_skill(tmp_path / "s", body=body)
    assert "OVER_CONSTRAINED" not in flags(tmp_path / "s")


def test_over_constrained_evidence_names_count_and_lines(tmp_path: Path) -> None:
    write_skill(tmp_path / "s", body="MUST\n" * 16)
    f = next(x for x in detect_anti_patterns(load_skill(tmp_path / "s")) if x.anti_pattern)
    assert f.flag == "OVER_CONSTRAINED"
    assert "16 MUST/ALWAYS/NEVER" in f.evidence and "MUST 16" in f.evidence
    assert "lines 5, 6, 7, 8, 9" in f.evidence  # 4 frontmatter lines come first
    assert f.fix


# --- EMPTY_DESCRIPTION: fewer than 20 characters after stripping -----------------------------


@pytest.mark.parametrize(("length", "flagged"), [(19, True), (20, False)])
def test_empty_description_boundary(tmp_path: Path, length: int, flagged: bool) -> None:
    desc = "  " + ("use when " + "x" * 40)[:length] + "   "  # padding is stripped first
    write_skill(tmp_path / "s", description=desc)
    assert ("EMPTY_DESCRIPTION" in flags(tmp_path / "s")) is flagged


def test_missing_description_is_empty(tmp_path: Path) -> None:
    write_skill(tmp_path / "s", description=None)
    assert {"EMPTY_DESCRIPTION", "MISSING_TRIGGER"} <= set(flags(tmp_path / "s"))
    assert "DESCRIPTION_MISSING" in rule_flags(tmp_path / "s")


# --- MISSING_TRIGGER --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "phrase", ["Use when", "use this skill when", "USE PROACTIVELY", "Trigger when"]
)
def test_each_trigger_phrase_counts(phrase: str) -> None:
    assert has_trigger(f"Checks clusters. {phrase} something breaks, or slows.")


@pytest.mark.parametrize(
    "text", ["Useful when the cluster breaks", "Used for clusters", "triggers on load",
             "Guidance for visual design when building new UI", "Toolkit for testing web apps "
             "using Playwright.", "Helps to use for loops well", ""]
)
def test_near_misses_do_not_count(text: str) -> None:
    assert not has_trigger(text)


# The trigger clauses real skill sets write instead of PluginEval's four phrases (each from a
# description of anthropics/skills or qdrant/skills; docs/static-analysis.md).
@pytest.mark.parametrize("text", [
    "Applies brand colors. Use it when brand colors or style guidelines apply.",
    "Creates art with p5.js. Use this when users request creating art using code.",
    "Reference for the Claude API.\n  TRIGGER — read BEFORE opening the target file; don't "
    "skip because it looks like a one-liner — whenever: the prompt names Claude",
    "Builds HTML artifacts. Use for complex artifacts requiring state management.",
    "Advises on Qdrant. Use this whenever someone raises a Qdrant problem.",
    "Claude should use this skill whenever asked to write internal communications.",
    "Sizes clusters. Triggers: RAM questions, disk questions.",
    "Invoke this skill when a deploy fails.",
])
def test_real_trigger_clauses_count(text: str) -> None:
    assert has_trigger(text)


def test_trigger_survives_yaml_folding(tmp_path: Path) -> None:
    write_skill(
        tmp_path / "s",
        description=None,
        frontmatter_extra="description: >\n  Sizes clusters. Use\n  when asked about RAM, or disk.",
    )
    assert "MISSING_TRIGGER" not in flags(tmp_path / "s")


def test_missing_trigger_flagged(tmp_path: Path) -> None:
    write_skill(tmp_path / "s", description="Qdrant provides client SDKs for many languages.")
    assert flags(tmp_path / "s") == ["MISSING_TRIGGER"]


# --- BLOATED_SKILL: > 800 lines and no references/ -------------------------------------------


@pytest.mark.parametrize(("total", "flagged"), [(800, False), (801, True)])
def test_bloated_boundary(tmp_path: Path, total: int, flagged: bool) -> None:
    body = "".join(f"line {i}\n" for i in range(total - 4))  # + 4 frontmatter lines
    write_skill(tmp_path / "s", body=body)
    skill = load_skill(tmp_path / "s")
    assert skill.line_count == total
    assert ("BLOATED_SKILL" in flags(tmp_path / "s")) is flagged


def test_bloated_not_flagged_with_references_dir(tmp_path: Path) -> None:
    write_skill(tmp_path / "s", body="x\n" * 900)
    (tmp_path / "s" / "references").mkdir()
    assert "BLOATED_SKILL" not in flags(tmp_path / "s")


# --- ORPHAN_REFERENCE -------------------------------------------------------------------------


def test_orphan_reference(tmp_path: Path) -> None:
    body = (
        "See [ok](references/ok.md), [gone](references/gone.md), "
        "[dot](./references/dot.md) and [anchor](references/ok.md#part).\n"
        "```markdown\n[in code](references/example-only.md)\n```\n"
        "Inline `[code](references/inline.md)` is not a link either.\n"
    )
    write_skill(tmp_path / "s", body=body, references={"ok.md": "fine\n"})
    found = [f for f in detect_anti_patterns(load_skill(tmp_path / "s")) if f.anti_pattern]
    assert [f.flag for f in found] == ["ORPHAN_REFERENCE", "ORPHAN_REFERENCE"]
    assert "references/gone.md does not exist" in found[0].evidence
    assert "references/ holds: ok.md" in found[0].evidence
    assert found[0].line == 5
    assert "references/dot.md" in found[1].evidence
    assert found[0].fix == "Create references/gone.md or remove the link."


def test_orphan_reference_without_references_dir(tmp_path: Path) -> None:
    write_skill(tmp_path / "s", body="[r](references/rubrics.md)\n")
    (f,) = [f for f in detect_anti_patterns(load_skill(tmp_path / "s")) if f.anti_pattern]
    assert "no references/ directory" in f.evidence


# --- DEAD_CROSS_REF ---------------------------------------------------------------------------


def test_cross_refs_resolve_from_skill_dir_or_skills_root(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root / "other", name="other")
    write_skill(root / "fam" / "child", name="child")
    body = (
        "[sib](../other/SKILL.md) [child](child/SKILL.md) [from root](other/SKILL.md) "
        "[web](https://example.com/x/SKILL.md) [dead](../missing/SKILL.md) "
        "[dead agent](../agents/reviewer.md)\n"
    )
    write_skill(root / "fam", name="fam", body=body)
    found = [f for f in detect_anti_patterns(load_skill(root / "fam")) if f.anti_pattern]
    assert [f.flag for f in found] == ["DEAD_CROSS_REF", "DEAD_CROSS_REF"]
    assert "'../missing/SKILL.md'" in found[0].evidence
    assert "'../agents/reviewer.md'" in found[1].evidence


def test_ordinary_dead_link_is_a_finding_not_an_anti_pattern(tmp_path: Path) -> None:
    write_skill(tmp_path / "s", body="[tmpl](templates/a.md) [ok](SKILL.md)\n")
    report = analyze(load_skill(tmp_path / "s"))
    assert report.anti_patterns == []
    assert [f.flag for f in report.findings] == ["DEAD_LINK"]
    assert report.composite.penalty == 1.0


# --- Claude Code frontmatter rules ------------------------------------------------------------


@pytest.mark.parametrize(("length", "flagged"), [(64, False), (65, True)])
def test_name_length_boundary(tmp_path: Path, length: int, flagged: bool) -> None:
    write_skill(tmp_path / "s", name="a" * length)
    assert ("NAME_TOO_LONG" in rule_flags(tmp_path / "s")) is flagged


@pytest.mark.parametrize(
    ("name", "flag"),
    [
        ("My_Skill", "NAME_INVALID"),
        ("has space", "NAME_INVALID"),
        ("claude-helper", "NAME_RESERVED"),
        ("ok-name-2", None),
    ],
)
def test_name_rules(tmp_path: Path, name: str, flag: str | None) -> None:
    write_skill(tmp_path / "s", name=name)
    got = rule_flags(tmp_path / "s")
    assert got == ([flag] if flag else [])


def test_name_missing_and_numeric_name(tmp_path: Path) -> None:
    write_skill(tmp_path / "a", name=None)
    assert rule_flags(tmp_path / "a") == ["NAME_MISSING"]
    write_skill(tmp_path / "b", name=None, frontmatter_extra="name: 123")
    assert rule_flags(tmp_path / "b") == ["NAME_INVALID"]


@pytest.mark.parametrize(("length", "flagged"), [(1024, False), (1025, True)])
def test_description_length_boundary(tmp_path: Path, length: int, flagged: bool) -> None:
    desc = ("Use when sizing, or scaling. " + "x" * 2000)[:length]
    write_skill(tmp_path / "s", description=desc)
    assert ("DESCRIPTION_TOO_LONG" in rule_flags(tmp_path / "s")) is flagged


def test_description_rules(tmp_path: Path) -> None:
    write_skill(tmp_path / "a", description="Use when <b>bold</b> things happen, or not.")
    assert rule_flags(tmp_path / "a") == ["XML_IN_FRONTMATTER"]
    write_skill(tmp_path / "b", description=None, frontmatter_extra="description: [a, b]")
    assert rule_flags(tmp_path / "b") == ["DESCRIPTION_NOT_TEXT"]


def test_rule_findings_do_not_count_toward_penalty(tmp_path: Path) -> None:
    write_skill(tmp_path / "s", name="Bad Name", description="Use when x, or y. <tag>" + "z" * 1100)
    report = analyze(load_skill(tmp_path / "s"))
    assert {"NAME_INVALID", "DESCRIPTION_TOO_LONG", "XML_IN_FRONTMATTER"} <= {
        f.flag for f in report.findings
    }
    assert report.anti_patterns == []
    assert report.composite.penalty == 1.0
