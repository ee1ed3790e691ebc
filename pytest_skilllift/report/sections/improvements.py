"""Suggested improvements: the SkillsBench trajectory audit's cross-model patterns, per skill.

* hurt on every model (Δ ≤ −0.20 each): flag it; not a blocker (a strong model passing
  without the skill is acceptable);
* no-op on every model (|Δ| < 0.10 each): the skill may be redundant for these models;
* never invoked on any model: never discovered, likely its description or placement;
* misuse on the strongest model: make the skill's workflow more directive.

Each names the skill (the family its prompt installs, and the prompt: qdrant/skills SCORING.md
has one prompt per skill) and its evidence.  None is a blocker: they are the report's list of
what to look at next.  The strongest model is the one with the highest no-skill must
coverage this week.  Misuse is the mechanical SB-3c check (SKILL.md read, no linked file
opened); SB-3a (workflow steps not followed) needs a reader of the workflow and is not
detected.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.report.markdown import signed, untrusted
from pytest_skilllift.report.quotes import Quote, verdict_quotes
from pytest_skilllift.report.sections.audit import impact_labels
from pytest_skilllift.report.sections.prompts import prompt_rows
from pytest_skilllift.trace import audit
from pytest_skilllift.week.columns import INVOCATION_STATUSES, NOT_INVOKED
from pytest_skilllift.week.files import AUDIT_FILE
from pytest_skilllift.week.tables import distinct

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

HURT_ALL, NO_OP_ALL, NEVER_INVOKED, MISUSE, SATURATED_ALL = (
    "hurt on every model", "no-op on every model", "never invoked", "misuse on the strongest model",
    "saturated on every model")
SUGGESTIONS = {
    HURT_ALL: "review the guidance the with-skill answers followed (the misled quote below); "
              "not a blocker on its own: a strong model passing without the skill is fine",
    NO_OP_ALL: "the skill may be redundant for these models: retire or merge it, or give it "
               "what the models do not already know",
    NEVER_INVOKED: "the skill is never discovered: likely its description (when to use it) or "
                   "its placement",
    SATURATED_ALL: "the prompt is at the ceiling with and without the skill, so it cannot show "
                   "a lift: add a harder prompt for this skill before judging it (retire or "
                   "merge only when more than one prompt agrees)",
    MISUSE: "make the skill's workflow more directive: say which linked file to open for which "
            "question, so the strongest model goes past SKILL.md",
}


class Improvement(TypedDict):
    """``improvements.items[]``: one pattern found for one skill."""

    #: The installed family, and the prompt that measures it (one prompt per skill).
    skill: str
    prompt: str
    pattern: str
    suggestion: str
    evidence: str


class Improvements(TypedDict):
    """Suggested improvements per skill, and the model they are drawn from."""
    strongest_model: str | None
    items: list[Improvement]


class Data(TypedDict):
    """The Suggested improvements section's keys in scorecard.json."""
    improvements: Improvements


def _strongest(ctx: Context) -> str | None:
    week, agg = ctx.week, ctx.agg
    if not week.models:
        return None
    if agg is not None:
        base = agg.cell_must[:, 0]
        if np.any(~np.isnan(base)):
            return week.models[int(np.nanargmax(base))]  # ties: the conventional order
    return week.models[0]


def _quote_text(q: Quote | None) -> str:
    if q is None:
        return ""
    ev = q["evidence"] if len(q["evidence"]) <= 160 else q["evidence"][:159] + "…"
    why = q.get("reason", "")
    why = why if len(why) <= 160 else why[:159] + "…"
    return (f"; {q['kind']} quote: {q['item_type']} “{q['item_text']}” "
            f"({q['condition']} r{q['rep']}: “{ev}”)"
            + (f"; the judge's reason ({q.get('reason_run', '')}): “{why}”" if why else ""))


def _audit_evidence(ctx: Context, run_id: str) -> str:
    try:
        data = json.loads((ctx.week.week_dir / run_id / AUDIT_FILE).read_text(encoding="utf-8"))
        return str(data["skill_invocation"]["evidence"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def build(ctx: Context) -> Data:
    """The Suggested improvements section's scorecard.json keys, from the week's numbers."""
    week = ctx.week
    family_of = week.prompt_family
    lifts: dict[str, dict[str, float]] = {}
    labels: dict[str, dict[str, str]] = {}
    ks: dict[str, int] = {}
    labels_of = ctx.shared(impact_labels)
    for r in ctx.shared(prompt_rows):
        if r["must_lift"] is not None:
            lifts.setdefault(r["prompt"], {})[r["model"]] = r["must_lift"]
            labels.setdefault(r["prompt"], {})[r["model"]] = labels_of[(r["prompt"], r["model"])]
            ks[r["prompt"]] = min(ks.get(r["prompt"], 10**9), r["reps_no"], r["reps_with"])
    # Per skill family, its prompts that show no effect on any model (no-op or saturated):
    # "retire or merge" on a saturated prompt needs more than one of them to agree.
    family_flat: dict[str, int] = {}
    for prompt, per in labels.items():
        if all(x in (audit.NO_OP, audit.SATURATED) for x in per.values()):
            fam = family_of.get(prompt) or prompt
            family_flat[fam] = family_flat.get(fam, 0) + 1
    quotes = ctx.shared(verdict_quotes)

    # With-skill runs (skill installed) per prompt: audit statuses and top-level-only runs.
    ws = ctx.with_skill_runs & (week.manifest.prompt >= 0) & (week.manifest.model >= 0)
    top = ctx.run_column("top_level_only") == 1
    strongest = _strongest(ctx)
    s_idx = week.models.index(strongest) if strongest is not None else -1
    not_invoked = INVOCATION_STATUSES.index(NOT_INVOKED)

    items: list[Improvement] = []
    P = len(week.prompts)
    # Each prompt's with-skill runs, as index arrays (run order kept): one grouping for the
    # week instead of a pass over every run for each prompt (10^4 prompts × 10^5 runs).
    ws_rows = np.flatnonzero(ws)
    ws_rows = ws_rows[np.argsort(week.manifest.prompt[ws_rows], kind="stable")]
    ws_prompt = week.manifest.prompt[ws_rows]
    bounds = np.searchsorted(ws_prompt, np.arange(P + 1)).tolist()
    with_runs = {week.prompts[p] for p in distinct(ws_prompt).tolist()}
    # The per-prompt counts in one bincount each (not a few numpy calls per prompt: on a week
    # of 5,000 prompts those small calls were most of this section's time); a prompt's runs
    # are sliced out only for the few prompts that get a NEVER_INVOKED or MISUSE item.
    inv_ws = week.manifest.invocation[ws_rows]
    audited_ws = inv_ws >= 0
    audited_of = np.bincount(ws_prompt[audited_ws], minlength=P).tolist()
    missed_of = np.bincount(ws_prompt[inv_ws == not_invoked], minlength=P).tolist()
    strong_ws = audited_ws & (week.manifest.model[ws_rows] == s_idx) & (s_idx >= 0)
    misused_of = np.bincount(ws_prompt[strong_ws & top[ws_rows]], minlength=P).tolist()
    p_of = {p: i for i, p in enumerate(week.prompts)}
    for prompt in sorted(set(lifts) | with_runs):
        p_idx = p_of[prompt]
        per_model = lifts.get(prompt, {})
        named = list(labels.get(prompt, {}).values())

        def shown(per_model: dict[str, float] = per_model, prompt: str = prompt) -> str:
            text = ", ".join(f"{m} {signed(d)}" for m, d in per_model.items())
            if per_model:
                text += f"; k = {ks.get(prompt, 0)} rep(s) per arm"
            return text

        def add(pattern: str, evidence: str, prompt: str = prompt) -> None:
            items.append({"skill": family_of.get(prompt) or prompt, "prompt": prompt,
                          "pattern": pattern, "suggestion": SUGGESTIONS[pattern],
                          "evidence": evidence})

        noisy = audit.WITHIN_REP_NOISE in named
        saturated = bool(named) and named.count(audit.SATURATED) == len(named)
        alone = family_flat.get(family_of.get(prompt) or prompt, 0) <= 1
        if saturated and alone:
            add(SATURATED_ALL, f"must coverage 1.0 in every rep of both arms on every model "
                               f"({shown()}), and no other prompt of the skill agrees")
        elif (per_model and not noisy
              and all(d <= audit.HURT_ALL_THRESHOLD + 1e-12 for d in per_model.values())):
            q = next((q for m in per_model if (q := quotes.get((prompt, m))) is not None), None)
            add(HURT_ALL, f"must lift {shown()}{_quote_text(q)}")
        audited, missed = audited_of[p_idx], missed_of[p_idx]
        # "retire or merge" needs a prompt not at the ceiling in both arms on some model, or
        # more than one prompt of the skill
        if (named and all(x in (audit.NO_OP, audit.SATURATED) for x in named)
                and not (saturated and alone)):
            read = audited - missed
            how = ((f"the skill was loaded in {read} of {audited} with-skill runs, so the models "
                    "likely already had the content" if read else "the skill was never read")
                   if audited else "invocation not recorded")
            add(NO_OP_ALL, f"|must lift| < {audit.IMPACT_THRESHOLD:.2f} on every model "
                           f"({shown()}); {how}")
        if audited and missed == audited:
            rows = ws_rows[bounds[p_idx]:bounds[p_idx + 1]]
            inv = week.manifest.invocation[rows]
            models = sorted({week.models[m] for m in week.manifest.model[rows[inv >= 0]].tolist()})
            add(NEVER_INVOKED, f"NOT_INVOKED in all {audited} audited with-skill runs "
                               f"({', '.join(models)})")
        if misused_of[p_idx]:
            rows = ws_rows[bounds[p_idx]:bounds[p_idx + 1]]
            inv = week.manifest.invocation[rows]
            strong = rows[(week.manifest.model[rows] == s_idx) & (inv >= 0)]
            misused = strong[top[strong]]
            first = week.run_ids(misused[:1].tolist())[0]
            ev = _audit_evidence(ctx, first)
            add(MISUSE, f"top-level only (SKILL.md read, no linked file opened) in "
                        f"{misused.size} of {strong.size} with-skill runs "
                        f"on {strongest}, the strongest model this week"
                        + (f"; e.g. {first}: {ev}" if ev else f"; e.g. {first}"))
    return {"improvements": {"strongest_model": strongest, "items": items}}


def render(card: Data) -> list[str]:
    """The Suggested improvements section of scorecard.md, as markdown lines."""
    imp = card.get("improvements")
    if not imp:
        return []
    L = ["## Suggested improvements\n"]
    if not imp["items"]:
        L.append("_None: no skill hurt or did nothing on every model, went uninvoked on every "
                 "model, or was misused on the strongest model._\n")
        return L
    for it in imp["items"]:
        L.append(f"- **{untrusted(it['skill'])}** (prompt {untrusted(it['prompt'])}) — "
                 f"{it['pattern']}: {it['suggestion']}.  \n  Evidence: "
                 f"{untrusted(it['evidence'])}")
    strongest = imp["strongest_model"]
    L.append("\n_The cross-model patterns of the SkillsBench trajectory audit; none is a "
             "blocker. A prompt measures one skill (its target SKILL.md, in the family it "
             f"installs); the strongest model ({strongest or 'n/a'}) is the one with the "
             "highest no-skill must coverage this week._\n")
    return L

