"""Render the scorecard (markdown and JSON) from the ``scorecard.json`` dict.  Pure.

The layout and wording follow the qdrant pipeline's ``scorecard.md`` (``seeds/000``
Outputs) so a reader of either sees the same report; additions (uncertainty detail,
input problems, plots, rep ranges) are extra sections or trailing columns.
Tables are padded so the raw text reads as well as the rendered view.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

#: Markdown shows at most this many rows of a table; the JSON always keeps all of them,
#: and a capped table says so right under it (no silent caps).
MAX_PROMPT_ROWS = 20000
MAX_VIOLATION_ROWS = 500
MAX_DROPPED_ROWS = 500
MAX_ACTIVATION_ROWS = 20000

WOW_PENDING = "Will be computed after four runs."


def fmt(x: float | None, nd: int = 3) -> str:
    """Fixed decimals, or ``n/a`` for a missing number."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def signed(x: float | None, nd: int = 3) -> str:
    """Signed fixed decimals (``+0.319``), or ``n/a``."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.{nd}f}"


def ci_flag(m: dict[str, Any]) -> str:
    """The "95% CI != 0?" cell: yes / no / why not computable."""
    if m.get("must_lift_se") is None:
        return "n/a (need >=2 prompts)"
    return "yes" if m.get("ci_excludes_zero") else "no"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A GitHub table with padded, aligned columns (readable as raw text)."""
    srows = [[str(c) for c in r] for r in rows]
    widths = [len(h) for h in headers]
    for r in srows:
        for i, c in enumerate(r):
            if len(c) > widths[i]:
                widths[i] = len(c)
    fmt_line = "| " + " | ".join(f"{{:<{w}}}" for w in widths) + " |"
    out = [fmt_line.format(*headers), "| " + " | ".join("-" * w for w in widths) + " |"]
    out.extend(fmt_line.format(*r) for r in srows)
    return out


def _cap_note(shown: int, total: int, what: str) -> list[str]:
    if shown >= total:
        return []
    return ["", f"_Showing the first {shown} of {total} {what}; all {total} are in "
            "`scorecard.json`._"]


def _cell(text: str) -> str:
    """Keep a free-text value inside its table cell."""
    return text.replace("\r", " ").replace("\n", " ").replace("|", "\\|")


def render_json(data: dict[str, Any]) -> str:
    """scorecard.json text (NaN never appears: numbers are None when unknown).

    Indented like ``json.dumps(indent=2)`` except that each element of a top-level list
    sits on one line: ``indent`` switches json to its pure-Python encoder, which takes
    seconds on a 10,000-row prompts table, while per-element compact dumps use the C one.
    """

    def dump(v: Any, indent: int | None) -> str:
        return json.dumps(v, indent=indent, ensure_ascii=False, allow_nan=False,
                          default=_json_default)

    parts = []
    for key, value in data.items():
        if isinstance(value, list) and value:
            body = ",\n".join("    " + dump(item, None) for item in value)
            text = "[\n" + body + "\n  ]"
        else:
            text = dump(value, 2).replace("\n", "\n  ")
        parts.append(f"  {dump(key, None)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _json_default(o: object) -> object:
    """numpy scalars that slipped through become plain Python numbers."""
    item = getattr(o, "item", None)
    if callable(item):
        return item()
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


def _money(x: float | None) -> str:
    return "n/a" if x is None else f"${x:.2f}"


def render_markdown(data: dict[str, Any]) -> str:
    """scorecard.md from the scorecard.json dict."""
    L: list[str] = []
    if data.get("banner"):
        L.append(f"> **{data['banner']}**\n")
    L.append(f"# Weekly Skill Scorecard — {data['week']}\n")
    problems = data.get("problems") or []
    if problems:
        L.append("## ⚠ Input problems — this scorecard is partial\n")
        L += [f"- {p}" for p in problems]
        L.append("\nRows named above are excluded from every number below and counted under "
                 "Coverage / Run health; numbers that could not be computed read `n/a`.\n")
    L += _lift_section(data)
    L += _wow_section(data)
    L += _cells_section(data)
    L += _prompts_section(data)
    L += _activation_section(data)
    L += _audit_section(data)
    L += _selfserved_section(data)
    L += _avoid_section(data)
    L += _coverage_section(data)
    L += _cost_section(data)
    L += _health_section(data)
    L += _provenance_section(data)
    L += _plots_section(data)
    return "\n".join(L)


def _lift_section(data: dict[str, Any]) -> list[str]:
    L = ["## Lift per model (with-skill − no-skill)\n"]
    models: dict[str, Any] = data.get("models", {})
    if not models:
        L.append("_No lift could be computed: the week needs scored prompts in both arms "
                 "(see Input problems)._\n")
        return L
    eps = 1e-9

    def nonzero(key: str) -> bool:
        return any(m.get(key) is not None and abs(m[key]) > eps for m in models.values())

    show_bonus, show_avoid = nonzero("bonus_delta"), nonzero("avoid_delta")
    headers = ["model", "must_coverage no→with", "must lift ± SE", "95% CI != 0?"]
    headers += ["Δbonus"] if show_bonus else []
    headers += ["Δavoid"] if show_avoid else []
    headers += ["Δcost ($)", "Δturns"]
    rows = []
    for label, m in models.items():
        se = fmt(m["must_lift_se"]) if m.get("must_lift_se") is not None else "n/a"
        row = [label, f"{fmt(m['must_no'])} → {fmt(m['must_with'])}",
               f"{signed(m['must_lift'])} ± {se}", ci_flag(m)]
        if show_bonus:
            row.append(signed(m.get("bonus_delta")))
        if show_avoid:
            row.append(signed(m.get("avoid_delta"), 2))
        row += [signed(m.get("cost_delta"), 4), signed(m.get("turns_delta"), 1)]
        rows.append(row)
    L += md_table(headers, rows)
    L.append(
        "\n_± SE is one within-week standard error of the paired per-prompt must-coverage "
        "lift — this week's sampling uncertainty (finite prompt set + run/judge noise), "
        "**not** between-week drift. '≠ 0?' asks whether the 95% CI (t·SE) excludes zero: "
        "'no' means don't act on this lift yet. Δbonus/Δavoid appear only when the skill "
        "changed bonus depth or introduced/removed a violation. Δcost/Δturns are "
        "within-model only; negative = cheaper/sooner. Note: turns counts all "
        "conversation messages, including tool-result messages, not just the model's "
        "own turns. Reported, not gated._\n")

    # Beyond the reference: how sure, by two methods, and whether n can answer the question.
    boot = data.get("bootstrap", {})
    mdl = data.get("mdl", {})
    L.append("### Uncertainty detail\n")
    rows = []
    for label, m in models.items():
        t_ci = (f"[{signed(m.get('ci_low'))}, {signed(m.get('ci_high'))}] "
                f"(t={fmt(m.get('t_crit'))}, df={m.get('df')})"
                if m.get("ci_low") is not None else "n/a")
        b_ci = (f"[{signed(m.get('bootstrap_low'))}, {signed(m.get('bootstrap_high'))}]"
                if m.get("bootstrap_low") is not None else "n/a")
        need = m.get("prompts_needed_for_target")
        no_spread = " (dᵢ all equal)" if m.get("sd") == 0 else ""
        rows.append([label, m["n_prompts"], t_ci, b_ci,
                     fmt(m.get("min_detectable_lift")) + no_spread,
                     ("n/a" if need is None else str(need)) + no_spread])
    target = fmt(mdl.get("target_lift", 0.10), 2)
    L += md_table(["model", "n prompts", "95% CI (exact t)",
                   f"95% CI (paired bootstrap, {boot.get('n_boot', '?')}×)",
                   "min detectable lift", f"prompts needed for {target}"], rows)
    L.append(f"\n_Paired bootstrap over prompts, seed {boot.get('seed')}, percentile interval. "
             "Minimum detectable lift: the smallest true lift a two-sided 5% paired t-test "
             "detects with 80% power at this week's n and spread of dᵢ; the last column is "
             f"how many prompts that test needs to detect a lift of {target}._\n")
    notes = []
    for label, m in models.items():
        if m.get("low_sample"):
            notes.append(f"- ⚠ **low sample** for {label}: only {m['n_prompts']} paired "
                         "prompt(s) (fewer than 5) — the SE and CI are unreliable.")
        b = boot.get("per_model", {}).get(label, {})
        if b.get("agrees_with_t") is False:
            t_says = "excludes" if m.get("ci_excludes_zero") else "includes"
            b_says = "excludes" if b.get("excludes_zero") else "includes"
            notes.append(f"- ⚠ for {label} the t interval {t_says} zero but the bootstrap "
                         f"interval {b_says} it — treat the '≠ 0?' flag as borderline.")
    if notes:
        L += [*notes, ""]
    return L


def _wow_section(data: dict[str, Any]) -> list[str]:
    h = data.get("history", {})
    L = ["## Week-over-week lift delta\n"]
    if not h.get("ready"):
        L.append(f"**{WOW_PENDING}** (this is run {h.get('n_runs', 1)} of "
                 f"{h.get('min_runs', 4)}; a delta needs prior runs to estimate the "
                 "between-week noise floor. This week's own sampling uncertainty is in the "
                 "lift table above as ± SE.)\n")
        return L
    per = h.get("per_model", {})
    prev_keys = sorted({v["prev_key"] for v in per.values() if v.get("prev_key")})
    L.append(f"vs previous run `{', '.join(prev_keys) or '?'}`. The don't-act threshold is "
             "**max(t·SE_Δ, between-week σ)** — a delta must clear both this week's "
             "sampling error *and* the observed week-to-week drift to be actionable.\n")
    rows = []
    for label, v in per.items():
        if not v.get("ready"):
            rows.append([label, f"n/a → {fmt(v.get('now_lift'))}", "n/a", "n/a", "n/a", "n/a",
                         "n/a (no prior run for this model)"])
            continue
        act = v.get("actionable")
        rows.append([label, f"{fmt(v.get('prev_lift'))} → {fmt(v.get('now_lift'))}",
                     signed(v.get("delta")), fmt(v.get("within")), fmt(v.get("between")),
                     fmt(v.get("threshold")),
                     "n/a" if act is None else ("yes" if act else "no (within noise)")])
    L += md_table(["model", "must lift (prev → now)", "Δ", "t·SE_Δ (within)",
                   "σ (between)", "threshold", "actionable?"], rows)
    L.append("")
    return L


def _cells_section(data: dict[str, Any]) -> list[str]:
    L = ["## Per-cell metrics\n"]
    rows = [[c["model"], c["condition"], fmt(c["must_coverage"]), fmt(c["bonus_rate"]),
             fmt(c["avoid_violations"], 2), fmt(c["composite"]), fmt(c["mean_cost"], 4),
             fmt(c["mean_turns"], 1), c["n"]] for c in data.get("cells", [])]
    if not rows:
        L.append("_No cells could be scored._\n")
        return L
    L += md_table(["model", "condition", "must_cov", "bonus_rate", "avoid_viol", "composite",
                   "mean cost", "mean turns", "n"], rows)
    L.append("")
    return L


def _range(lo: float | None, hi: float | None) -> str:
    return "n/a" if lo is None else f"{lo:.2f}–{hi:.2f}"


def _prompts_section(data: dict[str, Any]) -> list[str]:
    L = ["## Per-prompt (must_coverage; with-skill lift)\n"]
    order = {m: i for i, m in enumerate(data.get("model_order", []))}
    prompts = sorted(data.get("prompts", []), key=lambda r: (r["prompt"], order.get(r["model"],
                                                                                    99)))
    if not prompts:
        L.append("_No prompt could be scored._\n")
        return L
    shown = prompts[:MAX_PROMPT_ROWS]
    rows = [[r["prompt"], r["model"], f"{fmt(r['must_no'])} → {fmt(r['must_with'])}",
             signed(r["must_lift"]), f"{fmt(r['composite_no'])} → {fmt(r['composite_with'])}",
             f"{_range(r['must_no_min'], r['must_no_max'])} / "
             f"{_range(r['must_with_min'], r['must_with_max'])}"] for r in shown]
    L += md_table(["prompt", "model", "must no→with", "must lift", "comp no→with",
                   "rep min–max (no / with)"], rows)
    L += _cap_note(len(shown), len(prompts), "per-prompt rows")
    L.append("\n_rep min–max is the spread of must_coverage over the k reps: the stability "
             "signal (a wide range means the item flips on rerun)._\n")
    return L


def _activation_section(data: dict[str, Any]) -> list[str]:
    L = ["## Activation / trigger misses\n"]
    s = data.get("activation_summary", {})
    if not s.get("available", True):
        L.append("_Not available: manifest.csv has no skill_activation column._\n")
        return L
    from pytest_skilllift.report.excluded_runs import render_activation_note

    if not s.get("with_skill_runs"):
        L.append("_No completed with-skill runs._\n")
        return [*L, *render_activation_note(s), ""] if s.get("excluded_runs") else L
    lo, hi = s.get("trigger_miss_rate_wilson95", [None, None])
    L.append(f"- with-skill runs: **{s['with_skill_runs']}**")
    L.append("- **trigger misses** (activation=none — skill present but never reached): "
             f"**{s['trigger_misses']}**")
    L.append("- lift sourced from the published site (activation=web_fetch, not the local "
             f"SKILL.md): **{s['web_fetch_runs']}**")
    L.append(f"- trigger-miss rate {fmt(s['trigger_misses'] / s['with_skill_runs'])} "
             f"(95% Wilson {fmt(lo)}–{fmt(hi)}); reached leaf in {s['reached_leaf_runs']} of "
             f"{s['with_skill_runs']} runs")
    if s.get("unknown_activation_runs"):
        L.append(f"- runs with an unknown activation value: **{s['unknown_activation_runs']}**")
    L += render_activation_note(s)
    L.append("")
    acts = data.get("activation", [])
    shown = acts[:MAX_ACTIVATION_ROWS]
    rows = []
    for a in shown:
        items = sorted((k, v) for k, v in a["counts"].items() if v)
        text = ", ".join(f"{k}×{v}" for k, v in items)
        if a.get("never_triggered"):
            text += "  ⚠ never triggered"
        rows.append([a["prompt"], text, f"{a['reached_leaf']}/{a['with_skill_runs']}"])
    L += md_table(["prompt", "activations (with-skill)", "reached leaf"], rows)
    L += _cap_note(len(shown), len(acts), "activation rows")
    L.append("")
    return L


MAX_HURT_ROWS = 50


def _audit_section(data: dict[str, Any]) -> list[str]:
    a = data.get("audit")
    if not a:
        return []
    L = ["## Trajectory audit — invocation, misuse, skill impact", ""]
    if a["available"]:
        rows = [[m, c["VERIFIED"], c["PARTIAL"], c["NOT_INVOKED"], sum(c.values())]
                for m, c in a["invocation"].items()]
        L += md_table(["model", "VERIFIED", "PARTIAL", "NOT_INVOKED", "with-skill runs"], rows)
        L += ["", "_VERIFIED: the skill was loaded (Skill tool or a Read of its SKILL.md) and, "
              "where it links sub-files, one was opened; PARTIAL: loaded but no linked file "
              "opened; NOT_INVOKED: installed and never read._", ""]
        L.append(f"- top-level only (read SKILL.md, never opened a linked sub-file): "
                 f"**{a['top_level_only_runs']}** of {a['audited_runs']} audited runs")
    else:
        L.append("- invocation status: not recorded in this week's manifest "
                 "(no `invocation_status` column)")
    thr = a["impact_threshold"]
    counts = ", ".join(
        f"{m}: helped {c['helped']}, hurt {c['hurt']}, no-op {c['no-op']}"
        for m, c in a["impact_counts"].items())
    L.append(f"- skill impact per prompt (must lift ≥ +{thr:.2f} helped, ≤ −{thr:.2f} hurt, "
             f"else no-op): {counts}")
    if a["reps"] == 1:
        L.append("- ⚠ one rep per arm: a single-trial |Δ| < 0.30 is likely noise; re-run "
                 "with more reps before acting on a verdict")
    hurt = [r for r in a["impact"] if r["outcome"] == "hurt"]
    if hurt:
        shown = hurt[:MAX_HURT_ROWS]
        L += ["", "Prompts where the skill hurt:", ""]
        L += md_table(["prompt", "model", "must lift"],
                      [[r["prompt"], r["model"], signed(r["must_lift"])] for r in shown])
        L += _cap_note(len(shown), len(hurt), "hurt rows")
    if a["flags"]:
        L += ["", "Flags (seed 001 patterns across models):", ""]
        L += [f"- {f}" for f in a["flags"]]
    from pytest_skilllift.report.excluded_runs import render_audit_rows

    L += render_audit_rows(a)
    return [*L, ""]


def _selfserved_section(data: dict[str, Any]) -> list[str]:
    s = data.get("baseline_self_served", {})
    L = ["## Lift caveat — baseline self-served the skill\n"]
    if not s.get("available", True):
        L.append("_Not available: manifest.csv has no fetched_site column._\n")
        return L
    if not s.get("no_skill_runs"):
        L.append("_No no-skill runs._\n")
        return L
    L.append("- no-skill runs that fetched `skills.qdrant.tech`: "
             f"**{s['fetched_runs']} of {s['no_skill_runs']}**")
    if s.get("prompts"):
        L.append(f"- affected prompts: {', '.join(s['prompts'])}")
        L.append("- For these, lift is measured against a baseline that reached the "
                 "published skill on its own — so it *understates* the skill's value.")
    L.append("")
    return L


def _avoid_section(data: dict[str, Any]) -> list[str]:
    viol = data.get("avoid_violations", [])
    L = ["## `avoid` violations (most damaging failures)\n"]
    if not viol:
        L.append("_None._\n")
        return L
    shown = viol[:MAX_VIOLATION_ROWS]
    rows = [[v["prompt"], v["model"], v["condition"], _cell(v["item"])[:80],
             _cell(v["evidence"])[:120]] for v in shown]
    L += md_table(["prompt", "model", "condition", "violated item", "evidence"], rows)
    L += _cap_note(len(shown), len(viol), "violations")
    L.append("")
    return L


#: Coverage counts shown only when nonzero: (scorecard.json key, label).
_COVERAGE_COUNTS: tuple[tuple[str, str], ...] = (
    ("items_invalid", "items excluded as invalid input (see Input problems)"),
    ("items_excluded_with_run", "graded items excluded with their dropped run"),
    ("unscored_prompt_reps", "prompt×rep unscored (no gradeable must item)"),
    ("composite_unscored_prompt_reps",
     "prompt×rep with composite unscored (all bonus items ungraded)"),
)


def _coverage_section(data: dict[str, Any]) -> list[str]:
    c = data.get("coverage", {})
    L = ["## Coverage\n"]
    L.append(f"- runs graded: **{c.get('graded_runs', 0)} of {c.get('total_runs', 0)}**")
    dropped = c.get("dropped", [])
    if dropped:
        L.append(f"- dropped: **{len(dropped)}** (a partial run is not a clean run)")
    else:
        L.append("- dropped: **0**")
    if c.get("items_ungraded"):
        L.append(f"- ungraded items (judge/parse error; excluded, not scored as zero): "
                 f"**{c['items_ungraded']}** of {c['items_total']}")
    L += [f"- {label}: **{c[key]}**" for key, label in _COVERAGE_COUNTS if c.get(key)]
    if dropped:
        shown = dropped[:MAX_DROPPED_ROWS]
        L.append("")
        L += md_table(["run_id", "prompt", "model", "condition", "reason"],
                      [[d["run_id"], d["prompt"], d["model"], d["condition"], _cell(d["reason"])]
                       for d in shown])
        L += _cap_note(len(shown), len(dropped), "dropped runs")
    L.append("")
    return L


def _dur(s: float) -> str:
    return f"{s:.0f}s"


def _cost_section(data: dict[str, Any]) -> list[str]:
    ct = data.get("cost_time", {})
    L = ["## Cost & time\n", "**Spend (actual $ spent, all runs):**"]
    per = ct.get("generation_usd_per_model", {})
    per_txt = ", ".join(f"{k} {_money(per[k])}" for k in sorted(per))
    L.append(f"- generation: {_money(ct.get('generation_usd'))}" + (f"  ({per_txt})"
                                                                     if per_txt else ""))
    total_runs = data.get("coverage", {}).get("total_runs", 0)
    n_judge = ct.get("judge_runs_with_cost", 0)
    if ct.get("judge_usd") is None:
        L.append(f"- judge (Opus): not recorded (0 of {total_runs} runs have a "
                 "judge_cost.txt)")
        L.append(f"- **total: {_money(ct.get('total_usd'))}** (generation only; judge $ "
                 "unknown)")
    else:
        partial = "" if n_judge >= total_runs else (
            f"  (from {n_judge} of {total_runs} runs; the rest not recorded)")
        L.append(f"- judge (Opus): {_money(ct['judge_usd'])}{partial}")
        L.append(f"- **total: {_money(ct.get('total_usd'))}**"
                 + (" (judge $ partial)" if partial else ""))
    L.append("")
    t = ct.get("time", {})
    L.append("**Time (generation phase):**")
    L.append(f"- runs timed: {t.get('runs_timed', 0)}")
    if t.get("total_s") is not None:
        L.append(f"- compute-time (Σ per-run): {t['total_s'] / 60:.1f} min  (mean "
                 f"{_dur(t['mean_s'])}, median {_dur(t['median_s'])}, max {_dur(t['max_s'])})")
    if ct.get("wall_clock_s") is not None:
        sp = ct.get("speedup")
        L.append(f"- wall-clock: {ct['wall_clock_s'] / 60:.1f} min"
                 + (f"  (parallel speedup ~{sp:.1f}×)" if sp else ""))
    L.append("")
    return L


def _health_section(data: dict[str, Any]) -> list[str]:
    h = data.get("run_health", {})
    harness = (h.get("invalid_install_runs", 0) + h.get("errored_runs", 0)
               + h.get("timeout_runs", 0))
    L = ["## Run health\n",
         f"- contested items: {h.get('contested_items', 0)}",
         f"- ungraded items (parse/verdict errors): {h.get('ungraded_items', 0)}",
         "- budget-capped runs (hit the per-run $ cap, truncated, excluded): "
         f"{h.get('budget_capped_runs', 0)}",
         "- runs with unreliable signals (signals_ok=0 — transcript did not parse to the "
         "expected shape; activation/fetch numbers suspect, investigate): "
         f"{h.get('signals_bad_runs', 0)}",
         "- runs excluded from the cost mean (errored/capped/no-cost): "
         f"{h.get('cost_excluded_runs', 0)}",
         f"- harness failures (invalid install {h.get('invalid_install_runs', 0)}, errored "
         f"{h.get('errored_runs', 0)}, timeout {h.get('timeout_runs', 0)}): {harness}"]
    if h.get("no_answer_runs"):
        L.append(f"- runs that produced no answer (dropped): {h['no_answer_runs']}")
    if h.get("invalid_items"):
        L.append(f"- items that failed validation (excluded): {h['invalid_items']}")
    L.append("")
    return L


def _provenance_section(data: dict[str, Any]) -> list[str]:
    p = data.get("provenance", {})
    L = ["## Provenance\n", "Exact model builds and versions these numbers were produced with:\n"]
    snaps: dict[str, list[str]] = p.get("snapshots", {})
    listed = list(data.get("model_order", [])) + sorted(set(snaps) - set(data.get(
        "model_order", [])))
    rows = []
    for m in listed:
        s = snaps.get(m, [])
        if not s:
            rows.append([m, "(unknown)"])
        elif len(s) == 1:
            rows.append([m, f"`{s[0]}`"])
        else:
            rows.append([m, f"⚠ multiple (`{'`, `'.join(s)}`) — model changed mid-week"])
    L += md_table(["model", "exact snapshot string"], rows)
    L.append("")
    cli = p.get("cli_versions", [])
    sha = p.get("skills_commits", [])
    L.append(f"- CLI version(s): {', '.join(f'`{v}`' for v in cli) or '_(unknown)_'}")
    L.append(f"- skills commit(s): {', '.join(f'`{v}`' for v in sha) or '_(unknown)_'}")
    w = p.get("window")
    if w:
        lo, hi = w["start"], w["end"]
        L.append(f"- run window (UTC): {'`' + lo + '`' if lo == hi else f'`{lo}` – `{hi}`'}")
    ids: dict[str, list[str]] = p.get("model_ids") or {}
    if ids:
        L.append("- requested model id(s): " + ", ".join(
            f"{m} → {', '.join(f'`{i}`' for i in v)}" for m, v in ids.items()))
    for mm in p.get("mismatches", []):
        if mm.startswith("model ") and "requested" in mm:  # snapshot splits are in the table
            L.append(f"- ⚠ {mm}")
    if len(cli) > 1:
        L.append("- ⚠ more than one CLI version present — versions were not pinned across runs.")
    if len(sha) > 1:
        L.append("- ⚠ more than one skills commit present — the skills tree changed mid-week.")
    L.append("- Note: an alias like `claude-sonnet-5` can float to a newer build without "
             "changing name; the run window is the only correlate for such a silent swap. "
             "Pass a dated model id if byte-level pinning matters.")
    L.append("")
    return L


def _plots_section(data: dict[str, Any]) -> list[str]:
    pl = data.get("plots", {})
    if not pl.get("forest") and not pl.get("trend"):
        return []
    L = ["## Plots\n"]
    if pl.get("forest"):
        L.append(f"![Per-prompt must-coverage lift with rep ranges, per model]({pl['forest']})")
        L.append("")
    if pl.get("trend"):
        L.append(f"![Weekly must-coverage lift ± SE per model]({pl['trend']})")
        L.append("")
    return L


__all__ = ["ci_flag", "fmt", "md_table", "render_json", "render_markdown",
           "signed"]
