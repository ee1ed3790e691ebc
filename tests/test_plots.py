"""Every plot fits its text: no title, label or tick label is cut off at the figure's edge."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

from pytest_skilllift.report import plots
from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.week.history import HistoryRow

REF_WEEK = Path(__file__).resolve().parent / "fixtures" / "data" / "qdrant-skills" / "weekly" / (
    "20260808")
BANNER = ("DEMO — scripted models: every answer and grade below comes from the package's "
          "scripted Messages API stand-in, not from Claude. Numbers show the pipeline, not a "
          "skill's real value.")


def cut_off(fig: Figure) -> list[str]:
    """The texts whose drawn extent leaves the figure (1 px of slack)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    box = fig.bbox
    out = []
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        e = t.get_window_extent(renderer)
        if e.x0 < box.x0 - 1 or e.y0 < box.y0 - 1 or e.x1 > box.x1 + 1 or e.y1 > box.y1 + 1:
            out.append(t.get_text()[:60])
    return out


@pytest.fixture(scope="module")
def card(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    week = tmp_path_factory.mktemp("plots") / "20260808"
    shutil.copytree(REF_WEEK, week)
    return dict(summarize_week(week, write=False).data)


@pytest.mark.parametrize("banner", [None, BANNER])
def test_forest_plot_fits_its_text(card: dict[str, Any], banner: str | None) -> None:
    fig = plots.forest_figure(dict(card, banner=banner))  # type: ignore[arg-type]
    assert fig is not None
    assert cut_off(fig) == []


def test_forest_plot_fits_one_model_and_a_long_prompt_name(card: dict[str, Any]) -> None:
    d = copy.deepcopy(card)
    d["banner"] = BANNER
    d["model_order"] = ["haiku"]
    d["prompts"] = [dict(r, prompt=r["prompt"] + "-with-a-much-longer-name-than-usual-x" * 2)
                    if i == 0 else r for i, r in enumerate(d["prompts"]) if r["model"] == "haiku"]
    fig = plots.forest_figure(d)  # type: ignore[arg-type]
    assert fig is not None
    assert cut_off(fig) == []


def test_trend_plot_fits_its_text() -> None:
    rows = [HistoryRow(f"2026{m:02d}{d:02d}", f"2026{m:02d}{d:02d}T090000Z", model, 0.1, 0.05)
            for m, d in ((7, 4), (7, 11), (7, 18), (7, 25), (8, 1))
            for model in ("sonnet", "haiku")]
    fig = plots.trend_figure(rows, ["sonnet", "haiku"])
    assert fig is not None
    assert cut_off(fig) == []
