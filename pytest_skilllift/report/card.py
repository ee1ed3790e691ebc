"""The scorecard's sections, in order, and the type of scorecard.json.

Each section is one module in ``report/sections/`` with ``build(ctx)`` (the week's numbers →
its scorecard.json keys, a TypedDict) and ``render(card)`` (scorecard.json → its markdown
lines).  ``summarize`` builds the card by calling every ``build`` in ``SECTIONS`` order (that
order is also scorecard.json's key order); ``scorecard.render_markdown`` joins every
``render``.  To add a section: write its module, add it to ``SECTIONS`` and its ``Data`` to
``Scorecard``'s bases below (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from pytest_skilllift.report.sections import (
    activation,
    audit,
    avoid,
    baseline,
    cells,
    cost,
    coverage,
    custom_checks,
    estimate,
    header,
    health,
    improvements,
    judge,
    lift,
    noise,
    plots,
    prompts,
    provenance,
    ratelimits,
    reliability,
    rewards,
    scale,
    selfserved,
    task_rubric,
    triggering,
    versions,
    withall,
    wow,
)

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context


class Scorecard(
    header.Data, lift.Data, rewards.Data, task_rubric.Data, versions.Data, withall.Data,
    noise.Data, wow.Data, cells.Data,
    reliability.Data, prompts.Data,
    activation.Data, audit.Data, improvements.Data, triggering.Data,
    selfserved.Data, avoid.Data, custom_checks.Data, coverage.Data, cost.Data, estimate.Data,
    scale.Data, health.Data, ratelimits.Data, judge.Data, provenance.Data, baseline.Data,
):
    """scorecard.json: every section's keys (all numbers unrounded; renderers round)."""


@dataclass(frozen=True)
class Section:
    """One scorecard section: its builder (None when its data is filled in elsewhere, like
    the plots drawn after the card is built) and its markdown renderer."""

    name: str
    build: Callable[[Context], Mapping[str, object]] | None
    render: Callable[[Scorecard], list[str]]


#: The sections in scorecard order (markdown) — also scorecard.json's key order.
SECTIONS: tuple[Section, ...] = (
    Section("header", header.build, header.render),
    Section("lift", lift.build, lift.render),
    Section("rewards", rewards.build, rewards.render),
    Section("task-rubric", task_rubric.build, task_rubric.render),
    Section("versions", versions.build, versions.render),
    Section("with-all", withall.build, withall.render),
    Section("noise-floor", noise.build, noise.render),
    Section("week-over-week", wow.build, wow.render),
    Section("cells", cells.build, cells.render),
    Section("reliability", reliability.build, reliability.render),
    Section("prompts", prompts.build, prompts.render),
    Section("activation", activation.build, activation.render),
    Section("audit", audit.build, audit.render),
    Section("improvements", improvements.build, improvements.render),
    Section("triggering", triggering.build, triggering.render),
    Section("baseline-self-served", selfserved.build, selfserved.render),
    Section("avoid-violations", avoid.build, avoid.render),
    Section("custom-checks", custom_checks.build, custom_checks.render),
    Section("coverage", coverage.build, coverage.render),
    Section("cost-time", cost.build, cost.render),
    Section("cost-estimate", estimate.build, estimate.render),  # inside Cost & time
    Section("spend-cap-and-shards", scale.build, scale.render),
    Section("run-health", health.build, health.render),
    Section("rate-limits", ratelimits.build, lambda card: []),  # its lines: in Run health
    Section("judge-reliability", judge.build, judge.render),
    Section("provenance", provenance.build, provenance.render),
    Section("baseline-reuse", baseline.build, baseline.render),  # inside Provenance
    Section("plots", None, plots.render),
)


def build_card(ctx: Context, *,
               when_built: Mapping[str, Callable[[Scorecard], None]] | None = None) -> Scorecard:
    """Every section's keys, built in ``SECTIONS`` order.

    ``when_built`` maps a section name to a callback given the card so far once that section
    is built (the plots are handed to their drawer as soon as their inputs exist, so they
    are drawn while the later sections are built).
    """
    card: dict[str, object] = {}
    for section in SECTIONS:
        if section.build is not None:
            card.update(section.build(ctx))
        if when_built and section.name in when_built:
            when_built[section.name](cast("Scorecard", card))
    # Each builder returns its own TypedDict; together they are the Scorecard.
    return cast("Scorecard", card)


def render_sections(card: Scorecard) -> list[str]:
    """Every section's markdown lines, in order."""
    lines: list[str] = []
    for section in SECTIONS:
        lines += section.render(card)
    return lines
