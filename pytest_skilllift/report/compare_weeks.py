"""``skilllift compare WEEK_A WEEK_B``: what changed between two weeks, and is it real?

The comparison semantics of the Drupal ai_eval scoring document (Comparing two runs), on this
project's week directories, plus the significance answer that document does not give:

* **kind**, from the two ``week.json``: ``direct`` when the prompts and their rubrics, the
  judge (model, prompt version, samples per run, evidence policy, a ``skill_lift_judge``
  override), the gates and the pass threshold match — models, CLI
  version, skills (and the rest of the agent's settings) may differ: they are what a comparison
  examines; ``side-by-side`` naming each deciding condition that differs (or a week whose runs
  drifted: more than one CLI version or model snapshot inside it); ``inspection only`` when
  either week has no ``week.json``;
* **per prompt and model**: ``improved`` / ``regressed`` / ``within rep noise`` /
  ``unchanged`` from the prompt's must lift (with − no-skill, qdrant/skills SCORING.md's
  headline) beyond a margin *and* beyond its own rep noise (``stats.regression_alarm``: a
  moderated t test on its reps with a binomial variance floor); the with-skill composite
  level gets the same labels as ``level_change``; each rep scored on its graded items and
  one without a graded must item dropped (``report.verdicts``' one rule for an ungraded
  item); a pair where either side has no scored rep is ``unscored``, never an improvement
  or a regression;
* **the regression alarm** (``--fail-on-regression``, on the lift): per model the week-level
  paired test at α/2, the prompts in one Holm family at α/2 plus the share of each
  week-level test that rejected (family-wise α 0.05); ``--fail-on-level-regression`` is the
  same alarm on the with-skill composite level (a drift that lowers both arms). Their
  false-alarm rate and power are measured in ``tests/test_report_regression_alarm.py`` and
  ``benchmarks/bench_regression_alarm.py``;
* **per model**: the change in lift with a paired t test over the prompts present in both weeks
  (difference, SE, t interval, p) next to the methodology's don't-act rule
  max(t·SE_Δ, between-week σ) (qdrant/skills SCORING.md, Reading Week-Over-Week Movement; σ
  over the comparable runs of the history only), both of its parts shown, one sentence that
  reconciles the two, and the prompts whose own lift moved most.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from pytest_skilllift.model import DEFAULT_PASS_THRESHOLD, WITH_SKILL, arm_code
from pytest_skilllift.report import stats
from pytest_skilllift.report.verdicts import (
    CHANGE_MARGIN,
    CHANGES,
    IMPROVED,
    REGRESSED,
    UNCHANGED,
    UNSCORED,
    WITHIN_REP_NOISE,
    PairedTest,
    WeekMeasures,
    paired_test,
    prompt_change,
)
from pytest_skilllift.week import history as hist
from pytest_skilllift.week import identity as ident
from pytest_skilllift.week.files import HISTORY_CSV

DIRECT, SIDE_BY_SIDE, INSPECTION = "direct", "side-by-side", "inspection only"
__all__ = ["CHANGES", "IMPROVED", "REGRESSED", "UNCHANGED", "UNSCORED", "WITHIN_REP_NOISE",
           "compare", "render_text", "run"]
#: The paired test's two-sided level in the one-sentence reading.
PAIRED_ALPHA = 0.05
#: Identity fields whose difference makes a comparison side-by-side (everything else is what
#: a comparison examines: models, CLI version, skills, the agent's settings).
DECIDING_FIELDS = frozenset({"prompt", "rubric", "judge_model", "judge_prompt_version",
                             "judge_samples", "evidence", "judge_mask"})
DEFAULT_MARGIN = CHANGE_MARGIN
#: Between-week σ needs this many runs of history before week B.
MIN_PRIOR_RUNS = 3
#: Per-prompt lift movers shown per model in the text (JSON has all; the count is stated).
MAX_MOVERS = 10


class CompareError(ValueError):
    """Two weeks that cannot be compared (an unreadable week.json)."""


@dataclass
class _Week:
    path: Path
    summary: Any
    record: ident.WeekRecord | None
    measures: WeekMeasures

    def __post_init__(self) -> None:
        self.prompt_index = {p: i for i, p in enumerate(self.summary.week.prompts)}
        self.model_index = {m: i for i, m in enumerate(self.summary.week.models)}


def _load(path: Path) -> _Week:
    from pytest_skilllift.report.summarize import summarize_week

    try:
        record = ident.read_week_record(path)
    except ident.WeekFileError as exc:
        raise CompareError(str(exc)) from None
    s = summarize_week(path, write=False, plots=False)
    threshold = float(s.data.get("pass_threshold", DEFAULT_PASS_THRESHOLD))
    return _Week(path, s, record, WeekMeasures(s.week, s.aggregates, threshold, card=s.data))


def comparison_kind(a: ident.WeekRecord | None, b: ident.WeekRecord | None,
                    drift: dict[str, list[str]] | None = None
                    ) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """(kind, deciding differences, examined differences) of two weeks' records."""
    if a is None or b is None:
        return INSPECTION, [], []
    diffs = ident.differences(a.identity, b.identity)
    deciding = [d.to_json() for d in diffs if d.field in DECIDING_FIELDS]
    examined = [d.to_json() for d in diffs if d.field not in DECIDING_FIELDS]
    for name, before, after in (("pass_threshold", a.pass_threshold, b.pass_threshold),
                                ("gates", list(a.gates), list(b.gates)),
                                ("judge_overrides", sorted(a.judge_overrides),
                                 sorted(b.judge_overrides))):
        if before != after:
            deciding.append({"field": name, "key": None, "kind": "changed", "before": before,
                             "after": after,
                             "text": f"{name.replace('_', ' ')}: {before!r} → {after!r}"})
    for week, problems in (drift or {}).items():
        for p in problems:
            deciding.append({"field": "drift", "key": week, "kind": "changed", "before": None,
                             "after": None, "text": f"week {week} drifted: {p}"})
    return (SIDE_BY_SIDE if deciding else DIRECT), deciding, examined


def _prompt_value(w: _Week, prompt: str, model: str, arm: int = 1) -> float | None:
    """The prompt's composite in ``arm`` (its code; with-skill by default), its scored reps
    averaged; None when no rep of it was scored."""
    agg = w.summary.aggregates
    pi, mi = w.prompt_index.get(prompt), w.model_index.get(model)
    if agg is None or pi is None or mi is None or arm >= agg.composite.shape[2]:
        return None
    v = float(agg.composite[pi, mi, arm])
    return v if math.isfinite(v) else None


def _lifts(w: _Week, model: str) -> dict[str, float]:
    agg = w.summary.aggregates
    if agg is None or model not in w.summary.week.models:
        return {}
    mi = w.summary.week.models.index(model)
    d = agg.must[:, mi, 1] - agg.must[:, mi, 0]
    return {p: float(d[i]) for i, p in enumerate(w.summary.week.prompts) if math.isfinite(d[i])}


def _rep_scores(w: _Week, prompts: list[str], models: list[str], reps: int,
                arms: tuple[int, ...], level: str = "composite") -> np.ndarray:
    """(M, P, C, R) rep scores of the week in ``arms`` (codes), ``level`` ``"composite"`` or
    ``"must"``, each rep on its graded items; NaN: a rep without a graded must item
    (dropped), or absent."""
    out = np.full((len(models), len(prompts), len(arms), reps), np.nan)
    agg = w.summary.aggregates
    if agg is None or max(arms) >= agg.rep_composite.shape[2]:
        return out
    src = agg.rep_must if level == "must" else agg.rep_composite
    r = src.shape[-1]
    for mi, m in enumerate(models):
        wm = w.model_index.get(m)
        if wm is None:
            continue
        for pi, p in enumerate(prompts):
            wp = w.prompt_index.get(p)
            if wp is None:
                continue
            for ci, a in enumerate(arms):
                out[mi, pi, ci, :r] = src[wp, wm, a, :]
    return out


def _must_items(weeks: tuple[_Week, ...], prompts: list[str]) -> np.ndarray:
    """Must items per rep of each prompt (the most either week's runs have)."""
    out = np.zeros(len(prompts))
    for w in weeks:
        sc = w.summary.week.scores
        per = stats.must_items(sc.prompt, sc.model, sc.cond, sc.rep, sc.type,
                               len(w.summary.week.prompts))
        for pi, p in enumerate(prompts):
            wp = w.prompt_index.get(p)
            if wp is not None:
                out[pi] = max(out[pi], per[wp])
    return out


def _prompt_lift(w: _Week, prompt: str, model: str, arm: int) -> float | None:
    """The prompt's must lift (``arm`` − no-skill, scored reps averaged); None when either
    arm has no scored rep."""
    agg = w.summary.aggregates
    pi, mi = w.prompt_index.get(prompt), w.model_index.get(model)
    if agg is None or pi is None or mi is None or arm >= agg.must.shape[2]:
        return None
    v = float(agg.must[pi, mi, arm] - agg.must[pi, mi, 0])
    return v if math.isfinite(v) else None


def _reps_of(w: _Week) -> int:
    agg = w.summary.aggregates
    return 1 if agg is None else int(agg.rep_composite.shape[-1])


def compare(a: Path, b: Path, *, margin: float = DEFAULT_MARGIN,
            arm: str = WITH_SKILL) -> dict[str, Any]:
    """The comparison of week ``a`` (before) with week ``b`` (after), as a JSON-able dict;
    per prompt in ``arm`` (with-skill, or with-skill@REF: an earlier revision's drift)."""
    code = arm_code(arm)
    if code < 0:
        raise CompareError(f"--arm {arm!r}: use with-skill, with-all or with-skill@REF")
    wa, wb = _load(Path(a)), _load(Path(b))
    drift = {w.path.name: w.summary.data.get("provenance", {}).get("mismatches", [])
             for w in (wa, wb) if w.summary.data.get("provenance", {}).get("mismatches")}
    kind, deciding, examined = comparison_kind(wa.record, wb.record, drift)
    order = list(dict.fromkeys(list(wa.summary.week.models) + list(wb.summary.week.models)))
    prompts = sorted(set(wa.summary.week.prompts) | set(wb.summary.week.prompts))
    reps = max(_reps_of(wa), _reps_of(wb))
    items = _must_items((wa, wb), prompts)
    # The alarm watches the per-prompt must lift (qdrant/skills SCORING.md's headline); the
    # with-skill composite level (SCORING.md keeps it for trends and ranking) is its own alarm.
    alarm = stats.regression_alarm(_rep_scores(wa, prompts, order, reps, (0, code), "must"),
                                   _rep_scores(wb, prompts, order, reps, (0, code), "must"),
                                   weights=stats.LIFT_WEIGHTS, n_items=items)
    level = stats.regression_alarm(_rep_scores(wa, prompts, order, reps, (code,)),
                                   _rep_scores(wb, prompts, order, reps, (code,)),
                                   weights=stats.LEVEL_WEIGHTS, n_items=items)
    rows: list[dict[str, Any]] = []
    counts = {m: dict.fromkeys(CHANGES, 0) for m in order}
    level_counts = {m: dict.fromkeys(CHANGES, 0) for m in order}
    for pi, p in enumerate(prompts):
        for mi, m in enumerate(order):
            before, after = _prompt_lift(wa, p, m, code), _prompt_lift(wb, p, m, code)
            lv_a, lv_b = _prompt_value(wa, p, m, code), _prompt_value(wb, p, m, code)
            t = alarm.prompts[mi]
            change = prompt_change(before, after, margin, bool(alarm.regressed[mi, pi]),
                                   bool(alarm.improved[mi, pi]))
            level_change = prompt_change(lv_a, lv_b, margin, bool(level.regressed[mi, pi]),
                                         bool(level.improved[mi, pi]))
            counts[m][change] += 1
            level_counts[m][level_change] += 1
            rows.append({"prompt": p, "model": m, "change": change, "before": before,
                         "after": after, "k_before": int(t.k_before[pi]),
                         "k_after": int(t.k_after[pi]), "se": _finite(t.se[pi]),
                         "p_drop_adjusted": _finite(alarm.drop_p_adj[mi, pi]),
                         "p_rise_adjusted": _finite(alarm.rise_p_adj[mi, pi]),
                         "level_change": level_change, "level_before": lv_a,
                         "level_after": lv_b,
                         "level_p_drop_adjusted": _finite(level.drop_p_adj[mi, pi])})
    try:
        history = hist.read_history(Path(b).parent / HISTORY_CSV)
        history_problem = None
    except hist.HistoryError as exc:
        history, history_problem = [], str(exc)
    pool = hist.pool_decisions(history, Path(b).name, Path(b).parent)
    pooled = {d.run_key for d in pool if d.pooled}
    models: dict[str, Any] = {}
    for mi, m in enumerate(order):
        ma = wa.summary.data.get("models", {}).get(m, {})
        mb = wb.summary.data.get("models", {}).get(m, {})
        la, lb = _lifts(wa, m), _lifts(wb, m)
        common = sorted(set(la) & set(lb))
        test = paired_test(np.array([la[p] for p in common]), np.array([lb[p] for p in common]))
        lift_a, lift_b = ma.get("must_lift"), mb.get("must_lift")
        delta = None if lift_a is None or lift_b is None else lift_b - lift_a
        within = None
        if ma.get("must_lift_se") is not None and mb.get("must_lift_se") is not None:
            se_d = math.sqrt(ma["must_lift_se"] ** 2 + mb["must_lift_se"] ** 2)
            within = stats.t_quantile(int(mb["n_prompts"]) - 1) * se_d
        prior = [x for _, x, _ in hist.prior_runs(history, Path(b).name, m, pooled=pooled)
                 if x is not None]
        between = float(np.std(prior, ddof=1)) if len(prior) >= MIN_PRIOR_RUNS else None
        cands = [x for x in (within, between) if x is not None]
        threshold = max(cands) if cands else None
        moved = sorted((p for p in common if abs(lb[p] - la[p]) > DEFAULT_MARGIN),
                       key=lambda p: (-abs(lb[p] - la[p]), p))
        movers = [{"prompt": p, "lift_a": la[p], "lift_b": lb[p], "delta": lb[p] - la[p]}
                  for p in moved]
        clears = None if delta is None or threshold is None else abs(delta) > threshold
        models[m] = {
            "lift_a": lift_a, "lift_b": lift_b, "delta": delta,
            "paired": test.to_json(),
            "noise_threshold": {"within": within, "between": between, "threshold": threshold,
                                "clears": clears},
            "reading": movement_reading(len(common), len(moved), test, clears),
            "week_test": _week_test(alarm, mi),
            "level_week_test": _week_test(level, mi),
            "level_prompts": level_counts[m],
            "rep_noise": {"variance": alarm.prompts[mi].rep_var,
                          "df": alarm.prompts[mi].rep_df},
            "prompts": counts[m],
            "lift_movers": {"in_both": len(common), "only_one_week": len(set(la) ^ set(lb)),
                            "moved": movers},
        }
    return {
        "a": str(a), "b": str(b), "comparison": kind, "differences": deciding,
        "examined": examined,
        "without_week_json": [str(w.path) for w in (wa, wb) if w.record is None],
        "margin": margin, "arm": arm,
        "arms": {str(w.path): w.summary.week.ref_condition for w in (wa, wb)
                 if w.summary.week.ref_condition},
        "regression_alarm": _alarm_json(alarm),
        "level_alarm": _alarm_json(level),
        "prompts": rows, "models": models,
        "pooled_runs": [{"run_key": d.run_key, "reason": d.reason} for d in pool if d.pooled],
        "not_pooled_runs": [{"run_key": d.run_key, "reason": d.reason} for d in pool
                            if not d.pooled],
        "problems": {str(w.path): w.summary.problems for w in (wa, wb) if w.summary.problems},
        "history_problem": history_problem,
    }


def _week_test(alarm: stats.RegressionAlarm, mi: int) -> dict[str, Any]:
    return {"n_prompts": alarm.week_n[mi], "delta": alarm.week_delta[mi],
            "p_drop": alarm.week_p[mi], "p_drop_adjusted": alarm.week_p_adj[mi],
            "regressed": alarm.week_regressed[mi]}


def _alarm_json(alarm: stats.RegressionAlarm) -> dict[str, Any]:
    return {"alarm": alarm.alarm, "watches": alarm.watches, "alpha": alarm.alpha,
            "alpha_week": alarm.alpha_week, "alpha_prompts": alarm.alpha_prompts,
            "method": alarm.method, "correction": "split-alpha-holm",
            "tested_prompts": int(np.count_nonzero(~np.isnan(alarm.drop_p_adj)))}


def _finite(x: float) -> float | None:
    v = float(x)
    return v if math.isfinite(v) else None


def movement_reading(n_common: int, n_moved: int, test: PairedTest,
                     clears: bool | None) -> str:
    """One sentence reconciling the don't-act rule with the paired test (never a bare
    contradiction), or why there is nothing to read."""
    if n_common == 0:
        return "nothing to compare: no prompt has a lift in both weeks"
    if n_moved == 0:
        return ("identical per-prompt lifts: nothing moved, so the paired test has no spread; "
                "the rule's threshold still adds both weeks' own SEs, because it does not use "
                "the pairing")
    p = test.p_value
    sig = p is not None and p <= PAIRED_ALPHA
    if clears is None:
        rule = "the don't-act rule cannot be computed (a week has no SE)"
        return rule + ("" if p is None else f"; the paired test gives p = {p:.3g}")
    if clears and sig:
        return "both agree: the move clears the don't-act rule and the paired test"
    if clears:
        return ("the move clears the don't-act rule but the paired test over the same prompts "
                f"does not (p = {p:.3g}): prompts moved both ways, read it with care")
    if sig:
        return (f"the paired test finds a change (p = {p:.3g}) that the don't-act rule calls "
                "noise: the rule's t·SE_Δ part treats the two weeks as independent samples (it "
                "ignores that the same prompts were measured twice), so that part is "
                "conservative for sampling noise — act only when the rule clears")
    return "both agree: within noise (neither the rule nor the paired test finds a change)"


# --------------------------------------------------------------------------- rendering


def _f(x: float | None, nd: int = 3, sign: bool = False) -> str:
    if x is None:
        return "n/a"
    return f"{x:+.{nd}f}" if sign else f"{x:.{nd}f}"


def render_text(result: dict[str, Any]) -> str:
    """The comparison as markdown (readable raw in a terminal)."""
    from pytest_skilllift.report.markdown import md_table

    a, b = Path(result["a"]).name, Path(result["b"]).name
    L = [f"# Week comparison — {a} → {b}\n"]
    kind = result["comparison"]
    if kind == DIRECT:
        L.append("**direct comparison**: same prompts and rubrics, judge, gates and pass "
                 "threshold; what differs below is what the comparison examines.\n")
    elif kind == SIDE_BY_SIDE:
        L.append(f"**side-by-side**: {len(result['differences'])} deciding condition(s) "
                 "differ, so a change below may come from them rather than from the models "
                 "or skills:\n")
        L += [f"- {d['text']}" for d in result["differences"]]
        L.append("")
    else:
        missing = result["without_week_json"]
        L.append("**inspection only**: " + " and ".join(missing)
                 + (" have" if len(missing) > 1 else " has") + " no week.json (a week from "
                 "the qdrant pipeline or from before week identities), so whether the two "
                 "were measured alike cannot be checked.\n")
    if result["examined"]:
        L.append("Examined (allowed to differ): " + "; ".join(
            d["text"] for d in result["examined"][:20])
                 + (f"; … {len(result['examined']) - 20} more" if len(result["examined"]) > 20
                    else "") + "\n")
    for week, problems in result["problems"].items():
        L.append(f"- ⚠ {Path(week).name} has {len(problems)} input problem(s), first: "
                 f"{problems[0]}")
    if result.get("history_problem"):
        L.append(f"- ⚠ history not used: {result['history_problem']}")

    L.append("## Lift per model (must_coverage, with-skill − no-skill)\n")
    rows = []
    for m, v in result["models"].items():
        t = v["paired"]
        ci = (f"[{_f(t['ci_low'], sign=True)}, {_f(t['ci_high'], sign=True)}]"
              if t["ci_low"] is not None else "n/a")
        p = "n/a" if t["p_value"] is None else f"{t['p_value']:.3g}"
        nt = v["noise_threshold"]
        clears = "n/a" if nt["clears"] is None else ("yes" if nt["clears"] else "no")
        if not v["lift_movers"]["in_both"]:
            clears = "nothing to compare"
        elif not v["lift_movers"]["moved"]:
            clears = "no — identical lifts"
        rows.append([m, _f(v["lift_a"]), _f(v["lift_b"]), _f(v["delta"], sign=True),
                     f"{_f(t['difference'], sign=True)} ± {_f(t['se'])} (n={t['n_prompts']})",
                     ci, p, _f(nt["within"]), _f(nt["between"]), _f(nt["threshold"]), clears])
    if rows:
        L += md_table(["model", f"lift {a}", f"lift {b}", "Δ", "paired Δ ± SE", "95% CI (t)",
                       "p", "t·SE_Δ (within)", "σ (between)", "don't-act threshold",
                       "clears the rule?"], rows)
        L.append("")
        L += [f"- {m}: {v['reading']}" for m, v in result["models"].items()]
    else:
        L.append("_No model is in either week._")
    L.append("\n_Paired Δ: the mean change of the per-prompt lift over the prompts scored in "
             "both weeks, with its t interval and two-sided p. The don't-act rule "
             "(qdrant/skills SCORING.md) is max(t·SE_Δ, between-week σ) with SE_Δ = "
             "√(SE_a² + SE_b²): its t·SE_Δ part treats the weeks as independent samples, so "
             "it is conservative for sampling noise, but not for drift between weeks: with a "
             "drift of 2 SE, 34% of weeks without a change clear the rule (σ from 3 runs; "
             "benchmarks/bench_week_over_week.py). The paired test uses that the same prompts "
             "were measured twice. Act on a move only when it clears the rule._\n")
    if any(v["noise_threshold"]["between"] is None for v in result["models"].values()):
        L.append(f"_σ (between) needs at least {MIN_PRIOR_RUNS} comparable runs before {b} in "
                 f"{HISTORY_CSV}; until then the threshold is the within-week part only, and "
                 "small deltas should be read as noise._\n")
    if result.get("pooled_runs") or result.get("not_pooled_runs"):
        keys = ", ".join(f"`{r['run_key']}`" for r in result.get("pooled_runs", [])) or "none"
        L.append(f"- σ (between) pools: {keys}")
        L += [f"- not pooled: `{r['run_key']}` — {r['reason']}"
              for r in result.get("not_pooled_runs", [])]
        L.append("")
    L += _alarm_lines(result)

    arm = result.get("arm", WITH_SKILL)
    L.append(f"## Per prompt (must lift, {arm} − no-skill, margin {result['margin']:g})\n")
    for week, ref in (result.get("arms") or {}).items():
        L.append(f"- {week}: its with-skill@REF arm is `{ref}`")
    for m, v in result["models"].items():
        c = v["prompts"]
        L.append(f"- {m}: {c[IMPROVED]} improved, {c[REGRESSED]} regressed, "
                 f"{c[WITHIN_REP_NOISE]} within rep noise, {c[UNCHANGED]} unchanged, "
                 f"{c[UNSCORED]} unscored")
        lc = v.get("level_prompts")
        if lc:
            L.append(f"  - {arm} composite level: {lc[IMPROVED]} improved, {lc[REGRESSED]} "
                     f"regressed, {lc[WITHIN_REP_NOISE]} within rep noise (the level alarm, "
                     "`--fail-on-level-regression`)")
    L.append("")
    for change in (REGRESSED, IMPROVED):
        moved = [r for r in result["prompts"] if r["change"] == change]
        if not moved:
            continue
        moved.sort(key=lambda r: (-abs(r["after"] - r["before"]), r["prompt"], r["model"]))
        key = "p_drop_adjusted" if change == REGRESSED else "p_rise_adjusted"
        L.append(f"### {change.capitalize()}\n")
        L += md_table(["prompt", "model", f"lift {a}", f"lift {b}", "Δ", "reps (k)",
                       "p (adjusted)"],
                      [[r["prompt"], r["model"], _f(r["before"], sign=True),
                        _f(r["after"], sign=True),
                        _f(r["after"] - r["before"], sign=True),
                        f"{r['k_before']} → {r['k_after']}", _p(r[key])] for r in moved])
        L.append("")
    L.append("_A prompt is improved or regressed only when its lift moved beyond its own rep "
             "noise after the multiplicity correction; a move that is not is **within rep "
             "noise** (always so with one rep on each side, and with two reps on each side "
             "for a single prompt: benchmarks/README.md). unscored: the prompt has no "
             f"{arm} or no-skill score in one of the weeks, or one of its items could not be "
             "graded there — never counted as an improvement or a regression._\n")
    return "\n".join(L + _lift_movers(result, a, b)) + "\n"


def _p(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2g}"


def _alarm_lines(result: dict[str, Any]) -> list[str]:
    """The regression alarms: the week-level paired test first, then the prompts."""
    from pytest_skilllift.report.markdown import md_table

    al = result["regression_alarm"]
    L = ["## Regression alarm (`--fail-on-regression`: the per-prompt must lift)\n"]
    rows = []
    for m, v in result["models"].items():
        w, lw = v["week_test"], v.get("level_week_test") or {}
        rows.append([m, str(w["n_prompts"]), _f(w["delta"], sign=True), _p(w["p_drop"]),
                     _p(w["p_drop_adjusted"]), "yes" if w["regressed"] else "no",
                     str(v["prompts"][REGRESSED]), _f(lw.get("delta"), sign=True),
                     "yes" if lw.get("regressed") else "no",
                     str((v.get("level_prompts") or {}).get(REGRESSED, 0))])
    if rows:
        L += md_table(["model", "prompts in both", "week-level Δ lift", "p of a drop",
                       "p (adjusted)", "lift regressed?", "prompts' lift regressed",
                       "level Δ (with-skill composite)", "level regressed?",
                       "prompts' level regressed"], rows)
    verdict = "**regression found**" if regression_found(result) else "no regression found"
    level = ("; the with-skill level (`--fail-on-level-regression`): **regressed**"
             if regression_found(result, level=True) else "")
    L.append(f"\n{verdict}{level}. _{al['method']}. The week-level tests ran at "
             f"{al['alpha_week']:g}, the prompts at {al['alpha_prompts']:g}; "
             f"{al['tested_prompts']} (prompt, model) pairs had reps enough to test. The chance "
             f"that two weeks with no real change raise any alarm is at most {al['alpha']:g}, "
             "measured on resampled real weeks (benchmarks/bench_regression_alarm.py). The "
             "lift alarm watches with − no-skill, so a drift that lowers both arms is not a "
             "regression of the skill; the level alarm watches the with-skill composite._\n")
    return L


def _lift_movers(result: dict[str, Any], a: str, b: str) -> list[str]:
    """Per model, the prompts whose must lift moved most (the largest ``MAX_MOVERS``)."""
    from pytest_skilllift.report.markdown import md_table

    L = ["## Per-prompt lift movers (Δ of the prompt's must lift)\n"]
    for m, v in result["models"].items():
        lm = v["lift_movers"]
        moved = lm["moved"]
        L.append(f"### {m}\n")
        L.append(f"{len(moved)} of {lm['in_both']} prompts in both weeks moved"
                 + (f"; {lm['only_one_week']} prompt(s) have a lift in only one week"
                    if lm["only_one_week"] else "") + ".\n")
        if moved:
            shown = moved[:MAX_MOVERS]
            L += md_table(["prompt", f"lift {a}", f"lift {b}", "Δ"],
                          [[r["prompt"], _f(r["lift_a"], sign=True), _f(r["lift_b"], sign=True),
                            _f(r["delta"], sign=True)] for r in shown])
            if len(moved) > len(shown):
                L.append(f"\n_Showing the {len(shown)} largest of {len(moved)} movers "
                         "(all of them in --output json)._")
            L.append("")
    return L


def run(a: Path, b: Path, *, output: str = "text", margin: float = DEFAULT_MARGIN,
        fail_on_regression: bool = False, out: TextIO, arm: str = WITH_SKILL,
        fail_on_level_regression: bool = False) -> int:
    """``skilllift compare`` on two week directories: 0, or 1 with ``fail_on_regression``
    when the lift regressed (``fail_on_level_regression``: the with-skill level), 2 when the
    weeks cannot be read."""
    import sys

    if not margin >= 0:
        print(f"skilllift compare: --margin must be ≥ 0, got {margin}", file=sys.stderr)
        return 2
    try:
        result = compare(a, b, margin=margin, arm=arm)
    except CompareError as exc:
        print(f"skilllift compare: {exc}", file=sys.stderr)
        return 2
    if output == "json":
        json.dump(result, out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        out.write(render_text(result))
    failed = ((fail_on_regression and regression_found(result))
              or (fail_on_level_regression and regression_found(result, level=True)))
    return 1 if failed else 0


def regression_found(result: dict[str, Any], *, level: bool = False) -> bool:
    """Whether ``--fail-on-regression`` (the lift; ``level``: ``--fail-on-level-regression``,
    the with-skill composite) fails: a model's week-level drop, or a prompt's drop beyond
    its own rep noise, after the multiplicity correction (and beyond the margin)."""
    margin = result["margin"]
    key, change = ("level_week_test", "level_change") if level else ("week_test", "change")
    week = any(v[key]["regressed"] and (v[key]["delta"] or 0.0) < -margin
               for v in result["models"].values())
    return week or any(r[change] == REGRESSED for r in result["prompts"])
