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
* **per prompt and model**: ``improved`` / ``regressed`` / ``unchanged`` from the prompt's
  with-skill composite (reps averaged) beyond a margin; a pair where either side is unscored or
  errored is ``unscored``, never an improvement or a regression;
* **per model**: the change in lift with a paired t test over the prompts present in both weeks
  (difference, SE, t interval, p) next to the methodology's noise threshold
  max(t·SE_Δ, between-week σ) (qdrant/skills SCORING.md, Reading Week-Over-Week Movement),
  both of its parts shown; and the prompts whose own lift moved most.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from pytest_skilllift.model import DEFAULT_PASS_THRESHOLD
from pytest_skilllift.report import stats
from pytest_skilllift.report.verdicts import WeekMeasures, paired_test
from pytest_skilllift.week import history as hist
from pytest_skilllift.week import identity as ident
from pytest_skilllift.week.files import HISTORY_CSV

DIRECT, SIDE_BY_SIDE, INSPECTION = "direct", "side-by-side", "inspection only"
IMPROVED, REGRESSED, UNCHANGED, UNSCORED = "improved", "regressed", "unchanged", "unscored"
#: Identity fields whose difference makes a comparison side-by-side (everything else is what
#: a comparison examines: models, CLI version, skills, the agent's settings).
DECIDING_FIELDS = frozenset({"prompt", "rubric", "judge_model", "judge_prompt_version",
                             "judge_samples", "evidence"})
DEFAULT_MARGIN = 1e-9
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


def _prompt_value(w: _Week, prompt: str, model: str) -> float | None:
    """The prompt's with-skill composite (reps averaged), None when unscored or errored."""
    agg = w.summary.aggregates
    pi, mi = w.prompt_index.get(prompt), w.model_index.get(model)
    if agg is None or pi is None or mi is None:
        return None
    if w.measures.errored[pi, mi, 1] > 0:
        return None  # an errored item leaves the pair unscored (the document's rule)
    v = float(agg.composite[pi, mi, 1])
    return v if math.isfinite(v) else None


def _lifts(w: _Week, model: str) -> dict[str, float]:
    agg = w.summary.aggregates
    if agg is None or model not in w.summary.week.models:
        return {}
    mi = w.summary.week.models.index(model)
    d = agg.must[:, mi, 1] - agg.must[:, mi, 0]
    return {p: float(d[i]) for i, p in enumerate(w.summary.week.prompts) if math.isfinite(d[i])}


def compare(a: Path, b: Path, *, margin: float = DEFAULT_MARGIN) -> dict[str, Any]:
    """The comparison of week ``a`` (before) with week ``b`` (after), as a JSON-able dict."""
    wa, wb = _load(Path(a)), _load(Path(b))
    drift = {w.path.name: w.summary.data.get("provenance", {}).get("mismatches", [])
             for w in (wa, wb) if w.summary.data.get("provenance", {}).get("mismatches")}
    kind, deciding, examined = comparison_kind(wa.record, wb.record, drift)
    order = list(dict.fromkeys(list(wa.summary.week.models) + list(wb.summary.week.models)))
    prompts = sorted(set(wa.summary.week.prompts) | set(wb.summary.week.prompts))
    rows: list[dict[str, Any]] = []
    counts = {m: {IMPROVED: 0, REGRESSED: 0, UNCHANGED: 0, UNSCORED: 0} for m in order}
    for p in prompts:
        for m in order:
            before, after = _prompt_value(wa, p, m), _prompt_value(wb, p, m)
            if before is None or after is None:
                change = UNSCORED
            elif after - before > margin:
                change = IMPROVED
            elif before - after > margin:
                change = REGRESSED
            else:
                change = UNCHANGED
            counts[m][change] += 1
            rows.append({"prompt": p, "model": m, "change": change, "before": before,
                         "after": after})
    try:
        history = hist.read_history(Path(b).parent / HISTORY_CSV)
        history_problem = None
    except hist.HistoryError as exc:
        history, history_problem = [], str(exc)
    models: dict[str, Any] = {}
    for m in order:
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
        prior = [x for _, x, _ in hist.prior_runs(history, Path(b).name, m) if x is not None]
        between = float(np.std(prior, ddof=1)) if len(prior) >= MIN_PRIOR_RUNS else None
        cands = [x for x in (within, between) if x is not None]
        threshold = max(cands) if cands else None
        moved = sorted((p for p in common if abs(lb[p] - la[p]) > DEFAULT_MARGIN),
                       key=lambda p: (-abs(lb[p] - la[p]), p))
        movers = [{"prompt": p, "lift_a": la[p], "lift_b": lb[p], "delta": lb[p] - la[p]}
                  for p in moved]
        models[m] = {
            "lift_a": lift_a, "lift_b": lift_b, "delta": delta,
            "paired": test.to_json(),
            "noise_threshold": {"within": within, "between": between, "threshold": threshold,
                                "clears": (None if delta is None or threshold is None
                                           else abs(delta) > threshold)},
            "prompts": counts[m],
            "lift_movers": {"in_both": len(common), "only_one_week": len(set(la) ^ set(lb)),
                            "moved": movers},
        }
    return {
        "a": str(a), "b": str(b), "comparison": kind, "differences": deciding,
        "examined": examined,
        "without_week_json": [str(w.path) for w in (wa, wb) if w.record is None],
        "margin": margin, "prompts": rows, "models": models,
        "problems": {str(w.path): w.summary.problems for w in (wa, wb) if w.summary.problems},
        "history_problem": history_problem,
    }


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
        clears = "n/a" if nt["clears"] is None else ("yes" if nt["clears"] else
                                                     "no (within noise)")
        rows.append([m, _f(v["lift_a"]), _f(v["lift_b"]), _f(v["delta"], sign=True),
                     f"{_f(t['difference'], sign=True)} ± {_f(t['se'])} (n={t['n_prompts']})",
                     ci, p, _f(nt["within"]), _f(nt["between"]), _f(nt["threshold"]), clears])
    if rows:
        L += md_table(["model", f"lift {a}", f"lift {b}", "Δ", "paired Δ ± SE", "95% CI (t)",
                       "p", "t·SE_Δ (within)", "σ (between)", "noise threshold", "clears?"],
                      rows)
    else:
        L.append("_No model is in either week._")
    L.append("\n_Paired Δ: the mean change of the per-prompt lift over the prompts scored in "
             "both weeks, with its t interval and two-sided p. Noise threshold: "
             "max(t·SE_Δ, between-week σ); a move smaller than the threshold is noise._\n")
    if any(v["noise_threshold"]["between"] is None for v in result["models"].values()):
        L.append(f"_σ (between) needs at least {MIN_PRIOR_RUNS} runs before {b} in "
                 f"{HISTORY_CSV}; until then the threshold is the within-week part only, and "
                 "small deltas should be read as noise._\n")

    L.append(f"## Per prompt (with-skill composite, margin {result['margin']:g})\n")
    for m, v in result["models"].items():
        c = v["prompts"]
        L.append(f"- {m}: {c[IMPROVED]} improved, {c[REGRESSED]} regressed, "
                 f"{c[UNCHANGED]} unchanged, {c[UNSCORED]} unscored")
    L.append("")
    for change in (REGRESSED, IMPROVED):
        moved = [r for r in result["prompts"] if r["change"] == change]
        if not moved:
            continue
        moved.sort(key=lambda r: (-abs(r["after"] - r["before"]), r["prompt"], r["model"]))
        L.append(f"### {change.capitalize()}\n")
        L += md_table(["prompt", "model", f"{a}", f"{b}", "Δ"],
                      [[r["prompt"], r["model"], _f(r["before"]), _f(r["after"]),
                        _f(r["after"] - r["before"], sign=True)] for r in moved])
        L.append("")
    L.append("_unscored: the prompt has no with-skill score in one of the weeks, or one of its "
             "items could not be graded there — never counted as an improvement or a "
             "regression._\n")
    return "\n".join(L + _lift_movers(result, a, b)) + "\n"


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
        fail_on_regression: bool = False, out: TextIO) -> int:
    """``skilllift compare`` on two week directories: 0, or 1 with ``fail_on_regression``
    when any prompt regressed, 2 when the weeks cannot be read."""
    import sys

    if not margin >= 0:
        print(f"skilllift compare: --margin must be ≥ 0, got {margin}", file=sys.stderr)
        return 2
    try:
        result = compare(a, b, margin=margin)
    except CompareError as exc:
        print(f"skilllift compare: {exc}", file=sys.stderr)
        return 2
    if output == "json":
        json.dump(result, out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        out.write(render_text(result))
    regressed = any(r["change"] == REGRESSED for r in result["prompts"])
    return 1 if fail_on_regression and regressed else 0
