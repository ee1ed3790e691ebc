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
    # The CLI's rate-limit retries (HTTP 429/529) during the run, and the wait they announced
    # (run.ratelimits): a throttled run's timing changed; Run health compares its scores.
    "rate_limit_retries", "rate_limit_wait_ms",
    # Task runs (Harbor tasks, docs/tasks.md): the verifier's primary reward, else empty.
    "task", "reward",
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
    # A panel's per-judge verdicts (--skill-lift-judges): "judge=verdict;judge=verdict".
    "judge_votes",
    # The judge's short reason for a missing/absent/violated verdict (model text: escape it
    # wherever it is shown); empty for a week graded before the judge gave reasons.
    "judge_reason",
)

ITEM_TYPES: tuple[str, ...] = ("must", "bonus", "avoid")

#: The verdicts the judge gives a short reason for: what the answer lacks (missing, absent)
#: or does wrong (violated).
NEEDS_REASON: frozenset[str] = frozenset({"missing", "absent", "violated"})

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
