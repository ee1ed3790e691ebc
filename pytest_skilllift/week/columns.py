"""Column names and verdict vocabularies shared by the ledger, the judge and the stats.

These are the qdrant pipeline's contracts (qdrant/skills SCORING.md, "Outputs"): the week
directory stays readable by either tool, so the order of the base columns is fixed and ours
come after.
"""

from __future__ import annotations

#: The 23 qdrant manifest columns, in their order.
MANIFEST_COLUMNS: tuple[str, ...] = (
    "prompt", "skill_family", "skill_leaf", "model", "condition", "rep", "run_id",
    "exit_code", "skills_sha", "timestamp", "skill_available", "skill_activation",
    "reached_leaf", "fetched_site", "fetched_count", "model_snapshot", "cli_version",
    "total_cost_usd", "num_turns", "result_subtype", "budget_hit", "signals_ok", "duration_ms",
)
#: Our extra manifest columns, written after the qdrant ones.
MANIFEST_EXTRA_COLUMNS: tuple[str, ...] = (
    "run_status", "run_error", "runner", "model_id", "started_utc", "ended_utc",
    "wall_ms", "invocation_status", "top_level_only", "permission_denials",
    # --skill-lift-baseline-from: the week a no-skill run was copied from, else why not.
    "baseline_from", "baseline_reason",
)

#: The 12 qdrant scores columns, in their order.
SCORES_COLUMNS: tuple[str, ...] = (
    "prompt", "skill", "model", "condition", "rep", "item_type", "item_text", "verdict",
    "credit", "contribution", "contested", "evidence_quote",
)
#: Our extra scores columns.
#: ``claimed_verdict``/``claimed_evidence``: the judge's met/violated and its quote when the
#: quote was not found in the answer and the item was recorded with the negative verdict.
SCORES_EXTRA_COLUMNS: tuple[str, ...] = (
    "item_index", "evidence_ok", "run_id", "claimed_verdict", "claimed_evidence",
)

CONDITIONS: tuple[str, str] = ("no-skill", "with-skill")
NO_SKILL, WITH_SKILL = CONDITIONS
#: Arms beyond the lift's two: ``with-all`` installs every family of the skills root (a skill's
#: lift among its siblings), ``no-skill-b`` is a second no-skill arm (an A/A week measures the
#: false-lift rate).  Opt-in (``--skill-lift-conditions``, ``--skill-lift-aa``).
WITH_ALL, NO_SKILL_B = "with-all", "no-skill-b"
#: ``with-skill@REF``: the prompt's family as it was at revision REF of the skills repository
#: (a git rev: ``HEAD~1``, a tag, a sha; or a directory), installed like with-skill — did an
#: edit of the skill help (docs/versions.md). A week holds at most one REF; the arm's name in
#: ids, the manifest and scores.csv is the REF as written (``with-skill@HEAD~1``), its code in
#: the tables this placeholder's index (:func:`arm_of`).
WITH_REF_PREFIX = "with-skill@"
WITH_REF = "with-skill@REF"
#: Every condition a week may hold; a condition's code in the tables is its index here, so
#: the lift's two arms keep codes 0 and 1 (any ``with-skill@…`` has ``WITH_REF``'s).
ARMS: tuple[str, ...] = (*CONDITIONS, WITH_ALL, NO_SKILL_B, WITH_REF)
#: Arms whose runs install skills (the availability check and the audit apply to them).
SKILL_ARMS: frozenset[str] = frozenset({WITH_SKILL, WITH_ALL, WITH_REF})


def arm_ref(condition: str) -> str | None:
    """``"with-skill@HEAD~1"`` → ``"HEAD~1"``; None for every other condition."""
    if condition.startswith(WITH_REF_PREFIX) and condition != WITH_REF:
        ref = condition[len(WITH_REF_PREFIX):]
        return ref or None
    return None


def arm_of(condition: str) -> str:
    """The arm a condition belongs to: itself, or ``WITH_REF`` for any ``with-skill@REF``."""
    return WITH_REF if arm_ref(condition) is not None else condition


def arm_code(condition: str) -> int:
    """A condition's code in the tables (its arm's index in :data:`ARMS`); -1 if unknown."""
    arm = arm_of(condition)
    return ARMS.index(arm) if arm in ARMS else -1

ITEM_TYPES: tuple[str, ...] = ("must", "bonus", "avoid")

#: Verdict vocabulary per item type: (positive, negative). Positive earns credit 1.0.
VERDICTS: dict[str, tuple[str, str]] = {
    "must": ("met", "missing"),
    "bonus": ("met", "absent"),
    "avoid": ("violated", "clean"),
}

#: Trajectory-audit invocation status of a with-skill run (``invocation_status``; the
#: SkillsBench trajectory audit): the skill was loaded and followed into a linked sub-file when
#: it links any (VERIFIED), loaded but stopped at the top level (PARTIAL), or never read.
VERIFIED, PARTIAL, NOT_INVOKED = "VERIFIED", "PARTIAL", "NOT_INVOKED"
INVOCATION_STATUSES: tuple[str, ...] = (VERIFIED, PARTIAL, NOT_INVOKED)

#: Activation sources in precedence order (qdrant/skills SCORING.md: skill_tool > file_read >
#: web_fetch > none).
ACTIVATIONS: tuple[str, ...] = ("skill_tool", "file_read", "web_fetch", "none")


def credit_for(item_type: str, verdict: str) -> float:
    """Raw credit of a verdict: 1.0 for met/violated, 0.0 for missing/absent/clean.

    Raises ``ValueError`` naming the vocabulary when the verdict does not belong to the type.
    """
    try:
        positive, negative = VERDICTS[item_type]
    except KeyError:
        raise ValueError(
            f"unknown item type {item_type!r}; expected one of {', '.join(ITEM_TYPES)}"
        ) from None
    if verdict == positive:
        return 1.0
    if verdict == negative:
        return 0.0
    raise ValueError(
        f"verdict {verdict!r} is not valid for a {item_type} item; "
        f"expected {positive!r} or {negative!r}"
    )


def contribution_for(item_type: str, credit: float) -> float:
    """Signed contribution: avoid credit counts against the answer (inverted polarity)."""
    return -credit if item_type == "avoid" else credit
