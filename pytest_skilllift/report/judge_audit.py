"""Who graded, and whether the grading leans: the panel's agreement and a bias audit of the week.

Read from the week's run folders (``grades.json``: the verdicts and each panel judge's vote;
``run.json``: the label's model id and the final answer), no model call, pure arithmetic:

* **Family** (Drupal ai_eval: a judge of the model under test's own family is a warning, never
  a changed verdict; dotnet/skills never lets an agent be graded by its own family): each
  label whose agent model's family is a judge's family, named with those judges.
* **Panel agreement** (``--skill-lift-judges``; inspect_ai reports Krippendorff's alpha over
  its grader models): Krippendorff's alpha, nominal, over the graded items (a unit = one run's
  rubric item, its values = the judges' verdicts), with a 95% percentile bootstrap CI that
  resamples *runs* (an item's judges are not independent of its run's other items); Cohen's
  kappa for every pair of judges over the items both graded; and the must-coverage lift per
  label as each judge alone would have graded it, beside the panel's — computed the same way
  (a run's must coverage, the mean over reps per prompt and arm, the mean over prompts of
  with-skill − no-skill), so a reader sees whether the headline depends on who graded.
* **Self-preference**, when the panel holds judges of two families or more: per label, the lift
  as graded by the judges of the agent's own family minus the lift by the others, with the
  paired SE over prompts.
* **Arm leakage**: answers that say which arm they came from (a family name, "the installed
  skill", SKILL.md; ``judge.mask``), counted per label and arm from grades.json's
  ``arm_leaks``, and how many of them were masked before the judge saw them.
* **Verbosity**: per label and arm, the correlation between answer length (characters) and the
  run's must coverage, and within rubric items (length and credit centred on each item's mean
  over the reps, pooled; None with one rep); and the lift recomputed with answer length as a
  covariate (the paired per-prompt differences regressed on the length differences: the
  intercept is the lift at equal length). Flagged "lift may partly reflect longer answers"
  when the adjusted lift is below the lift by :data:`VERBOSITY_GAP` or more.

Numbers nothing defines (one judge, one prompt) are None, said as "n/a"; never 0.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

from pytest_skilllift.intervals import cohen_kappa, krippendorff_alpha
from pytest_skilllift.model import ANTHROPIC, family_of, label_family, split_agent
from pytest_skilllift.week.files import GRADES_FILE, RUN_FILE

__all__ = ["ALPHA_RESAMPLES", "VERBOSITY_GAP", "alpha_with_ci", "build_audit", "panel_lift"]

#: Bootstrap resamples of runs behind alpha's CI (seeded: the same week, the same CI).
ALPHA_RESAMPLES = 1000
#: How far below the lift the length-adjusted lift must fall to be flagged.
VERBOSITY_GAP = 0.10
NO, WITH = "no-skill", "with-skill"


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _runs(week_dir: Path) -> list[dict[str, Any]]:
    """Every graded run: its label, arm, prompt, model id, answer length and grades."""
    out = []
    try:
        names = sorted(e.name for e in os.scandir(week_dir) if e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    for name in names:
        grades = _read(week_dir / name / GRADES_FILE)
        run = _read(week_dir / name / RUN_FILE)
        if grades is None or run is None or not isinstance(grades.get("rows"), list):
            continue
        out.append({"run_id": name, "label": str(run.get("model", "")),
                    "model_id": str(run.get("model_id", "") or ""),
                    "condition": str(run.get("condition", "")),
                    "prompt": str(run.get("prompt", "")),
                    "answer_chars": len(str(run.get("final_answer") or "")),
                    "judge_model": str(grades.get("judge_model") or ""),
                    "arm_leaks": _count(grades.get("arm_leaks")),
                    "masked": bool(grades.get("judge_mask")),
                    "rows": [r for r in grades["rows"] if isinstance(r, dict)]})
    return out


def _count(value: Any) -> int:
    """A count from a file that may have been edited by hand: anything else counts 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _votes(row: dict[str, Any]) -> dict[str, str]:
    """A row's panel votes, judge → verdict (empty for a one-judge row)."""
    return {str(s["judge"]): str(s.get("verdict", "")) for s in row.get("samples") or ()
            if isinstance(s, dict) and s.get("judge")}


def _coverage(rows: Iterable[dict[str, Any]], judge: str | None) -> float | None:
    """A run's must coverage: by the recorded verdicts, or by one judge's votes."""
    credits = []
    for r in rows:
        if r.get("item_type") != "must" or not r.get("verdict"):
            continue
        verdict = r["verdict"] if judge is None else _votes(r).get(judge)
        if verdict:
            credits.append(1.0 if verdict == "met" else 0.0)
    return sum(credits) / len(credits) if credits else None


def _per_prompt(runs: Sequence[dict[str, Any]], value: Any) -> dict[str, dict[str, float]]:
    """prompt → arm → mean of ``value(run)`` over its reps (None values left out)."""
    acc: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        v = value(run)
        if v is not None and run["condition"] in (NO, WITH):
            acc[run["prompt"]][run["condition"]].append(float(v))
    return {p: {arm: sum(vs) / len(vs) for arm, vs in arms.items()}
            for p, arms in acc.items()}


def _diffs(runs: Sequence[dict[str, Any]], value: Any) -> dict[str, float]:
    """prompt → with-skill − no-skill of ``value``, for prompts with both arms."""
    means = _per_prompt(runs, value)
    return {p: a[WITH] - a[NO] for p, a in means.items() if NO in a and WITH in a}


def _mean_se(xs: Sequence[float]) -> tuple[float | None, float | None]:
    if not xs:
        return None, None
    mean = sum(xs) / len(xs)
    if len(xs) < 2:
        return mean, None
    var = sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)
    return mean, math.sqrt(var / len(xs))


def panel_lift(runs: Sequence[dict[str, Any]], judge: str | None = None) -> float | None:
    """The must-coverage lift of ``runs`` (one label) by the recorded verdicts or one judge."""
    return _mean_se(list(_diffs(runs, lambda r: _coverage(r["rows"], judge)).values()))[0]


def _pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 0 or syy <= 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / math.sqrt(sxx * syy)


def _within_item_r(runs: Sequence[dict[str, Any]]) -> float | None:
    """The correlation of answer length and an item's credit *within* rubric items: length and
    credit centred on their item's means (an item = prompt × rubric key, over the reps), then
    pooled. None when no item was graded twice with different lengths (one rep)."""
    groups: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for run in runs:
        for r in run["rows"]:
            if r.get("verdict") and r.get("credit") not in (None, ""):
                key = (run["prompt"], f"{r.get('item_type')}-{r.get('item_index')}")
                groups[key].append((float(run["answer_chars"]), float(r["credit"])))
    xs: list[float] = []
    ys: list[float] = []
    for pts in groups.values():
        if len(pts) < 2:
            continue
        mx = sum(p[0] for p in pts) / len(pts)
        my = sum(p[1] for p in pts) / len(pts)
        xs += [p[0] - mx for p in pts]
        ys += [p[1] - my for p in pts]
    return _pearson(xs, ys)


def _units(runs: Sequence[dict[str, Any]], judges: Sequence[str]) -> list[list[list[str]]]:
    """Per run, its items' values: each graded item's votes in the judges' order."""
    out = []
    for run in runs:
        items = []
        for r in run["rows"]:
            votes = _votes(r)
            if r.get("verdict") and votes:
                items.append([votes[j] for j in judges if j in votes])
        if items:
            out.append(items)
    return out


def alpha_with_ci(by_run: Sequence[Sequence[Sequence[str]]], *,
                  resamples: int = ALPHA_RESAMPLES, seed: int = 0,
                  ) -> tuple[float | None, list[float] | None, int]:
    """Krippendorff's alpha over every run's units, its 95% percentile bootstrap CI
    resampling runs (``by_run[r]`` is run ``r``'s units), and the resamples that had an
    alpha. ``benchmarks/bench_alpha_ci.py`` measures the CI's coverage."""
    flat = [unit for items in by_run for unit in items]
    alpha = krippendorff_alpha(flat)
    rng = random.Random(seed)
    draws = []
    for _ in range(resamples if alpha is not None and len(by_run) > 1 else 0):
        sample = [unit for _k in range(len(by_run))
                  for unit in by_run[rng.randrange(len(by_run))]]
        value = krippendorff_alpha(sample)
        if value is not None:
            draws.append(value)
    draws.sort()
    ci = ([draws[int(0.025 * (len(draws) - 1))], draws[int(0.975 * (len(draws) - 1))]]
          if draws else None)
    return alpha, ci, len(draws)


def _agreement(runs: Sequence[dict[str, Any]], judges: list[str]) -> dict[str, Any]:
    by_run = _units(runs, judges)
    flat = [unit for items in by_run for unit in items]
    alpha, ci, n_draws = alpha_with_ci(by_run)
    pairs = []
    for a, b in combinations(judges, 2):
        va, vb = [], []
        for run in runs:
            for r in run["rows"]:
                votes = _votes(r)
                if r.get("verdict") and a in votes and b in votes:
                    va.append(votes[a])
                    vb.append(votes[b])
        agree = sum(x == y for x, y in zip(va, vb, strict=True))
        pairs.append({"a": a, "b": b, "items": len(va),
                      "agreement": agree / len(va) if va else None,
                      "kappa": cohen_kappa(va, vb) if va else None})
    contested = sum(1 for run in runs for r in run["rows"]
                    if r.get("verdict") and len(set(_votes(r).values())) > 1)
    return {"judges": judges, "runs": len(by_run), "items": len(flat),
            "disagreed_items": contested, "alpha": alpha, "alpha_ci95": ci,
            "alpha_resamples": n_draws, "kappa": pairs}


def _judge_family(name: str) -> str:
    return family_of(name) or ANTHROPIC


def build_audit(week_dir: Path) -> dict[str, Any]:
    """The ``judge.audit`` key of scorecard.json (module docs)."""
    runs = _runs(Path(week_dir))
    labels: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        labels[run["label"]].append(run)
    judges: list[str] = []
    for run in runs:
        for name in run["judge_model"].split(","):
            if name.strip() and name.strip() not in judges:
                judges.append(name.strip())
    label_families = {}
    for label, rs in labels.items():
        model_id = next((r["model_id"] for r in rs if r["model_id"]), "")
        agent, agent_model = split_agent(model_id)
        label_families[label] = label_family(agent, agent_model)
    family_warnings = [
        {"label": label, "family": fam,
         "judges": [j for j in judges if _judge_family(j) == fam]}
        for label, fam in sorted(label_families.items())
        if fam and any(_judge_family(j) == fam for j in judges)]

    voters = sorted({j for run in runs for r in run["rows"] for j in _votes(r)},
                    key=lambda j: judges.index(j) if j in judges else len(judges))
    panel: dict[str, Any] | None = None
    self_pref: dict[str, Any] = {}
    if len(voters) >= 2:
        panel = _agreement(runs, voters)
        panel["lift"] = {label: {"panel": panel_lift(rs),
                                 **{j: panel_lift(rs, j) for j in voters}}
                         for label, rs in sorted(labels.items())}
        families = {_judge_family(j) for j in voters}
        if len(families) >= 2:
            for label, rs in sorted(labels.items()):
                fam = label_families.get(label, "")
                own = [j for j in voters if _judge_family(j) == fam]
                other = [j for j in voters if _judge_family(j) != fam]
                if not fam or not own or not other:
                    continue

                def by(group: list[str], run: dict[str, Any]) -> float | None:
                    vals = [c for j in group if (c := _coverage(run["rows"], j)) is not None]
                    return sum(vals) / len(vals) if vals else None

                d_own = _diffs(rs, lambda r, g=own: by(g, r))
                d_other = _diffs(rs, lambda r, g=other: by(g, r))
                common = sorted(set(d_own) & set(d_other))
                diff, se = _mean_se([d_own[p] - d_other[p] for p in common])
                self_pref[label] = {
                    "family": fam, "own_judges": own, "other_judges": other,
                    "lift_own": _mean_se([d_own[p] for p in common])[0],
                    "lift_other": _mean_se([d_other[p] for p in common])[0],
                    "difference": diff, "difference_se": se, "n_prompts": len(common)}

    leakage: dict[str, dict[str, dict[str, int]]] = {}
    for run in runs:
        cell = leakage.setdefault(run["label"], {}).setdefault(
            run["condition"], {"runs": 0, "leaking": 0, "masked": 0})
        cell["runs"] += 1
        cell["leaking"] += run["arm_leaks"] > 0
        cell["masked"] += run["masked"]

    verbosity: dict[str, Any] = {}
    for label, rs in sorted(labels.items()):
        corr, within = {}, {}
        for arm in (NO, WITH):
            pts = [(float(r["answer_chars"]), c) for r in rs if r["condition"] == arm
                   if (c := _coverage(r["rows"], None)) is not None]
            corr[arm] = _pearson([p[0] for p in pts], [p[1] for p in pts])
            within[arm] = _within_item_r([r for r in rs if r["condition"] == arm])
        d_cov = _diffs(rs, lambda r: _coverage(r["rows"], None))
        d_len = _diffs(rs, lambda r: r["answer_chars"] / 1000.0)
        common = sorted(set(d_cov) & set(d_len))
        lift = _mean_se([d_cov[p] for p in common])[0]
        adjusted = slope = None
        if len(common) >= 3:
            xs, ys = [d_len[p] for p in common], [d_cov[p] for p in common]
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            sxx = sum((x - mx) ** 2 for x in xs)
            if sxx > 0:
                slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
                adjusted = my - slope * mx
        verbosity[label] = {
            "length_credit_r": corr, "length_credit_r_within_item": within, "lift": lift,
            "lift_length_adjusted": adjusted,
            "credit_per_kchar": slope, "n_prompts": len(common),
            "flag": bool(lift is not None and adjusted is not None
                         and lift - adjusted >= VERBOSITY_GAP)}
    return {"judges": judges, "label_families": label_families,
            "family_warnings": family_warnings, "panel": panel,
            "self_preference": self_pref, "leakage": leakage,
            "leaking_runs": sum(c["leaking"] for arms in leakage.values()
                                for c in arms.values()),
            "masked_runs": sum(c["masked"] for arms in leakage.values() for c in arms.values()),
            "verbosity": verbosity, "verbosity_gap": VERBOSITY_GAP}
