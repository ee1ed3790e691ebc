"""The Judge section's audit: the family warning, the panel's agreement, the bias audit.

Rendered inside "Judge reliability" (``sections/judge.py``) from ``judge.audit``
(:mod:`pytest_skilllift.report.judge_audit`); :func:`terminal_lines` gives the same warnings
and the panel's alpha to the terminal summary. Judge names are model ids (escaped as text).
"""

from __future__ import annotations

from typing import Any

from pytest_skilllift.report.markdown import fmt, md_table, signed, untrusted

__all__ = ["render_audit", "terminal_lines"]


def _names(names: list[str]) -> str:
    return ", ".join(f"`{untrusted(n)}`" for n in names)


def _ci(ci: list[float] | None) -> str:
    return "n/a" if not ci else f"[{fmt(ci[0])}, {fmt(ci[1])}]"


def family_lines(audit: dict[str, Any]) -> list[str]:
    """One warning per label graded by a judge of its own family."""
    return [f"⚠ {w['label']} ({w['family']}) is graded by its own family's judge "
            f"{', '.join(w['judges'])}: a warning, the verdicts stand; a judge of another "
            "family: --skill-lift-judge-model openai:MODEL / google:MODEL or a panel "
            "(--skill-lift-judges, docs/judge.md)"
            for w in audit.get("family_warnings") or []]


def terminal_lines(judge: dict[str, Any] | None) -> list[str]:
    """The family warnings, the panel's alpha and the leak count, for the terminal."""
    audit = (judge or {}).get("audit") or {}
    lines = [f"  {line}" for line in family_lines(audit)]
    panel = audit.get("panel")
    if panel:
        lines.append(f"  judge panel {', '.join(panel['judges'])}: Krippendorff's alpha "
                     f"{fmt(panel['alpha'])} {_ci(panel['alpha_ci95'])} over "
                     f"{panel['items']} items of {panel['runs']} runs; "
                     f"{panel['disagreed_items']} item(s) contested")
    if audit.get("leaking_runs"):
        lines.append(f"  arm leakage: {audit['leaking_runs']} answer(s) named their skill "
                     f"or family ({audit['masked_runs']} masked for the judge); scorecard: "
                     "Judge reliability")
    return lines


def render_audit(audit: dict[str, Any] | None) -> list[str]:
    """The markdown of the audit (empty for a week without one)."""
    if not audit:
        return []
    L = ["### Judge family\n"]
    warnings = family_lines(audit)
    if warnings:
        L += [f"- {untrusted(w)}" for w in warnings]
        L.append("\n_Drupal ai_eval warns when the judge and the model under test share a "
                 "family (a judge may prefer its own family's answers); dotnet/skills never "
                 "grades an agent by its own family. The self-preference row below measures "
                 "it when the panel spans two families._\n")
    else:
        L.append(f"_No label is graded by its own family (judges: "
                 f"{_names(audit.get('judges') or []) or 'none recorded'})._\n")

    panel = audit.get("panel")
    L.append("### Panel agreement\n")
    if not panel:
        L.append("_One judge graded this week. `--skill-lift-judges=a,b,c` (or `skilllift "
                 "judge WEEK --judges a,b,c`, no agent call) grades every run with each judge "
                 "and reports their agreement here._\n")
    else:
        L.append(f"Judges {_names(panel['judges'])}; {panel['items']} graded items of "
                 f"{panel['runs']} runs, {panel['disagreed_items']} of them contested "
                 "(the judges disagreed; the majority counts, a tie by the tie rule).\n")
        L.append(f"- Krippendorff's alpha (nominal): **{fmt(panel['alpha'])}**, 95% CI "
                 f"{_ci(panel['alpha_ci95'])} ({panel['alpha_resamples']} bootstrap "
                 "resamples of runs)\n")
        L += md_table(["judge A", "judge B", "items", "agreement", "Cohen's kappa"],
                      [[untrusted(p["a"]), untrusted(p["b"]), p["items"],
                        fmt(p["agreement"]), fmt(p["kappa"])] for p in panel["kappa"]])
        L.append("")
        judges = panel["judges"]
        L += md_table(["model", "panel lift", *[f"lift by {untrusted(j)}" for j in judges]],
                      [[label, signed(row.get("panel")), *[signed(row.get(j)) for j in judges]]
                       for label, row in panel["lift"].items()])
        L.append("\n_Must-coverage lift (with-skill − no-skill, mean over prompts) as the panel "
                 "and as each judge alone graded the same answers: a headline that moves with "
                 "the judge depends on who graded._\n")

    L.append("### Bias audit\n")
    prefs = audit.get("self_preference") or {}
    if prefs:
        L += md_table(["model", "family", "lift by own family", "lift by others",
                       "difference ± SE", "prompts"],
                      [[label, p["family"], signed(p["lift_own"]), signed(p["lift_other"]),
                        f"{signed(p['difference'])} ± {fmt(p['difference_se'])}",
                        p["n_prompts"]] for label, p in prefs.items()])
        L.append("\n_Self-preference: the lift as graded by the agent's own family's judges "
                 "minus the lift by the other judges (paired over prompts)._\n")
    leakage = audit.get("leakage") or {}
    if leakage:
        L += md_table(["model", "arm", "runs", "answers naming the skill", "masked"],
                      [[label, arm, c["runs"], c["leaking"], c["masked"]]
                       for label, arms in leakage.items() for arm, c in sorted(arms.items())])
        L.append("\n_Arm leakage: an answer that names its skill family or speaks of \"the "
                 "installed skill\" / SKILL.md tells the judge its arm (SCORING.md requires a "
                 "blind judge). Such spans are masked before the judge sees the answer "
                 "(`--skill-lift-judge-mask=off` keeps them), in both arms._\n")
    verbosity = audit.get("verbosity") or {}
    if verbosity:
        L += md_table(["model", "r(length, coverage) no-skill", "with-skill", "lift",
                       "lift at equal length", "flag"],
                      [[label, fmt(v["length_credit_r"].get("no-skill")),
                        fmt(v["length_credit_r"].get("with-skill")), signed(v["lift"]),
                        signed(v["lift_length_adjusted"]),
                        "⚠ lift may partly reflect longer answers" if v["flag"] else ""]
                       for label, v in verbosity.items()])
        L.append(f"\n_Verbosity: the correlation of answer length and must coverage per arm, "
                 f"and the lift with answer length as a covariate (per-prompt differences "
                 f"regressed on the length differences; the intercept). Flagged when it is "
                 f"{audit.get('verbosity_gap', 0.1):g} or more below the lift._\n")
    return L
