"""PluginEval's Layer 2 (LLM judge) for one skill: N judges, averaged, with kappa and CIs.

Each judge is one forced-tool call (:mod:`pytest_skilllift.lint.skill_judge`). Usable
assessments are averaged per dimension; an unusable one is left out and named; when none is
usable the layer is *unscored* and says why (its dimensions then fall back to the layers that
did run — never to zero).

Intervals (95 %), on every judged dimension:

* triggering accuracy and output quality — bootstrap (1000x): each judge's ten predictions
  (three task scores) are resampled, its F1 (mean) recomputed, and the judges averaged;
* orchestration fitness and scope calibration — one number per judge, so a Student-t interval
  across judges; with a single judge there is none, and the report says so.

Agreement: Cohen's kappa between every pair of usable judges over the anchored-rubric band
(0–0.19 … 0.80–1.00) of the four dimensions; with more than two judges the mean of the
pairs is reported too.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from pytest_skilllift.intervals import bootstrap_resamples, cohen_kappa
from pytest_skilllift.lint.depth_stats import QUALITY_BOOTSTRAP, t_interval
from pytest_skilllift.lint.skill_judge import (
    ASSESS_TOOL,
    JUDGE_DIMENSIONS,
    PROMPT_VERSION,
    Assessment,
    SkillJudgeClient,
    SkillJudgeReplyError,
    assessment_request,
    parse_assessment,
    skill_material,
)
from pytest_skilllift.lint.spend import Budget, LayerCost, Store, slug
from pytest_skilllift.skill.skillfile import SkillFile


@dataclass
class JudgeLayer:
    """The outcome of the judge layer for one skill."""

    judges_requested: int
    model: str
    assessments: list[tuple[int, Assessment]] = field(default_factory=list)
    failures: list[tuple[int, str]] = field(default_factory=list)
    cost: LayerCost = field(default_factory=LayerCost)
    material_not_sent: tuple[str, ...] = ()

    @property
    def scored(self) -> bool:
        """At least one usable assessment."""
        return bool(self.assessments)

    @property
    def unscored_reason(self) -> str | None:
        """Why the layer produced no score (None when it did)."""
        if self.scored:
            return None
        reasons = "; ".join(f"judge {i + 1}: {why}" for i, why in self.failures)
        return f"no usable judge reply ({reasons or 'no judge ran'})"

    def scores(self) -> dict[str, float]:
        """Per-dimension mean over the usable judges."""
        if not self.assessments:
            return {}
        return {
            dim: statistics.fmean(a.dimensions()[dim] for _i, a in self.assessments)
            for dim in JUDGE_DIMENSIONS
        }

    def intervals(self, seed: int = 0) -> dict[str, tuple[float, float] | None]:
        """95 % interval per judged dimension (see the module docstring)."""
        if not self.assessments:
            return {}
        out: dict[str, tuple[float, float] | None] = {}
        rng = np.random.default_rng(seed)
        out["triggering_accuracy"] = _nested_bootstrap(
            [np.array([[s, w] for _p, s, w in a.predictions], dtype=bool)
             for _i, a in self.assessments], _f1_rows, rng)
        out["output_quality"] = _nested_bootstrap(
            [np.array([s for _t, s in a.tasks], dtype=float) for _i, a in self.assessments],
            lambda x: x.mean(axis=1), rng)
        out["orchestration_fitness"] = t_interval([a.orchestration for _i, a in self.assessments])
        out["scope_calibration"] = t_interval([a.scope for _i, a in self.assessments])
        return out

    def kappa(self) -> dict[str, Any]:
        """Cohen's kappa between each pair of usable judges (anchored bands, 4 dimensions)."""
        pairs: list[dict[str, Any]] = []
        values: list[float] = []
        for (i, a), (j, b) in combinations(self.assessments, 2):
            k = cohen_kappa(a.bands(), b.bands())
            pairs.append({"judges": [i + 1, j + 1], "kappa": k})
            if k is not None:
                values.append(k)
        note = None
        if len(self.assessments) < 2:
            note = "kappa needs two or more usable judges (--judges N)"
        elif len(values) < len(pairs):
            note = ("kappa is undefined for a pair that put every dimension in one and the same "
                    "band (chance agreement is 1)")
        return {
            "pairs": pairs,
            "mean": statistics.fmean(values) if values else None,
            "items": len(JUDGE_DIMENSIONS),
            "categories": "anchored bands 0-0.19, 0.20-0.39, 0.40-0.59, 0.60-0.79, 0.80-1.00",
            "note": note,
        }

    def to_json(self) -> dict[str, Any]:
        """The ``judge`` entry of the report's ``layers``."""
        cis = self.intervals()
        return {
            "layer": "judge",
            "scored": self.scored,
            "unscored_reason": self.unscored_reason,
            "model": self.model,
            "prompt_version": PROMPT_VERSION,
            "judges_requested": self.judges_requested,
            "judges_usable": len(self.assessments),
            "scores": {k: round(v, 4) for k, v in self.scores().items()},
            "ci95": {k: None if v is None else [round(v[0], 4), round(v[1], 4)]
                     for k, v in cis.items()},
            "ci_notes": self.ci_notes(),
            "kappa": self.kappa(),
            "judges": [{"judge": i + 1, **a.to_json()} for i, a in self.assessments],
            "unusable": [{"judge": i + 1, "reason": why} for i, why in self.failures],
            "material_not_sent": list(self.material_not_sent),
            "cost": self.cost.to_json(),
        }

    def ci_notes(self) -> list[str]:
        """Why a judged dimension has no interval."""
        if len(self.assessments) == 1:
            return ["orchestration_fitness and scope_calibration have no interval from one "
                    "judge (pass --judges 2 or more)"]
        return []


def _f1_rows(samples: np.ndarray) -> np.ndarray:
    """F1 of each resample; ``samples`` has shape (B, n, 2) of (should, would)."""
    should, would = samples[..., 0], samples[..., 1]
    tp = np.sum(should & would, axis=1)
    fp = np.sum(~should & would, axis=1)
    fn = np.sum(should & ~would, axis=1)
    denom = 2 * tp + fp + fn
    return np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)


def _nested_bootstrap(per_judge: list[np.ndarray], stat: Any, rng: np.random.Generator,
                      ) -> tuple[float, float] | None:
    """Resample within each judge, apply ``stat`` per judge, average the judges."""
    if not per_judge or all(len(x) < 2 for x in per_judge):
        return None
    total = np.zeros(QUALITY_BOOTSTRAP)
    for data in per_judge:
        total += stat(bootstrap_resamples(data, rng, QUALITY_BOOTSTRAP))
    means = total / len(per_judge)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return (float(lo), float(hi))


def run_judge_layer(
    skill: SkillFile,
    client: SkillJudgeClient,
    *,
    judges: int,
    budget: Budget,
    store: Store,
    skill_hash: str,
) -> JudgeLayer:
    """Ask ``judges`` independent judges; reuse stored usable assessments (no double pay)."""
    if judges < 1:
        raise ValueError(f"--judges must be >= 1, not {judges}")
    material = skill_material(skill)
    layer = JudgeLayer(judges_requested=judges, model=client.model,
                       material_not_sent=material.not_sent)
    for k in range(judges):
        key = (f"judge/{skill_hash}-{slug(client.model)}-{slug(PROMPT_VERSION)}-"
               f"{judges}x-{k + 1}.json")
        stored = store.get(key)
        if isinstance(stored, dict):
            try:
                layer.assessments.append((k, parse_assessment(stored)))
                layer.cost.reused += 1
                continue
            except SkillJudgeReplyError:
                pass  # a hand-edited store file: ask again
        if budget.exhausted():
            layer.failures.append((k, "not run: --max-spend reached"))
            layer.cost.not_run_spend_cap += 1
            continue
        reply = client.call_tool(assessment_request(material, k, judges), ASSESS_TOOL)
        layer.cost.add_usage(reply.usage, reply.cost_usd)
        budget.charge(reply.cost_usd)
        layer.cost.notes.extend(reply.notes)
        if reply.payload is None:
            layer.failures.append((k, f"unusable reply: {reply.error}"))
            continue
        try:
            assessment = parse_assessment(reply.payload)
        except SkillJudgeReplyError as exc:
            layer.failures.append((k, f"unusable reply: {exc}"))
            continue
        layer.assessments.append((k, assessment))
        store.put(key, reply.payload)
    return layer
