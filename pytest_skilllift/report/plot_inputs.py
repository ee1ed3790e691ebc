"""What the scorecard's plots will show, decided without matplotlib.

The summarizer needs to know which pictures a week gets (scorecard.md links them) before they
are drawn — they may be drawn in another process (``report.plot_drawing``) — and the plots
module needs the same selection to draw them: one definition, here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from pytest_skilllift.week.history import HistoryRow, run_order

#: The scorecard section after which every key the plots read is built (``card.SECTIONS``
#: order: the header, the lift, the prompts).
PLOT_INPUTS_BUILT = "prompts"

if TYPE_CHECKING:
    from pytest_skilllift.report.card import Scorecard
    from pytest_skilllift.report.sections.prompts import PromptRow


def forest_models(data: Scorecard) -> list[str]:
    """The models with a panel in the forest plot, in the scorecard's model order."""
    return [m for m in data.get("model_order", []) if m in data.get("models", {})]


def _forest_lifts(data: Scorecard) -> Iterator[tuple[PromptRow, float]]:
    """The prompt rows the forest plot draws (a must lift, in a model with a panel), each
    with its lift."""
    models = set(forest_models(data))
    return ((r, lift) for r in data.get("prompts", [])
            if r["model"] in models and (lift := r["must_lift"]) is not None)


def forest_rows(data: Scorecard) -> tuple[dict[tuple[str, str], PromptRow], dict[str, float]]:
    """The prompt rows the forest plot draws, by (prompt, model), and each prompt's largest
    |lift| over the models (empty: no forest plot this week)."""
    by_key: dict[tuple[str, str], PromptRow] = {}
    biggest: dict[str, float] = {}
    for r, lift in _forest_lifts(data):
        by_key[(r["prompt"], r["model"])] = r
        biggest[r["prompt"]] = max(biggest.get(r["prompt"], 0.0), abs(lift))
    return by_key, biggest


def has_forest(data: Scorecard) -> bool:
    """Whether the week gets a forest plot: some prompt has a must lift in some model."""
    return next(_forest_lifts(data), None) is not None


def has_trend(rows: Sequence[HistoryRow]) -> bool:
    """Whether the history gets a trend chart: at least two runs."""
    return len(run_order(rows)) >= 2


def forest_order(data: Scorecard, prompts: Sequence[str]) -> list[str]:
    """``prompts`` from the top row of the forest plot down: by the prompt's mean must lift
    over the models with a panel, largest first (ties and the prompts with no lift by name),
    so the eye reads the lift's ranking instead of the alphabet."""
    lifts: dict[str, list[float]] = {}
    for r, lift in _forest_lifts(data):
        lifts.setdefault(r["prompt"], []).append(lift)

    def key(p: str) -> tuple[float, str]:
        got = lifts.get(p)
        return (-(sum(got) / len(got)) if got else float("inf"), p)

    return sorted(prompts, key=key)
