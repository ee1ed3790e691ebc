"""PluginEval's Layer 3 (Monte Carlo) on the real Claude Code CLI, or from a week's runs.

N prompts (``--mc-prompts FILE``, else the skill's own prompt files, else the judge's imagined
prompts; repeated in order until there are N, default 50) each run once through the real CLI
with the skill installed, by the same runners as the weekly run
(:class:`pytest_skilllift.runners.local.LocalRunner`,
:class:`pytest_skilllift.runners.docker.DockerRunner`) and the same transcript signals and run
statuses (:mod:`pytest_skilllift.trace.transcript`, :func:`pytest_skilllift.run.engine.classify`).
Recorded per run: activation, status, tokens (the result event's ``usage``), cost, and — for
activated, successful runs of prompts that should trigger — a judged quality (0–1, one forced
tool call, :data:`pytest_skilllift.lint.skill_judge.QUALITY_TOOL`).

Figures (PluginEval "Layer 3 — Monte Carlo Simulation"):

* activation rate over the should-trigger runs, Wilson 95 %; should-not prompts give a false
  activation rate, reported beside it;
* output consistency = CV (population SD / mean) of the judged qualities, with a 1000x
  bootstrap interval on their mean;
* failure rate = runs whose status is not ``ok`` (errored, timed out, budget-capped, no
  answer, skill not installed) over all runs, Clopper–Pearson 95 %;
* token efficiency: median tokens, IQR, outliers (> Q3 + 1.5 IQR) over successful runs,
  ``efficiency_norm = max(0, 1 − median / 8000)``;
* ``mc_score = 0.40 a + 0.30 (1 − min(1, CV)) + 0.20 (1 − f) + 0.10 e``.

Per dimension the layer feeds the Monte Carlo column of the blend table: triggering accuracy ←
activation rate, output quality ← mean judged quality, robustness ← 1 − failure rate, token
efficiency ← efficiency_norm. (PluginEval's rubric notes say the layer produces no score for
orchestration fitness or scope calibration; the blend renormalises over the layers that do.)

A run that could not even start (the runner's own error: no CLI, install failure) is not a
measurement of the skill: it is left out of the rates, named, and retried on the next
invocation. Every finished run is stored under ``--out`` and reused, never paid twice.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_skilllift.intervals import wilson_bounds
from pytest_skilllift.lint.depth_stats import (
    bootstrap_ci,
    clopper_pearson,
    coefficient_of_variation,
    mc_score,
    token_summary,
)
from pytest_skilllift.lint.skill_judge import (
    QUALITY_TOOL,
    SkillJudgeClient,
    SkillJudgeReplyError,
    parse_quality,
    quality_request,
)
from pytest_skilllift.lint.spend import Budget, LayerCost, Store, slug
from pytest_skilllift.model import AgentConfig, PromptSpec, RubricItem, RunSpec
from pytest_skilllift.run.breaker import DEFAULT_THRESHOLD, streak_cause
from pytest_skilllift.run.prompts import HELDOUT_PREFIX  # never loaded from a directory
from pytest_skilllift.skill.skillfile import SkillFile

if TYPE_CHECKING:
    from pytest_skilllift.runners.base import Runner

DEFAULT_RUNS = 50
#: Where a skill keeps prompt files this layer reads by default (skill-creator's layout).
SKILL_PROMPT_GLOBS: tuple[str, ...] = ("evals/evals.json", "evals/*.json")
#: Status of a run the harness could not start: excluded from the rates, retried next time.
HARNESS_ERROR = "harness_error"
#: The project's prompt directory (the weekly run's default), searched when the skill has none.
PROJECT_PROMPTS = Path("evals") / "test-prompts"


class MCPromptError(ValueError):
    """A prompt file that cannot be used; the message names the file, the field and the fix."""


@dataclass(frozen=True)
class MCPrompt:
    """One Monte Carlo prompt."""

    text: str
    should_trigger: bool = True
    rubric: tuple[str, ...] = ()  # must items, shown to the quality judge when present
    source: str = ""
    #: The skill a qdrant prompt file targets (its ``skill`` path or ``skill_url`` path);
    #: empty when the file does not say.
    target: str = ""

    def targets(self, family: str) -> bool:
        """Whether the prompt is for ``family`` (prompts that name no skill are for any)."""
        return not self.target or family in self.target.strip("/").split("/")


def _entry(path: Path, i: int, raw: Any) -> MCPrompt:
    where = f"{path}: entry {i}"
    if isinstance(raw, str):
        if not raw.strip():
            raise MCPromptError(f"{where}: empty prompt; remove it or write the prompt text")
        return MCPrompt(raw.strip(), source=str(path))
    if not isinstance(raw, dict):
        raise MCPromptError(f"{where}: expected a string or an object with 'prompt' or 'query'")
    text = raw.get("prompt", raw.get("query"))
    if not isinstance(text, str) or not text.strip():
        raise MCPromptError(f"{where}: field 'prompt' (or 'query') is missing or empty; "
                            "add the prompt text")
    should = raw.get("should_trigger", True)
    if not isinstance(should, bool):
        raise MCPromptError(f"{where}: field 'should_trigger' is {should!r}; use true or false")
    rubric: list[str] = []
    items = raw.get("rubric")
    if isinstance(items, list):
        rubric = [str(r.get("text")) for r in items
                  if isinstance(r, dict) and r.get("type") == "must" and r.get("text")]
    expectations = raw.get("expectations")
    if isinstance(expectations, list):
        rubric += [str(e) for e in expectations if isinstance(e, str) and e.strip()]
    target = raw.get("skill") or ""
    if not target and isinstance(raw.get("skill_url"), str):
        from pytest_skilllift.run.prompts import skill_path_from_url

        target = skill_path_from_url(raw["skill_url"], "")
    return MCPrompt(text.strip(), should, tuple(rubric), str(path),
                    target if isinstance(target, str) else "")


def load_mc_prompts(path: Path) -> list[MCPrompt]:
    """Prompts from a file: a ``.txt`` (one per line, ``#`` comments), or JSON — a list of
    strings or of ``{"prompt"|"query", "should_trigger"?}`` objects (skill-creator's trigger
    evals), ``{"evals": [{"prompt", "expectations"?}]}`` (skill-creator's evals.json), or one
    qdrant prompt file ``{"prompt", "rubric", "skill_url"|"skill"}``; or a directory of such
    JSON files (``discord-*`` held-out files skipped)."""
    path = Path(path)
    if path.is_dir():
        out: list[MCPrompt] = []
        for f in sorted(path.glob("*.json")):
            if f.name.startswith(HELDOUT_PREFIX):
                continue  # the reserved held-out set is never used for development scoring
            out += load_mc_prompts(f)
        if not out:
            raise MCPromptError(f"{path}: no *.json prompt files in this directory")
        return out
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MCPromptError(f"{path}: cannot read ({exc})") from exc
    if path.suffix.lower() != ".json":
        lines = [ln.strip() for ln in text.splitlines()]
        prompts = [MCPrompt(ln, source=str(path)) for ln in lines if ln and not ln.startswith("#")]
        if not prompts:
            raise MCPromptError(f"{path}: no prompts (one per line; '#' starts a comment)")
        return prompts
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise MCPromptError(f"{path}: not valid JSON ({exc})") from exc
    if isinstance(data, dict) and isinstance(data.get("evals"), list):
        data = data["evals"]
    elif isinstance(data, dict) and ("prompt" in data or "query" in data):
        data = [data]
    if not isinstance(data, list) or not data:
        raise MCPromptError(f"{path}: expected a non-empty list of prompts, an 'evals' list, "
                            "or one prompt object")
    return [_entry(path, i, raw) for i, raw in enumerate(data, 1)]


def discover_mc_prompts(skill: SkillFile, project_prompts: Path | None = None,
                        ) -> tuple[list[MCPrompt], list[str]]:
    """The skill's prompt files, and problems met: its own ``evals/*.json`` (skill-creator's
    layout), else the project's prompt files (``project_prompts``, e.g. ``evals/test-prompts``)
    that target the skill's family."""
    seen: set[Path] = set()
    prompts: list[MCPrompt] = []
    problems: list[str] = []
    for pattern in SKILL_PROMPT_GLOBS:
        for f in sorted(skill.dir.glob(pattern)):
            if f in seen or not f.is_file():
                continue
            seen.add(f)
            try:
                prompts += load_mc_prompts(f)
            except MCPromptError as exc:
                problems.append(str(exc))
    if not prompts and project_prompts is not None and Path(project_prompts).is_dir():
        try:
            found = load_mc_prompts(project_prompts)
        except MCPromptError as exc:
            problems.append(str(exc))
            found = []
        prompts = [p for p in found if p.target and p.targets(skill.family)]
    return prompts, problems


def for_family(prompts: Sequence[MCPrompt], family: str) -> tuple[list[MCPrompt], int]:
    """The prompts meant for ``family`` and how many were left out (they target others)."""
    kept = [p for p in prompts if p.targets(family)]
    return kept, len(prompts) - len(kept)


def schedule(prompts: Sequence[MCPrompt], n: int) -> list[MCPrompt]:
    """``n`` prompts: the list repeated in order (the first ``n`` when it is longer)."""
    if not prompts or n <= 0:
        return []
    return [prompts[i % len(prompts)] for i in range(n)]


# ---------------------------------------------------------------------------------------------
# One run's record and the figures


@dataclass(frozen=True)
class SimRun:
    """What one Monte Carlo run recorded (stored as ``record.json`` in its run directory)."""

    index: int
    prompt: str
    should_trigger: bool
    status: str  # engine statuses (ok, errored, timeout, ...) or HARNESS_ERROR
    reason: str = ""
    activated: bool = False
    activation: str = "none"
    tokens: int | None = None
    cost_usd: float | None = None
    quality: float | None = None
    quality_error: str | None = None

    @property
    def failed(self) -> bool:
        """Counts toward the failure rate (anything but ``ok``; harness errors excluded)."""
        return self.status not in ("ok", HARNESS_ERROR)

    @property
    def wants_quality(self) -> bool:
        """Graded for output quality: a should-trigger prompt, activated, successful."""
        return self.should_trigger and self.activated and self.status == "ok"


@dataclass
class MCFigures:
    """The Monte Carlo figures over a set of runs (pure: :func:`figures`)."""

    n_runs: int
    n_should: int
    n_activated: int
    activation_rate: float | None
    activation_ci: tuple[float, float] | None
    n_should_not: int
    false_activations: int
    false_activation_rate: float | None
    false_activation_ci: tuple[float, float] | None
    n_failed: int
    failure_rate: float | None
    failure_ci: tuple[float, float] | None
    statuses: dict[str, int]
    qualities: list[float]
    quality_unjudged: int
    mean_quality: float | None
    quality_ci: tuple[float, float] | None
    cv: float | None
    tokens: dict[str, Any] | None
    efficiency_norm: float | None
    efficiency_ci: tuple[float, float] | None
    mc_score: float | None
    mc_dropped: list[str]
    excluded: list[str] = field(default_factory=list)

    def dimension_scores(self) -> dict[str, float]:
        """The Monte Carlo column of the blend, for the dimensions these runs measured."""
        out: dict[str, float] = {}
        if self.activation_rate is not None:
            out["triggering_accuracy"] = self.activation_rate
        if self.mean_quality is not None:
            out["output_quality"] = self.mean_quality
        if self.failure_rate is not None:
            out["robustness"] = 1.0 - self.failure_rate
        if self.efficiency_norm is not None:
            out["token_efficiency"] = self.efficiency_norm
        return out

    def intervals(self) -> dict[str, tuple[float, float] | None]:
        """95 % intervals of the dimensions in :meth:`dimension_scores`."""
        rob = None if self.failure_ci is None else (1 - self.failure_ci[1], 1 - self.failure_ci[0])
        out = {
            "triggering_accuracy": self.activation_ci,
            "output_quality": self.quality_ci,
            "robustness": rob,
            "token_efficiency": self.efficiency_ci,
        }
        return {k: v for k, v in out.items() if k in self.dimension_scores()}

    def to_json(self) -> dict[str, Any]:
        """The figures as the report shows them."""
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 4)

        def ci(x: tuple[float, float] | None) -> list[float] | None:
            return None if x is None else [round(x[0], 4), round(x[1], 4)]

        return {
            "n_runs": self.n_runs,
            "mc_score": r(self.mc_score),
            "mc_score_components_dropped": self.mc_dropped,
            "triggering": {"activation_rate": r(self.activation_rate),
                           "wilson_ci95": ci(self.activation_ci),
                           "activated": self.n_activated, "should_trigger_runs": self.n_should,
                           "false_activation_rate": r(self.false_activation_rate),
                           "false_activation_wilson_ci95": ci(self.false_activation_ci),
                           "false_activations": self.false_activations,
                           "should_not_trigger_runs": self.n_should_not},
            "output_consistency": {"mean_quality": r(self.mean_quality),
                                   "bootstrap_ci95": ci(self.quality_ci), "cv": r(self.cv),
                                   "judged": len(self.qualities),
                                   "unjudged": self.quality_unjudged},
            "failure_rate": {"p_fail": r(self.failure_rate),
                             "clopper_pearson_ci95": ci(self.failure_ci),
                             "failed": self.n_failed, "statuses": self.statuses},
            "token_efficiency": {**(self.tokens or {"median": None}),
                                 "efficiency_norm": r(self.efficiency_norm),
                                 "efficiency_ci95": ci(self.efficiency_ci)},
            "excluded": self.excluded,
        }


def figures(runs: Sequence[SimRun], seed: int = 0) -> MCFigures:
    """The Monte Carlo figures of ``runs`` (harness errors excluded and named)."""
    excluded = [f"run {r.index}: {r.reason or 'harness error'}" for r in runs
                if r.status == HARNESS_ERROR]
    measured = [r for r in runs if r.status != HARNESS_ERROR]
    should = [r for r in measured if r.should_trigger]
    should_not = [r for r in measured if not r.should_trigger]
    activated = sum(1 for r in should if r.activated)
    false_act = sum(1 for r in should_not if r.activated)
    failed = sum(1 for r in measured if r.failed)
    statuses: dict[str, int] = {}
    for r in measured:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    graded = [r for r in measured if r.wants_quality]
    qualities = [r.quality for r in graded if r.quality is not None]
    tokens = [r.tokens for r in measured if r.status == "ok" and r.tokens is not None]
    summary = token_summary(tokens, seed=seed)
    cv = coefficient_of_variation(qualities)
    act_rate = activated / len(should) if should else None
    fail_rate = failed / len(measured) if measured else None
    eff = summary.efficiency_norm if summary else None
    score, dropped = mc_score(act_rate, cv, fail_rate, eff)
    n = len(measured)
    return MCFigures(
        n_runs=n,
        n_should=len(should),
        n_activated=activated,
        activation_rate=act_rate,
        activation_ci=wilson_bounds(activated, len(should)),
        n_should_not=len(should_not),
        false_activations=false_act,
        false_activation_rate=false_act / len(should_not) if should_not else None,
        false_activation_ci=wilson_bounds(false_act, len(should_not)),
        n_failed=failed,
        failure_rate=fail_rate,
        failure_ci=clopper_pearson(failed, n) if n else None,
        statuses=statuses,
        qualities=qualities,
        quality_unjudged=len(graded) - len(qualities),
        mean_quality=statistics.fmean(qualities) if qualities else None,
        quality_ci=bootstrap_ci(qualities, seed=seed),
        cv=cv,
        tokens=None if summary is None else {
            "median": summary.median, "q1": summary.q1, "q3": summary.q3, "iqr": summary.iqr,
            "outliers": summary.outliers, "runs": summary.n},
        efficiency_norm=eff,
        efficiency_ci=None if summary is None else summary.efficiency_ci,
        mc_score=score,
        mc_dropped=dropped,
        excluded=excluded,
    )


@dataclass
class MCLayer:
    """The Monte Carlo layer of one skill: where the runs came from, figures, cost."""

    source: str  # "cli" | "week"
    runs: list[SimRun] = field(default_factory=list)
    figures: MCFigures | None = None
    cost: LayerCost = field(default_factory=LayerCost)
    prompt_sources: list[str] = field(default_factory=list)
    planned: int = 0
    notes: list[str] = field(default_factory=list)
    unscored: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def scored(self) -> bool:
        """The runs measured at least one dimension."""
        return self.unscored is None and self.figures is not None and bool(
            self.figures.dimension_scores())

    @property
    def unscored_reason(self) -> str | None:
        """Why the layer produced no score."""
        if self.scored:
            return None
        return self.unscored or "no run measured any dimension"

    def to_json(self) -> dict[str, Any]:
        """The ``monte_carlo`` entry of the report's ``layers``."""
        f = self.figures
        return {
            "layer": "monte_carlo",
            "source": self.source,
            "scored": self.scored,
            "unscored_reason": self.unscored_reason,
            "planned_runs": self.planned,
            "prompt_sources": self.prompt_sources,
            "score": None if f is None or f.mc_score is None else round(f.mc_score, 4),
            "scores": {} if f is None else {k: round(v, 4)
                                            for k, v in f.dimension_scores().items()},
            "ci95": {} if f is None else {k: None if v is None else [round(v[0], 4),
                                                                     round(v[1], 4)]
                                          for k, v in f.intervals().items()},
            "figures": None if f is None else f.to_json(),
            "notes": self.notes,
            **self.detail,
            "cost": self.cost.to_json(),
        }


# ---------------------------------------------------------------------------------------------
# Running through the real CLI


@dataclass(frozen=True)
class MCConfig:
    """How the CLI runs are made."""

    agent: AgentConfig  # claude path, skills root, tools, turns, timeout, env
    model_id: str
    runs: int = DEFAULT_RUNS
    per_run_budget_usd: float = 2.0
    #: The circuit breaker: after this many runs in a row fail with the same outage (API
    #: unreachable, key refused, model not found) the rest are not started; 0 turns it off.
    breaker: int = DEFAULT_THRESHOLD


def _tokens(usage: Any) -> int | None:
    if not isinstance(usage, dict):
        return None
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
            "output_tokens")
    vals = [usage.get(k) for k in keys]
    if all(v is None for v in vals):
        return None
    return sum(int(v) for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool))


def _record(path: Path) -> SimRun | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return SimRun(**data)
    except (OSError, ValueError, TypeError):
        return None


def run_monte_carlo(
    skill: SkillFile,
    prompts: Sequence[MCPrompt],
    cfg: MCConfig,
    runner_factory: Callable[[], Runner],
    client: SkillJudgeClient | None,
    *,
    budget: Budget,
    store: Store,
    skill_hash: str,
    progress: Callable[[str], None] | None = None,
) -> MCLayer:
    """Run (or reuse) the scheduled prompts through the real CLI and judge the answers."""
    from pytest_skilllift.run.engine import classify
    from pytest_skilllift.trace.agent_streams import parse_run
    from pytest_skilllift.trace.transcript import extract_signals
    from pytest_skilllift.week.files import STDOUT_FILE as STDOUT_NAME

    layer = MCLayer(source="cli", planned=cfg.runs)
    layer.prompt_sources = sorted({p.source for p in prompts if p.source})
    plan = schedule(prompts, cfg.runs)
    if len(prompts) > cfg.runs:
        layer.notes.append(f"{len(prompts) - cfg.runs} of {len(prompts)} prompts not run "
                           f"(--mc-runs {cfg.runs})")
    if store.root is None:
        raise ValueError("Monte Carlo runs need an output directory (--out)")
    base = store.root / "mc" / skill_hash / slug(cfg.model_id)
    leaf = f"{skill.rel_id}/SKILL.md"
    runner = None
    runs: list[SimRun] = []
    causes: list[str] = []  # each run made now: its outage, "" for none (the breaker's input)
    try:
        for i, mp in enumerate(plan, 1):
            run_dir = base / f"run-{i:03d}"
            rec_path = run_dir / "record.json"
            rec = _record(rec_path)
            if rec is not None and rec.prompt == mp.text and rec.status != HARNESS_ERROR:
                layer.cost.reused += 1
            else:
                if budget.exhausted():
                    layer.cost.not_run_spend_cap += len(plan) - i + 1
                    layer.notes.append(f"runs {i}-{len(plan)} not run: --max-spend reached")
                    break
                if progress:
                    progress(f"monte carlo: run {i}/{len(plan)}")
                if runner is None:
                    try:
                        runner = runner_factory()
                    except Exception as exc:  # docker engine down, image missing, ...
                        layer.unscored = f"the runner could not start: {exc}"
                        break
                spec = RunSpec(
                    prompt=PromptSpec(path=Path(mp.source or "mc-prompts"), name=f"mc-{i:03d}",
                                      product_area="monte-carlo", prompt=mp.text,
                                      rubric=tuple(RubricItem("must", t, k) for k, t in
                                                   enumerate(mp.rubric, 1)),
                                      skill_path=leaf),
                    model_label="mc", model_id=cfg.model_id, condition="with-skill", rep=i,
                    run_id=f"run-{i:03d}")
                remaining = budget.remaining()
                per_run = cfg.per_run_budget_usd if remaining is None else max(
                    0.01, min(cfg.per_run_budget_usd, remaining))
                agent = replace(cfg.agent, skills_root=skill.root, max_budget_usd=per_run)
                outcome = runner.run(spec, agent, run_dir)
                causes.append(outcome.outage)
                tr = parse_run(spec, run_dir / STDOUT_NAME, cli_version=outcome.cli_version,
                               skills_root=skill.root)  # any agent (docs/agents.md)
                sig = extract_signals(tr, family=skill.family, leaf=leaf, site_host=None,
                                      leaf_names=(skill.name,) if skill.name else ())
                if outcome.error and not outcome.timed_out:
                    status, reason = HARNESS_ERROR, outcome.error
                else:
                    status, reason = classify(spec, outcome, sig.skill_available, sig.budget_hit,
                                              sig.is_error, sig.final_answer, sig.result_subtype)
                    if sig.budget_hit and per_run < cfg.per_run_budget_usd:
                        # Cut short by what was left of --max-spend, not by the skill.
                        status = HARNESS_ERROR
                        reason = (f"budget-capped at ${per_run:.2f}, what was left of "
                                  "--max-spend: not a measurement")
                usage = (tr.result or {}).get("usage")
                cost = sig.total_cost_usd
                rec = SimRun(index=i, prompt=mp.text, should_trigger=mp.should_trigger,
                             status=status, reason=reason,
                             activated=sig.skill_activation != "none",
                             activation=sig.skill_activation, tokens=_tokens(usage),
                             cost_usd=cost)
                if cost is not None:
                    layer.cost.calls += 1
                    layer.cost.usd += cost
                    budget.charge(cost)
                    layer.cost.input_tokens += (rec.tokens or 0) - _out_tokens(usage)
                    layer.cost.output_tokens += _out_tokens(usage)
                _save(rec_path, rec)
                (run_dir / "answer.txt").write_text(sig.final_answer, encoding="utf-8")
            if rec.wants_quality and rec.quality is None:
                rec = _judge_quality(rec, mp, run_dir, client, budget, layer)
                _save(rec_path, rec)
            runs.append(rec)
            cause = streak_cause(causes, cfg.breaker)
            if cause is not None and i < len(plan):
                # Each further run would spend its time failing the same way; a rerun
                # (the results kept in --out) makes them once the API is back.
                layer.cost.not_run_outage += len(plan) - i
                layer.notes.append(f"runs {i + 1}-{len(plan)} not run: {cause} (the last "
                                   f"{cfg.breaker} runs failed with it: the circuit breaker; "
                                   "run the command again to make them)")
                break
    finally:
        if runner is not None:
            runner.close()
    layer.runs = runs
    layer.figures = figures(runs)
    if not runs and layer.unscored is None:
        layer.unscored = "no Monte Carlo run was made" + (
            " (--max-spend reached)" if layer.cost.not_run_spend_cap else "")
    return layer


def _out_tokens(usage: Any) -> int:
    if isinstance(usage, dict) and isinstance(usage.get("output_tokens"), int):
        return int(usage["output_tokens"])
    return 0


def _save(path: Path, rec: SimRun) -> None:
    from pytest_skilllift.week.files import atomic_write_json

    atomic_write_json(path, asdict(rec))


def _judge_quality(rec: SimRun, mp: MCPrompt, run_dir: Path, client: SkillJudgeClient | None,
                   budget: Budget, layer: MCLayer) -> SimRun:
    if client is None:
        return replace(rec, quality_error="no judge configured")
    if budget.exhausted():
        layer.cost.not_run_spend_cap += 1
        return replace(rec, quality_error="not judged: --max-spend reached")
    try:
        answer = (run_dir / "answer.txt").read_text(encoding="utf-8")
    except OSError as exc:
        return replace(rec, quality_error=f"answer unreadable: {exc}")
    reply = client.call_tool(quality_request(mp.text, answer, mp.rubric), QUALITY_TOOL)
    layer.cost.add_usage(reply.usage, reply.cost_usd)
    budget.charge(reply.cost_usd)
    if reply.payload is None:
        return replace(rec, quality_error=f"unusable judge reply: {reply.error}")
    try:
        return replace(rec, quality=parse_quality(reply.payload), quality_error=None)
    except SkillJudgeReplyError as exc:
        return replace(rec, quality_error=f"unusable judge reply: {exc}")


# ---------------------------------------------------------------------------------------------
# From a week directory (no spend)


def runs_from_week(week_dir: Path, family: str) -> tuple[list[SimRun], list[str]]:
    """The family's with-skill runs of a week as Monte Carlo runs, and problems met.

    Status, activation and the per-run must coverage (the judged quality) come from
    ``manifest.csv`` and ``scores.csv``; tokens from ``<run_id>/stdout.txt`` when the run
    directory holds the transcript. Every run's prompt targets the family, so all should
    trigger.
    """
    import numpy as np

    from pytest_skilllift.trace.transcript import parse_transcript
    from pytest_skilllift.week.columns import ACTIVATIONS
    from pytest_skilllift.week.files import RUN_STATUSES
    from pytest_skilllift.week.tables import load_week

    week = load_week(Path(week_dir))
    problems = [str(p) for p in week.problems]
    if not week.manifest.present:
        return [], [*problems, f"{week_dir}: no manifest.csv (the runs of the week)"]
    fam_rows = [
        i for i in range(week.n_runs)
        if week.manifest.cond[i] == 1 and week.manifest.prompt[i] >= 0
        and week.prompt_family.get(week.prompts[week.manifest.prompt[i]]) == family
    ]
    must = 0
    run_ids = week.run_ids(fam_rows)
    out: list[SimRun] = []
    for k, row in enumerate(fam_rows):
        sel = (week.scores.run == row) & (week.scores.type == must) & ~np.isnan(week.scores.credit)
        cov = float(week.scores.credit[sel].mean()) if sel.any() else None
        act_code = int(week.manifest.activation[row])
        activation = ACTIVATIONS[act_code] if 0 <= act_code < len(ACTIVATIONS) else "none"
        status = RUN_STATUSES[int(week.manifest.status[row])]
        rid = run_ids[k] if k < len(run_ids) else ""
        tokens = None
        cost = week.manifest.num.get("total_cost_usd")
        cost_v = None if cost is None or math.isnan(cost[row]) else float(cost[row])
        if rid and rid in week.run_dirs:
            tr = parse_transcript(week.week_dir / rid / "stdout.txt")
            tokens = _tokens((tr.result or {}).get("usage"))
        out.append(SimRun(index=k + 1, prompt=week.prompts[week.manifest.prompt[row]],
                          should_trigger=True, status=status,
                          activated=activation != "none", activation=activation,
                          tokens=tokens, cost_usd=cost_v,
                          quality=cov if activation != "none" and status == "ok" else None))
    return out, problems


def week_layer(week_dir: Path, family: str) -> MCLayer:
    """The Monte Carlo layer from a week's measured runs (no new runs, no spend)."""
    runs, problems = runs_from_week(week_dir, family)
    layer = MCLayer(source="week", runs=runs, planned=len(runs))
    layer.detail = {"week": str(week_dir)}
    layer.prompt_sources = [str(week_dir)]
    layer.notes += problems[:10]
    if len(problems) > 10:
        layer.notes.append(f"... and {len(problems) - 10} more problems in the week's files")
    if not runs:
        layer.unscored = f"no with-skill runs of family {family!r} in {week_dir}"
        return layer
    layer.figures = figures(runs)
    layer.notes.append("judged quality = the run's must coverage (share of must items met)")
    if layer.figures.tokens is None:
        layer.notes.append("no run transcript with token usage in the week directory: token "
                           "efficiency unmeasured")
    return layer
