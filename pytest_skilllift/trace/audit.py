"""Trajectory audit: was the skill actually invoked, and how deeply (the SkillsBench trajectory
audit, SB-1 and SB-3c).

Statuses, made mechanical for Claude Code transcripts:

- ``NOT_INVOKED``: no skill was loaded — no successful ``Skill`` call ("Launching skill:")
  and no successful ``Read`` of a ``SKILL.md`` / file under ``.claude/skills/``.
- ``PARTIAL``: a skill was loaded but stopped at the top level: its body links sub-files
  (``references/*.md``, nested ``SKILL.md``) and none of them was opened (SB-3c).
- ``VERIFIED``: a skill was loaded and either links nothing further, or at least one linked
  sub-file was opened.

The audit's "workflow followed" and cargo-cult checks need an LLM reader; they are not
attempted here. Pure logic over a :class:`~pytest_skilllift.trace.transcript.Transcript`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_skilllift.trace.transcript import CLAUDE_SKILL_ROOT, ToolUse, Transcript
from pytest_skilllift.week.columns import NOT_INVOKED, PARTIAL, VERIFIED

if TYPE_CHECKING:  # numpy is imported where the report needs it, never by a run's audit
    import numpy as np
    import numpy.typing as npt

_SKILL_BODY_PREFIX = "Base directory for this skill:"
_MD_LINK = re.compile(r"\]\(([^)\s#]+\.md)\)")


@dataclass(frozen=True)
class InvocationAudit:
    """SB-1 ``skill_invocation`` plus the SB-3c ``top_level_only`` misuse flag."""

    status: str
    skills_read: tuple[str, ...]
    sub_files_read: tuple[str, ...]
    discovery_method: str  # "Skill tool" | "Read SKILL.md" | "none"
    top_level_only: bool
    #: Skill calls that failed (unknown skill, denied): attempts that delivered nothing.
    failed_invocations: int
    evidence: str


def _skill_dir(path: str, root: str = CLAUDE_SKILL_ROOT) -> str | None:
    """``<root>/<family>`` prefix of a path (root ``.claude/skills`` for Claude Code), or
    None when not under a skills dir."""
    norm = path.replace("\\", "/")
    m = re.search(rf"(^|.*/)({re.escape(root)}/[^/]+)/", norm)
    return m.group(2) if m else None


def _linked_files(transcript: Transcript) -> set[str]:
    """Relative ``.md`` links inside skill bodies the CLI delivered (Skill or Read)."""
    links: set[str] = set()
    bodies: list[str] = []
    for ev in transcript.events:
        if ev.get("type") != "user":
            continue
        msg = ev.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "text":
                text = str(block.get("text", ""))
                if text.startswith(_SKILL_BODY_PREFIX):
                    bodies.append(text)
    bodies.extend(
        u.result or "" for u in transcript.tool_uses
        if u.name == "Read" and u.effective and u.file_path.endswith("SKILL.md")
    )
    for body in bodies:
        for link in _MD_LINK.findall(body):
            if "://" not in link:
                links.add(link.lstrip("./"))
    return links


def _matches_family(use: ToolUse, family: str | None, root: str = CLAUDE_SKILL_ROOT) -> bool:
    if family is None:
        return True
    if use.name == "Skill":
        name = str(use.input.get("skill") or "").lstrip("/")
        return name == family or name.endswith(":" + family)
    return f"{root}/{family}/" in use.file_path.replace("\\", "/")


def audit_invocation(transcript: Transcript, *, family: str | None = None) -> InvocationAudit:
    """Invocation status of a run; ``family`` restricts it to the skill under test."""
    root = transcript.skill_root
    skill_calls = [u for u in transcript.calls("Skill") if _matches_family(u, family, root)]
    loaded_by_tool = [u for u in skill_calls if u.effective]
    failed = len(skill_calls) - len(loaded_by_tool)
    reads = [
        u for u in transcript.calls("Read")
        if u.effective and _skill_dir(u.file_path, root) and _matches_family(u, family, root)
    ]
    top_reads = [u for u in reads if _is_top_skill_md(u.file_path, root)]
    sub_reads = [u for u in reads if u not in top_reads]

    skills_read = tuple(
        [f"Skill:{u.input.get('skill')}" for u in loaded_by_tool]
        + [u.file_path for u in top_reads]
    )
    sub_files = tuple(u.file_path for u in sub_reads)
    if loaded_by_tool:
        method = "Skill tool"
    elif top_reads or sub_reads:
        method = "Read SKILL.md"
    else:
        method = "none"

    if method == "none":
        return InvocationAudit(
            NOT_INVOKED, (), (), "none", False, failed,
            f"no successful Skill call or Read under {root}/"
            + (f" ({failed} failed Skill call(s))" if failed else ""),
        )
    links = _linked_files(transcript)
    opened = {
        link for link in links if any(p.replace("\\", "/").endswith("/" + link) for p in sub_files)
    }
    top_level_only = bool(links) and not sub_files
    status = PARTIAL if top_level_only else VERIFIED
    if top_level_only:
        evidence = f"loaded via {method}; linked sub-files never opened: {sorted(links)[:5]}"
    elif sub_files:
        evidence = f"loaded via {method}; opened {len(sub_files)} sub-file(s)" + (
            f", {len(opened)} of {len(links)} linked" if links else "")
    else:
        evidence = f"loaded via {method}; the skill links no sub-files"
    return InvocationAudit(status, skills_read, sub_files, method, top_level_only, failed,
                           evidence)


def _is_top_skill_md(path: str, root: str = CLAUDE_SKILL_ROOT) -> bool:
    """``…/<root>/<family>/SKILL.md`` exactly (not a nested sub-skill)."""
    return re.search(rf"{re.escape(root)}/[^/]+/SKILL\.md$", path.replace("\\", "/")) is not None


def audit_record(audit: InvocationAudit) -> dict[str, object]:
    """The per-run ``audit.json`` in the SkillsBench audit schema (``skill_invocation``,
    ``skill_misuse``).

    ``partial_follow_through`` (SB-3a) needs the skill's workflow steps matched against the
    later tool calls; it is not detected here and is written as ``None`` (unknown), not False.
    """
    return {
        "skill_invocation": {
            "status": audit.status,
            "skills_read": list(audit.skills_read),
            "sub_files_read": list(audit.sub_files_read),
            "discovery_method": audit.discovery_method,
            "failed_invocations": audit.failed_invocations,
            "evidence": audit.evidence,
        },
        "skill_misuse": {
            "partial_follow_through": None,
            "top_level_only": audit.top_level_only,
            "evidence": audit.evidence if audit.top_level_only else "",
        },
    }


def excluded_record(run_status: str, reason: str) -> dict[str, object]:
    """``audit.json`` of a with-skill run that did not complete (outage, timeout, failed
    install, budget cap, a CLI that never started): no invocation status, because such a
    run cannot show whether the skill would have been reached. It is excluded from the
    invocation and trigger counts and named as excluded, never counted as NOT_INVOKED."""
    evidence = f"run did not complete ({run_status}: {reason}); excluded from the audit"
    return {
        "skill_invocation": {"status": None, "excluded": True, "run_status": run_status,
                             "evidence": evidence},
        "skill_misuse": {"partial_follow_through": None, "top_level_only": None,
                         "evidence": ""},
    }


# -- SB-2: skill impact (cross-trajectory) ----------------------------------------------------

HELPED, HURT, NO_OP = "helped", "hurt", "no-op"
#: |Δ| at which a prompt's must-coverage lift counts as a skill effect (SkillsBench: 10 pp).
IMPACT_THRESHOLD = 0.10
#: "Skills HURT for ALL agents (delta ≤ −20 pp on every model)" (SkillsBench aggregation).
HURT_ALL_THRESHOLD = -0.20
#: "Single-trial deltas with |Δ| < 30 pp are likely noise."
SINGLE_TRIAL_NOISE = 0.30


def impact_outcome(delta: float) -> str:
    """HELPED for Δ ≥ +10 pp, HURT for Δ ≤ −10 pp, NO-OP otherwise (SkillsBench SB-2)."""
    if delta >= IMPACT_THRESHOLD - 1e-12:
        return HELPED
    if delta <= -IMPACT_THRESHOLD + 1e-12:
        return HURT
    return NO_OP


WITHIN_REP_NOISE, SATURATED = "within rep noise", "saturated"
#: Every label a prompt's impact can carry, in the order the scorecard counts them.
IMPACT_LABELS = (HELPED, HURT, NO_OP, WITHIN_REP_NOISE, SATURATED)


def impact_label(delta: float, *, k: int, spread: float, saturated: bool) -> str:
    """The verdict the data can carry: :func:`impact_outcome`, except

    * ``saturated`` — must coverage 1.0 in every rep of both arms: the prompt is at its
      ceiling and cannot show a lift (not a no-op of the skill);
    * ``within rep noise`` — a helped / hurt |Δ| no larger than the prompt's own rep spread
      (``spread``: the widest min–max of its two arms), or a single-trial flip: k ≤ 2 reps
      and |Δ| < 0.30 (the SkillsBench audit's trial-count caveat).
    """
    return str(impact_labels_array([delta], [k], [spread], [saturated])[0])


def impact_labels_array(delta: npt.ArrayLike, k: npt.ArrayLike, spread: npt.ArrayLike,
                        saturated: npt.ArrayLike) -> np.ndarray:
    """:func:`impact_label` of many prompts at once (array-likes of one shape in, an object
    array of labels out): a week of 10⁴ prompts × models is labelled in one pass."""
    import numpy as np  # only the report needs it: a run's audit never does

    d = np.asarray(delta, float)
    out = np.full(d.shape, NO_OP, dtype=object)
    out[d >= IMPACT_THRESHOLD - 1e-12] = HELPED
    out[d <= -IMPACT_THRESHOLD + 1e-12] = HURT
    small = ((np.asarray(k) <= 2) & (np.abs(d) < SINGLE_TRIAL_NOISE - 1e-12))
    noisy = (out != NO_OP) & ((np.abs(d) <= np.asarray(spread, float) + 1e-12) | small)
    out[noisy] = WITHIN_REP_NOISE
    out[np.asarray(saturated, bool)] = SATURATED
    return out


def impact_flags(lifts: dict[str, dict[str, float]],
                 invocations: dict[str, dict[str, int]],
                 labels: dict[str, dict[str, str]] | None = None) -> list[str]:
    """The SkillsBench audit's PR-level patterns, per prompt across all models.

    ``lifts``: prompt → model → must-coverage lift; ``invocations``: prompt → status → runs.
    """
    flags = []
    for prompt in sorted(lifts):
        deltas = list(lifts[prompt].values())
        named = list((labels or {}).get(prompt, {}).values())
        if named and named.count(SATURATED) == len(named):
            flags.append(f"{prompt}: SATURATED on every model (must 1.0 in every rep of both "
                         "arms) — the prompt cannot show a lift")
        elif WITHIN_REP_NOISE in named or (named and SATURATED in named
                                           and all(x in (SATURATED, NO_OP) for x in named)):
            continue  # the data cannot carry a cross-model verdict for this prompt
        elif deltas and all(d <= HURT_ALL_THRESHOLD + 1e-12 for d in deltas):
            flags.append(f"{prompt}: skill HURT on every model (Δ ≤ −0.20 each)")
        elif deltas and all(impact_outcome(d) == NO_OP for d in deltas):
            flags.append(f"{prompt}: NO-OP on every model — skill may be redundant for "
                         "these models")
    for prompt in sorted(invocations):
        counts = invocations[prompt]
        total = sum(counts.values())
        if total and counts.get(NOT_INVOKED, 0) == total:
            flags.append(f"{prompt}: NOT_INVOKED in all {total} with-skill runs — skill never "
                         "discovered (a description / placement issue)")
    return flags
