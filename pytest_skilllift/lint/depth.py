"""One skill at a depth: the layers that ran, the blended composite, intervals, costs, badge.

Depths (PluginEval's ``--depth`` and ``certify``):

======== ========================================================== ==================
depth    layers                                                     model calls
======== ========================================================== ==================
quick    static (Layer 1)                                           none
standard static + LLM judge (Layer 2)                               N judges
deep     static + judge + Monte Carlo (Layer 3) on the real CLI     + N runs, answers
certify  deep + Elo against a gold corpus, badge needs both bounds  + 2 per entry
======== ========================================================== ==================

Per dimension the present layers are blended with the methodology's table and renormalised
over the layers that produced a score for it (:func:`pytest_skilllift.lint.composite.blend`);
an unscored layer simply is not present. Each blended dimension carries a 95 % interval: the
blend of its layers' intervals with the same weights (the static layer is deterministic, an
interval of zero width); when a model layer feeding it has none, neither has the blend, and
the report says which layer lacked one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pytest_skilllift.lint.analyze import SkillReport, analyze
from pytest_skilllift.lint.composite import (
    BLEND_COLUMN,
    DIMENSION_WEIGHTS,
    LAYER_BLEND,
    STATIC_TO_DIMENSION,
    Composite,
    compute_composite,
)
from pytest_skilllift.lint.elo import Corpus, EloResult, play_corpus
from pytest_skilllift.lint.judge_layer import JudgeLayer, run_judge_layer
from pytest_skilllift.lint.montecarlo import (
    PROJECT_PROMPTS,
    MCConfig,
    MCLayer,
    MCPrompt,
    discover_mc_prompts,
    for_family,
    run_monte_carlo,
    week_layer,
)
from pytest_skilllift.lint.skill_judge import SkillJudgeClient
from pytest_skilllift.lint.spend import Budget, Store, tree_hash
from pytest_skilllift.model import AgentConfig
from pytest_skilllift.skill.skillfile import SkillFile

if TYPE_CHECKING:
    from pytest_skilllift.runners.base import Runner

DEPTHS: tuple[str, ...] = ("quick", "standard", "deep")
#: The layers each depth runs (certify = deep + Elo).
LAYERS: dict[str, tuple[str, ...]] = {
    "quick": ("static",),
    "standard": ("static", "judge"),
    "deep": ("static", "judge", "monte_carlo"),
    "certify": ("static", "judge", "monte_carlo", "elo"),
}


class DepthUsageError(ValueError):
    """A depth run that cannot start (missing corpus, unusable prompts, no CLI ...)."""


@dataclass
class DepthContext:
    """What every skill of one depth run shares: spend cap, store, clients, runners."""

    depth: str
    budget: Budget
    store: Store
    judges: int = 1
    client_factory: Callable[[], SkillJudgeClient] | None = None
    mc: MCConfig | None = None
    runner_factory: Callable[[], Runner] | None = None
    mc_prompts: list[MCPrompt] | None = None  # --mc-prompts; else per skill
    week_dir: Path | None = None  # deep/certify: the week's runs replace new ones
    week_data: dict[str, Any] | None = None  # quick/standard: the measured layer
    corpus: Corpus | None = None
    progress: Callable[[str], None] | None = None
    _client: SkillJudgeClient | None = field(default=None, repr=False)

    def client(self) -> SkillJudgeClient:
        """The judge client, built once on first use."""
        if self._client is None:
            if self.client_factory is None:
                raise DepthUsageError("no judge client configured")
            self._client = self.client_factory()
        return self._client

    def close(self) -> None:
        """Release the judge client's connections."""
        if self._client is not None:
            self._client.close()


@dataclass
class DepthReport:
    """A skill scored at a depth."""

    base: SkillReport  # static (and the measured layer of --week at quick/standard)
    depth: str
    composite: Composite
    layer_scores: dict[str, dict[str, float]]
    intervals: dict[str, dict[str, Any]]
    judge: JudgeLayer | None = None
    mc: MCLayer | None = None
    elo: EloResult | None = None
    badge_note: str | None = None

    @property
    def layers_ran(self) -> list[str]:
        """Layers that produced at least one score."""
        ran = ["static"]
        if self.base.measured is not None:
            ran.append("measured")
        if self.judge is not None and self.judge.scored:
            ran.append("judge")
        if self.mc is not None and self.mc.scored:
            ran.append("monte_carlo")
        if self.elo is not None and self.elo.scored:
            ran.append("elo")
        return ran

    def unscored_layers(self) -> list[dict[str, str]]:
        """Layers the depth asked for that produced no score, with the reason."""
        out = []
        for name, layer in (("judge", self.judge), ("monte_carlo", self.mc),
                            ("elo", self.elo)):
            if layer is None or layer.scored:
                continue
            reason = (layer.to_json().get("unscored_reason") if isinstance(layer, EloResult)
                      else layer.unscored_reason)
            out.append({"layer": name, "reason": str(reason)})
        return out

    def costs(self) -> dict[str, Any]:
        """Tokens and dollars per model layer, and the total."""
        out: dict[str, Any] = {}
        total = 0.0
        for name, layer in (("judge", self.judge), ("monte_carlo", self.mc), ("elo", self.elo)):
            if layer is not None:
                out[name] = layer.cost.to_json()
                total += layer.cost.usd
        out["total_usd"] = round(total, 6)
        return out

    def to_json(self) -> dict[str, Any]:
        """The per-skill JSON object of ``skilllift score --depth ... --output json``."""
        data = self.base.to_json()
        data["depth"] = self.depth
        comp = self.composite.to_json()
        for dim, d in comp["dimensions"].items():
            d.update(self.intervals.get(dim, {"ci95": None}))
        if self.badge_note:
            comp["badge_note"] = self.badge_note
        data["composite"] = comp
        layers = list(data["layers"])
        for layer in (self.judge, self.mc, self.elo):
            if layer is not None:
                layers.append(layer.to_json())
        data["layers"] = layers
        data["layers_ran"] = self.layers_ran
        data["unscored_layers"] = self.unscored_layers()
        data["cost"] = self.costs()
        return data


def static_layer_scores(report: SkillReport) -> dict[str, dict[str, float]]:
    """``layer_scores[dimension][layer]`` of the static (and measured) layers."""
    scores: dict[str, dict[str, float]] = {
        STATIC_TO_DIMENSION[name]: {"static": sub.score} for name, sub in report.sub_scores.items()
    }
    if report.measured is not None:
        for dim, value in report.measured.layer_scores().items():
            scores.setdefault(dim, {})["measured"] = value
    return scores


def blended_interval(
    dim: str,
    layer_scores: dict[str, float],
    layer_cis: dict[str, tuple[float, float] | None],
) -> dict[str, Any]:
    """``{"ci95": [lo, hi] | None, "ci_note"?}`` for one blended dimension (module docstring)."""
    weights = LAYER_BLEND[dim]
    lo = hi = den = 0.0
    model_layer = False
    for layer, score in layer_scores.items():
        w = weights.get(BLEND_COLUMN.get(layer, layer), 0.0)
        if w <= 0:
            continue
        bounds: tuple[float, float] | None = (score, score)
        if layer != "static":
            model_layer = True
            bounds = layer_cis.get(f"{layer}:{dim}")
        if bounds is None:
            return {"ci95": None, "ci_note": f"the {layer} layer gave no interval"}
        lo += w * bounds[0]
        hi += w * bounds[1]
        den += w
    if not model_layer or den == 0:
        return {"ci95": None}  # static only: deterministic, no interval to report
    return {"ci95": [round(lo / den, 4), round(hi / den, 4)]}


def _layer_cis(report: SkillReport, judge: JudgeLayer | None, mc: MCLayer | None,
               ) -> dict[str, tuple[float, float] | None]:
    out: dict[str, tuple[float, float] | None] = {}
    if report.measured is not None:
        out["measured:triggering_accuracy"] = report.measured.activation_ci
    if judge is not None and judge.scored:
        for dim, ci in judge.intervals().items():
            out[f"judge:{dim}"] = ci
    if mc is not None and mc.scored and mc.figures is not None:
        for dim, ci in mc.figures.intervals().items():
            out[f"monte_carlo:{dim}"] = ci
    return out


def evaluate(skill: SkillFile, ctx: DepthContext) -> DepthReport:
    """Run every layer ``ctx.depth`` asks for on one skill and blend them.

    Holds the family's lock in the store meanwhile, so two processes evaluating the same
    family (xdist workers, two commands) never pay for the same call: the second reuses.
    """
    family_dir = skill.root / skill.family
    with ctx.store.lock(tree_hash(family_dir) if family_dir.is_dir() else skill.rel_id
                        .replace("/", "_")):
        return _evaluate(skill, ctx)


def _evaluate(skill: SkillFile, ctx: DepthContext) -> DepthReport:
    use_week_runs = ctx.week_dir is not None and ctx.depth in ("deep", "certify")
    base = analyze(skill, None if use_week_runs else ctx.week_data,
                   None if use_week_runs or ctx.week_data is None else str(ctx.week_dir or ""))
    scores = static_layer_scores(base)
    wanted = LAYERS[ctx.depth]
    # The judge and Elo read this skill; Monte Carlo installs (and so depends on) its family.
    skill_hash = tree_hash(skill.dir)
    family_dir = skill.root / skill.family
    family_hash = tree_hash(family_dir) if family_dir.is_dir() else skill_hash
    judge = mc = None
    elo = None
    if "judge" in wanted:
        if ctx.progress:
            ctx.progress(f"{skill.rel_id}: judge layer ({ctx.judges} judge(s))")
        judge = run_judge_layer(skill, ctx.client(), judges=ctx.judges, budget=ctx.budget,
                                store=ctx.store, skill_hash=skill_hash)
        for dim, value in judge.scores().items():
            scores.setdefault(dim, {})["judge"] = value
    if "monte_carlo" in wanted:
        mc = _monte_carlo(skill, ctx, judge, family_hash)
        if mc.scored and mc.figures is not None:
            for dim, value in mc.figures.dimension_scores().items():
                scores.setdefault(dim, {})["monte_carlo"] = value
    if "elo" in wanted:
        if ctx.corpus is None:
            raise DepthUsageError("certify needs a corpus index (--corpus)")
        if ctx.progress:
            ctx.progress(f"{skill.rel_id}: Elo against {len(ctx.corpus.entries)} corpus entries")
        elo = play_corpus(skill, ctx.corpus, ctx.client(), budget=ctx.budget, store=ctx.store,
                          skill_hash=skill_hash)
    rating = elo.rating() if elo is not None else None
    composite = compute_composite(scores, len(base.anti_patterns), rating)
    badge_note = None
    if ctx.depth == "certify" and rating is None:
        composite.badge = None
        badge_note = "no badge: certify needs an Elo rating and no corpus match was judged"
    elif rating is not None:
        badge_note = f"badge needs composite and Elo bounds (Elo {rating:.0f})"
    cis = _layer_cis(base, judge, mc)
    intervals = {dim: blended_interval(dim, scores.get(dim, {}), cis)
                 for dim in composite.dimensions}
    return DepthReport(base=base, depth=ctx.depth, composite=composite, layer_scores=scores,
                       intervals=intervals, judge=judge, mc=mc, elo=elo, badge_note=badge_note)


def _monte_carlo(skill: SkillFile, ctx: DepthContext, judge: JudgeLayer | None,
                 skill_hash: str) -> MCLayer:
    if ctx.week_dir is not None:
        return week_layer(ctx.week_dir, skill.family)
    if ctx.mc is None or ctx.runner_factory is None:
        raise DepthUsageError("Monte Carlo needs the CLI runner configuration")
    notes: list[str] = []
    prompts, other = for_family(ctx.mc_prompts or [], skill.family)
    if other:
        notes.append(f"{other} prompt(s) of --mc-prompts target other skills: not run")
    if not prompts:
        prompts, problems = discover_mc_prompts(skill, PROJECT_PROMPTS)
        notes += problems
    if not prompts and judge is not None and judge.assessments:
        _k, first = judge.assessments[0]
        prompts = [MCPrompt(p, s, (), "the judge's imagined trigger prompts")
                   for p, s, _w in first.predictions]
    if not prompts:
        layer = MCLayer(source="cli", planned=ctx.mc.runs)
        layer.unscored = ("no prompts: pass --mc-prompts FILE or add evals/evals.json to the "
                          "skill (the judge layer gave none either)")
        layer.notes = notes
        return layer
    layer = run_monte_carlo(skill, prompts, ctx.mc, ctx.runner_factory,
                            ctx.client() if ctx.client_factory else None,
                            budget=ctx.budget, store=ctx.store, skill_hash=skill_hash,
                            progress=ctx.progress)
    layer.notes = notes + layer.notes
    return layer


def agent_config(claude: str, skills_root: Path, *, max_turns: int | None, timeout_s: float,
                 allowed_tools: tuple[str, ...] | None = None,
                 permission_mode: str = "dontAsk") -> AgentConfig:
    """The CLI configuration of Monte Carlo runs (the weekly run's defaults)."""
    kwargs: dict[str, Any] = {}
    if allowed_tools:
        kwargs["allowed_tools"] = allowed_tools
    base_url = os.environ.get("ANTHROPIC_BASE_URL")
    return AgentConfig(claude_path=claude, skills_root=skills_root, permission_mode=permission_mode,
                       max_turns=max_turns, timeout_s=timeout_s,
                       env={"ANTHROPIC_BASE_URL": base_url} if base_url else {}, **kwargs)


# ---------------------------------------------------------------------------------------------
# Text


def _ci(ci: Any) -> str:
    return "" if not ci else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def write_depth_text(r: DepthReport, out: TextIO) -> None:
    """The human report of one skill at a depth."""
    from pytest_skilllift.lint.output import write_findings as _write_findings

    c = r.composite
    s = r.base.skill
    print(f"{s.name or s.rel_id}  ({s.dir}, {s.line_count} lines)  depth {r.depth}", file=out)
    print(f"composite {c.score:.1f}/100  grade {c.grade_text()}  badge {c.badge_text()}  "
          f"penalty {c.penalty:.2f} ({c.anti_pattern_count} anti-pattern(s))", file=out)
    if r.badge_note:
        print(r.badge_note, file=out)
    print(f"layers ran: {', '.join(r.layers_ran)}; over {len(c.dimensions)} of "
          f"{len(DIMENSION_WEIGHTS)} dimensions (weight {c.weight_covered:.2f}, renormalised); "
          f"unmeasured: {', '.join(c.unmeasured) or 'none'}", file=out)
    for u in r.unscored_layers():
        print(f"UNSCORED {u['layer']}: {u['reason']}", file=out)
    costs = r.costs()
    for name in ("judge", "monte_carlo", "elo"):
        cj = costs.get(name)
        if cj:
            capped = (f", {cj['not_run_spend_cap']} not run (--max-spend)"
                      if cj["not_run_spend_cap"] else "")
            if cj["not_run_outage"]:
                capped += f", {cj['not_run_outage']} not run (outage, see the notes)"
            print(f"cost {name}: ${cj['usd']:.4f}, {cj['input_tokens']} input + "
                  f"{cj['output_tokens']} output tokens, {cj['calls']} call(s), "
                  f"{cj['reused']} reused{capped}", file=out)
    if len(costs) > 1:
        print(f"cost total: ${costs['total_usd']:.4f}", file=out)
    print("", file=out)
    print(f"{'dimension':<26}{'weight':>7}{'score':>8}  grade  {'95% CI':<14}  layers", file=out)
    for dim, d in c.dimensions.items():
        layers = " ".join(f"{k} {v:.2f}" for k, v in d["layers"].items())
        iv = r.intervals.get(dim, {})
        ci = _ci(iv.get("ci95")) or ("n/a" if iv.get("ci_note") else "")
        print(f"{dim:<26}{d['weight']:>7.2f}{d['score']:>8.2f}  {d['grade']:<5}  {ci:<14}  "
              f"{layers}", file=out)
    notes = sorted({f"{dim}: {iv['ci_note']}" for dim, iv in r.intervals.items()
                    if iv.get("ci_note")})
    for n in notes:
        print(f"  no interval — {n}", file=out)
    if r.judge is not None and r.judge.scored:
        k = r.judge.kappa()
        kappa = "n/a" if k["mean"] is None else f"{k['mean']:.2f}"
        print(f"\njudge: {len(r.judge.assessments)} of {r.judge.judges_requested} usable "
              f"({r.judge.model}); Cohen's kappa {kappa}"
              + (f" ({k['note']})" if k["note"] else ""), file=out)
        for i, why in r.judge.failures:
            print(f"  judge {i + 1} unusable: {why}", file=out)
        for note in r.judge.ci_notes():
            print(f"  {note}", file=out)
    if r.mc is not None and r.mc.figures is not None:
        f = r.mc.figures
        src = r.mc.detail.get("week", "the real CLI") if r.mc.source == "week" else "the real CLI"
        act = "n/a" if f.activation_rate is None else f"{f.activation_rate:.2f}"
        fail = "n/a" if f.failure_rate is None else f"{f.failure_rate:.2f}"
        cv = "n/a" if f.cv is None else f"{f.cv:.2f}"
        mcs = "n/a" if f.mc_score is None else f"{f.mc_score:.3f}"
        med = "n/a" if f.tokens is None else f"{f.tokens['median']:.0f}"
        print(f"\nmonte carlo ({f.n_runs} runs from {src}): mc_score {mcs}; activation {act} "
              f"{_ci(f.activation_ci)} ({f.n_activated}/{f.n_should}); CV {cv} over "
              f"{len(f.qualities)} judged; failure {fail} {_ci(f.failure_ci)} "
              f"(Clopper-Pearson; {f.statuses}); median tokens {med}", file=out)
        if f.mc_dropped:
            print(f"  mc_score left out (unmeasured, weights renormalised): "
                  f"{', '.join(f.mc_dropped)}", file=out)
        for n in r.mc.notes + f.excluded:
            print(f"  {n}", file=out)
    if r.elo is not None:
        e = r.elo.to_json()
        if e["rating"] is not None:
            ci = "" if not e["ci95"] else f"[{e['ci95'][0]:.0f}, {e['ci95'][1]:.0f}] "
            print(f"\nElo {e['rating']:.0f} {ci}(95% bootstrap) over "
                  f"{len(e['matches'])} matches (W{e['wins']} D{e['draws']} L{e['losses']}); "
                  f"corpus percentile {e['percentile']:.0f}; position bias flagged in "
                  f"{e['position_bias']}", file=out)
        for u in e["unscored_matches"] + e["skipped"] + e["stale_entries"]:
            print(f"  {u}", file=out)
    _write_findings("anti-patterns (count toward the penalty)", r.base.anti_patterns, out)
    _write_findings("other findings (no penalty)", r.base.findings, out)
