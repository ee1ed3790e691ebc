"""PluginEval's composite: dimension weights, layer blends, penalty, grades, badges.

    blended[d] = Σ layer_weight[d][l] × layer_score[d][l] / Σ layer_weight[d][l]   (present l)
    composite  = Σ weight[d] × blended[d] × 100 × penalty
    penalty    = max(0.5, 1 − 0.05 × anti_pattern_count)

Interpretation where the methodology is silent: a dimension that no present layer feeds (at quick
depth: output_quality, scope_calibration, robustness, code_template_quality) is *unmeasured*,
not zero. PluginEval renormalises blends "so skipping Monte Carlo doesn't artificially
deflate scores"; the same reasoning is applied one level up, dividing by the weight of the measured
dimensions. Without it a perfect skill would top out at 66 at quick depth. The JSON reports
``weight_covered`` and ``unmeasured`` so the renormalisation is never hidden, and a grade or
badge that rests on part of the weight says so wherever it is printed ("static only,
provisional: 66% of the dimension weight" at quick depth), as PluginEval's CLI output would
need to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_skilllift.intervals import EPS  # float noise never drops a grade

DIMENSION_WEIGHTS: dict[str, float] = {
    "triggering_accuracy": 0.25,
    "orchestration_fitness": 0.20,
    "output_quality": 0.15,
    "scope_calibration": 0.12,
    "progressive_disclosure": 0.10,
    "token_efficiency": 0.06,
    "robustness": 0.05,
    "structural_completeness": 0.03,
    "code_template_quality": 0.02,
    "ecosystem_coherence": 0.02,
}

LAYERS: tuple[str, ...] = ("static", "judge", "monte_carlo")

#: per-dimension blend of the layers (methodology table: static / judge / monte_carlo).
LAYER_BLEND: dict[str, dict[str, float]] = {
    "triggering_accuracy": {"static": 0.15, "judge": 0.25, "monte_carlo": 0.60},
    "orchestration_fitness": {"static": 0.10, "judge": 0.70, "monte_carlo": 0.20},
    "output_quality": {"static": 0.00, "judge": 0.40, "monte_carlo": 0.60},
    "scope_calibration": {"static": 0.30, "judge": 0.55, "monte_carlo": 0.15},
    "progressive_disclosure": {"static": 0.80, "judge": 0.20, "monte_carlo": 0.00},
    "token_efficiency": {"static": 0.40, "judge": 0.10, "monte_carlo": 0.50},
    "robustness": {"static": 0.00, "judge": 0.20, "monte_carlo": 0.80},
    "structural_completeness": {"static": 0.90, "judge": 0.10, "monte_carlo": 0.00},
    "code_template_quality": {"static": 0.30, "judge": 0.70, "monte_carlo": 0.00},
    "ecosystem_coherence": {"static": 0.85, "judge": 0.15, "monte_carlo": 0.00},
}

#: layers that stand in for a methodology column: measured lift runs (``--week``) take the Monte
#: Carlo column, since they are the real version of the simulated invocations.
BLEND_COLUMN: dict[str, str] = {"measured": "monte_carlo"}

#: which static sub-check feeds which dimension (six of the ten).
STATIC_TO_DIMENSION: dict[str, str] = {
    "frontmatter_quality": "triggering_accuracy",
    "orchestration_wiring": "orchestration_fitness",
    "progressive_disclosure": "progressive_disclosure",
    "structural_completeness": "structural_completeness",
    "token_efficiency": "token_efficiency",
    "ecosystem_coherence": "ecosystem_coherence",
}

#: (grade, lower bound) on a [0, 1] score, best first.
GRADES: tuple[tuple[str, float], ...] = (("A", 0.90), ("B", 0.80), ("C", 0.70), ("D", 0.60))
#: (badge, composite >=, Elo >=), best first.
BADGES: tuple[tuple[str, float, float], ...] = (
    ("Platinum", 90.0, 1600.0),
    ("Gold", 80.0, 1500.0),
    ("Silver", 70.0, 1400.0),
    ("Bronze", 60.0, 1300.0),
)


def anti_pattern_penalty(count: int) -> float:
    """``max(0.5, 1 − 0.05 × count)``."""
    return max(0.5, 1.0 - 0.05 * count)


def grade(score: float) -> str:
    """Letter grade of a [0, 1] score: A ≥ 0.90, B ≥ 0.80, C ≥ 0.70, D ≥ 0.60, else F."""
    for letter, lo in GRADES:
        if score + EPS >= lo:
            return letter
    return "F"


def badge(composite: float, elo: float | None = None) -> str | None:
    """Quality badge: the best tier whose composite bound is met and, when an Elo rating
    exists, whose Elo bound is met too. Without Elo (every static run) composite alone
    decides, as the methodology specifies. None below Bronze."""
    for name, c_min, e_min in BADGES:
        if composite + EPS >= c_min and (elo is None or elo + EPS >= e_min):
            return name
    return None


def blend(dimension: str, layer_scores: Mapping[str, float]) -> float | None:
    """Blend the layers present for ``dimension``, renormalised over their weights.

    None when no present layer carries weight for the dimension.
    """
    weights = LAYER_BLEND[dimension]
    num = den = 0.0
    for layer, score in layer_scores.items():
        w = weights.get(BLEND_COLUMN.get(layer, layer), 0.0)
        if w > 0:
            num += w * score
            den += w
    return num / den if den > 0 else None


@dataclass
class Composite:
    """The composite of one skill."""

    score: float
    grade: str
    badge: str | None
    penalty: float
    anti_pattern_count: int
    weight_covered: float
    dimensions: dict[str, dict[str, Any]] = field(default_factory=dict)
    unmeasured: list[str] = field(default_factory=list)
    #: The layers that fed it (``static`` alone at ``--depth quick``).
    layers: tuple[str, ...] = ()

    @property
    def provisional(self) -> bool:
        """Whether the grade and badge rest on part of the dimension weight only."""
        return self.weight_covered < 1.0 - EPS

    @property
    def qualifier(self) -> str:
        """What the grade and badge must say when they are provisional (empty otherwise):
        ``static only, provisional: 66% of the dimension weight`` at quick depth."""
        if not self.provisional:
            return ""
        what = "static only, provisional" if set(self.layers) <= {"static"} else "provisional"
        return f"{what}: {self.weight_covered:.0%} of the dimension weight"

    def grade_text(self) -> str:
        """``B`` or ``B (static only, provisional: 66% of the dimension weight)``."""
        return f"{self.grade} ({self.qualifier})" if self.qualifier else self.grade

    def badge_text(self) -> str:
        """``Gold``, ``-``, or with the qualifier when provisional."""
        name = self.badge or "-"
        return f"{name} ({self.qualifier})" if self.qualifier and self.badge else name

    def to_json(self) -> dict[str, Any]:
        """The ``composite`` object of ``skilllift score --output json``."""
        return {
            "score": round(self.score, 2),
            "grade": self.grade,
            "badge": self.badge,
            "penalty": round(self.penalty, 4),
            "anti_pattern_count": self.anti_pattern_count,
            "weight_covered": round(self.weight_covered, 4),
            "dimensions": self.dimensions,
            "unmeasured": self.unmeasured,
            "provisional": self.provisional,
            "qualifier": self.qualifier or None,
        }


def compute_composite(
    layer_scores: Mapping[str, Mapping[str, float]],
    anti_pattern_count: int,
    elo: float | None = None,
) -> Composite:
    """Composite from ``layer_scores[dimension][layer]`` (only present layers listed)."""
    penalty = anti_pattern_penalty(anti_pattern_count)
    dims: dict[str, dict[str, Any]] = {}
    unmeasured: list[str] = []
    raw = covered = 0.0
    layers = sorted({layer for per in layer_scores.values() for layer in per})
    for dim, weight in DIMENSION_WEIGHTS.items():
        per_layer = dict(layer_scores.get(dim, {}))
        value = blend(dim, per_layer)
        if value is None:
            unmeasured.append(dim)
            continue
        raw += weight * value
        covered += weight
        dims[dim] = {
            "score": round(value, 4),
            "grade": grade(value),
            "weight": weight,
            "layers": {k: round(v, 4) for k, v in per_layer.items()},
        }
    # Rounded once, here: the grade, the badge, --threshold and the printed number then all
    # agree (69.996 must not print as 70.00 yet grade D and fail a threshold of 70).
    score = round(raw / covered * 100.0 * penalty, 2) if covered > 0 else 0.0
    return Composite(
        score=score,
        grade=grade(score / 100.0),
        badge=badge(score, elo),
        penalty=penalty,
        anti_pattern_count=anti_pattern_count,
        weight_covered=covered,
        dimensions=dims,
        unmeasured=unmeasured,
        layers=tuple(layers),
    )
