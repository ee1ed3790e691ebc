"""The six sub-checks, and the composite math against values computed by hand from
PluginEval's methodology."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilllift.lint.analyze import analyze
from pytest_skilllift.lint.checks import (
    ecosystem_coherence,
    frontmatter_quality,
    orchestration_wiring,
    progressive_disclosure,
    run_checks,
    structural_completeness,
    token_efficiency,
)
from pytest_skilllift.lint.composite import (
    DIMENSION_WEIGHTS,
    LAYER_BLEND,
    anti_pattern_penalty,
    badge,
    blend,
    compute_composite,
    grade,
)
from pytest_skilllift.skill.skillfile import SkillFile, load_skill
from pytest_skilllift.testing.skill_dirs import GOOD_DESCRIPTION, write_skill

FULL_BODY = """# Sizing

## Inputs
The skill receives the expected vector count and dimensions.

## Output format
Returns a table of RAM, disk and node count.

## Steps
```bash
curl localhost:6333/collections
```
```python
print(ram(10_000_000, 768))
```

## Examples
```text
10M x 768 -> 32 GB
```

## Troubleshooting
If the numbers look off, check quantization.

## Related
See also [scaling](../scaling/SKILL.md).
"""


def skill_with(tmp_path: Path, **kw: object) -> SkillFile:
    root = tmp_path / "skills"
    write_skill(root / "scaling", name="scaling")
    kw.setdefault("name", "sizing")
    write_skill(root / "sizing", **kw)  # type: ignore[arg-type]
    return load_skill(root / "sizing")


def body_of(lines: int) -> str:
    return "".join(f"line {i}\n" for i in range(lines - 4))  # 4 frontmatter lines


# --- sub-checks -------------------------------------------------------------------------------


def test_complete_skill_scores_full_marks_where_it_should(tmp_path: Path) -> None:
    s = skill_with(tmp_path, body=FULL_BODY)
    subs = run_checks(s)
    assert subs["frontmatter_quality"].score == 1.0
    assert subs["orchestration_wiring"].score == 1.0
    assert subs["structural_completeness"].score == 1.0
    assert subs["token_efficiency"].score == 1.0
    assert subs["ecosystem_coherence"].score == 1.0
    for sub in subs.values():
        assert 0.0 <= sub.score <= 1.0
        if sub.check != "progressive_disclosure":  # base + bonuses, not deductions
            assert (sub.score < 1.0) == any(r.startswith("-") for r in sub.reasons)


def test_frontmatter_quality_deductions(tmp_path: Path) -> None:
    s = skill_with(tmp_path, description="Sizes clusters for teams with big plans today.")
    sub = frontmatter_quality(s)
    # 47 chars (-0.15), no trigger (-0.40), single context (-0.10)
    assert sub.score == pytest.approx(0.35)
    assert len(sub.reasons) == 3
    s2 = skill_with(tmp_path, name=None, description=None)
    assert frontmatter_quality(s2).score == pytest.approx(1 - 0.15 - 0.25 - 0.40)


@pytest.mark.parametrize(
    ("lines", "expected"),
    [(99, 0.20), (100, 0.55), (199, 0.55), (200, 0.75), (600, 0.75), (601, 0.50), (801, 0.25)],
)
def test_progressive_disclosure_bands(tmp_path: Path, lines: int, expected: float) -> None:
    s = skill_with(tmp_path, body=body_of(lines))
    assert s.line_count == lines
    assert progressive_disclosure(s).score == pytest.approx(expected)


def test_progressive_disclosure_bonuses(tmp_path: Path) -> None:
    small = skill_with(tmp_path / "a", body=body_of(300), references={"r.md": "x"})
    assert progressive_disclosure(small).score == pytest.approx(0.75 + 0.15)
    big = skill_with(tmp_path / "b", body=body_of(401), references={"r.md": "x"})
    assert progressive_disclosure(big).score == pytest.approx(1.0)
    empty_ref = skill_with(tmp_path / "c", body=body_of(300), references={"r.md": ""})
    sub = progressive_disclosure(empty_ref)
    assert sub.score == pytest.approx(0.75)
    assert any("no non-empty file" in r for r in sub.reasons)
    stub = skill_with(tmp_path / "d", body=body_of(50), references={"r.md": "x"}, assets={"t": "y"})
    assert progressive_disclosure(stub).score == pytest.approx(0.20 + 0.15 + 0.10)


def test_structural_completeness_parts(tmp_path: Path) -> None:
    s = skill_with(tmp_path, body="## One\n## Two\n```\nx\n```\n")
    # 2 headings (-0.125), 1 block (-0.125), no examples (-0.25), no troubleshooting (-0.25)
    assert structural_completeness(s).score == pytest.approx(0.25)


def test_token_efficiency_density_and_repetition(tmp_path: Path) -> None:
    dense = skill_with(tmp_path / "a", body="MUST do it\n" * 36)  # 36 in 40 lines: 0.9
    sub = token_efficiency(dense)
    assert sub.score == pytest.approx(0.6)  # "MUST do it" is too short to count as repetition
    assert sub.reasons[0].startswith("-0.4: 36 MUST/ALWAYS/NEVER in 40 lines")
    rep = skill_with(tmp_path / "b", body="this line repeats itself\n" * 5 + "unique line here!!\n")
    # 6 candidate lines, 4 repeats: r = 2/3, loss capped at 0.40
    assert token_efficiency(rep).score == pytest.approx(0.6)


def test_orchestrator_language_is_penalised(tmp_path: Path) -> None:
    clean = skill_with(tmp_path / "a", body=FULL_BODY)
    boss = skill_with(tmp_path / "b", body=FULL_BODY + "\nThis skill orchestrates the agents.\n")
    assert orchestration_wiring(clean).score - orchestration_wiring(boss).score == pytest.approx(
        0.20
    )


def test_ecosystem_coherence(tmp_path: Path) -> None:
    lonely = skill_with(tmp_path / "a", body="# x\n")
    assert ecosystem_coherence(lonely).score == pytest.approx(0.4)
    dead = skill_with(tmp_path / "b", body="Related: [gone](../gone/SKILL.md)\n")
    assert ecosystem_coherence(dead).score == pytest.approx(1 - 0.30 - 0.10)


# --- composite math (PluginEval's formulas, numbers worked by hand) -----------------------------


def test_plugineval_tables_are_transcribed() -> None:
    assert sum(DIMENSION_WEIGHTS.values()) == pytest.approx(1.0)
    for dim, row in LAYER_BLEND.items():
        assert sum(row.values()) == pytest.approx(1.0), dim
    assert LAYER_BLEND["output_quality"]["static"] == 0.0
    assert LAYER_BLEND["triggering_accuracy"] == {
        "static": 0.15,
        "judge": 0.25,
        "monte_carlo": 0.60,
    }


@pytest.mark.parametrize(
    ("count", "penalty"), [(0, 1.0), (1, 0.95), (2, 0.90), (9, 0.55), (10, 0.5), (11, 0.5)]
)
def test_penalty(count: int, penalty: float) -> None:
    assert anti_pattern_penalty(count) == pytest.approx(penalty)


def test_blend_renormalises_over_present_layers() -> None:
    # static only: the static score itself
    assert blend("triggering_accuracy", {"static": 0.6}) == pytest.approx(0.6)
    # static + measured/monte carlo: (0.15*0.6 + 0.60*0.9) / 0.75 = 0.84
    assert blend("triggering_accuracy", {"static": 0.6, "monte_carlo": 0.9}) == pytest.approx(0.84)
    # measured lift runs take the Monte Carlo column
    assert blend("triggering_accuracy", {"static": 0.6, "measured": 0.9}) == pytest.approx(0.84)
    # all three: 0.15*0.6 + 0.25*0.8 + 0.60*0.9 = 0.83
    scores = {"static": 0.6, "judge": 0.8, "monte_carlo": 0.9}
    assert blend("triggering_accuracy", scores) == pytest.approx(0.83)
    # output_quality has no static weight: static alone measures nothing
    assert blend("output_quality", {"static": 1.0}) is None
    assert blend("output_quality", {"static": 1.0, "monte_carlo": 0.7}) == pytest.approx(0.7)


def test_quick_depth_composite_by_hand() -> None:
    static = {
        "triggering_accuracy": 1.0,
        "orchestration_fitness": 0.6,
        "progressive_disclosure": 0.2,
        "token_efficiency": 1.0,
        "structural_completeness": 0.125,
        "ecosystem_coherence": 0.7,
    }
    layers = {d: {"static": v} for d, v in static.items()}
    # Σ w×s = .25 + .12 + .02 + .06 + .00375 + .014 = .46775 over weight .66
    c = compute_composite(layers, 0)
    assert c.weight_covered == pytest.approx(0.66)
    assert c.score == 70.87  # 0.46775 / 0.66 * 100 = 70.871..., rounded to 2 decimals
    assert (c.grade, c.badge) == ("C", "Silver")
    assert c.unmeasured == [
        "output_quality",
        "scope_calibration",
        "robustness",
        "code_template_quality",
    ]
    c1 = compute_composite(layers, 1)
    assert c1.score == 67.33  # 70.871... x 0.95 = 67.3276: Bronze, D
    assert (c1.grade, c1.badge) == ("D", "Bronze")


def test_all_layers_all_dimensions_perfect_is_100() -> None:
    layers = {d: {"static": 1.0, "judge": 1.0, "monte_carlo": 1.0} for d in DIMENSION_WEIGHTS}
    c = compute_composite(layers, 0)
    assert c.score == pytest.approx(100.0)
    assert c.weight_covered == pytest.approx(1.0)
    assert c.badge == "Platinum"
    assert compute_composite(layers, 20).score == pytest.approx(50.0)


def test_composite_of_a_real_analysis_matches_its_parts(tmp_path: Path) -> None:
    s = skill_with(tmp_path, body=FULL_BODY, description="too short")
    r = analyze(s)
    assert {f.flag for f in r.anti_patterns} == {"EMPTY_DESCRIPTION", "MISSING_TRIGGER"}
    dims = r.composite.dimensions
    raw = sum(DIMENSION_WEIGHTS[d] * v["score"] for d, v in dims.items())
    assert r.composite.score == pytest.approx(raw / 0.66 * 100 * 0.90, abs=0.01)


@pytest.mark.parametrize(
    ("score", "letter"),
    [
        (1.0, "A"),
        (0.9, "A"),
        (0.8999, "B"),
        (0.8, "B"),
        (0.1 + 0.7, "B"),
        (0.7999, "C"),
        (0.7, "C"),
        (0.6, "D"),
        (0.5999, "F"),
        (0.0, "F"),
    ],
)
def test_grades(score: float, letter: str) -> None:
    assert grade(score) == letter


@pytest.mark.parametrize(
    ("composite", "elo", "expected"),
    [
        (90, None, "Platinum"),
        (89.99, None, "Gold"),
        (80, None, "Gold"),
        (70, None, "Silver"),
        (60, None, "Bronze"),
        (59.99, None, None),
        (95, 1450, "Silver"),  # Elo holds it back
        (75, 1700, "Silver"),  # composite holds it back
        (95, 1200, None),
    ],
)
def test_badges(composite: float, elo: float | None, expected: str | None) -> None:
    assert badge(composite, elo) == expected


def test_good_description_fixture_is_good() -> None:
    assert len(GOOD_DESCRIPTION) >= 100


def test_score_grade_badge_agree_at_the_rounding_edge() -> None:
    layers = {d: {"static": 0.69996} for d in ("triggering_accuracy", "token_efficiency")}
    c = compute_composite(layers, 0)
    assert (c.score, c.grade, c.badge) == (70.0, "C", "Silver")
