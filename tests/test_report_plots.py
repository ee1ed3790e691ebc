"""Every plot fits its text: no title, label or tick label is cut off at the figure's edge."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

from pytest_skilllift.report import plot_inputs, plots
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


# --- plots a person reads: the banner's share, whole words, whole points, lift order --------


def _demo_like(card: dict[str, Any], n_prompts: int) -> dict[str, Any]:
    """The reference week cut to its first ``n_prompts`` prompts (the demo has 3), bannered."""
    keep = sorted({r["prompt"] for r in card["prompts"]})[:n_prompts]
    return dict(copy.deepcopy(card), banner=BANNER,
                prompts=[r for r in copy.deepcopy(card["prompts"]) if r["prompt"] in keep])


def _banner(fig: Figure) -> Text:
    (text,) = [t for t in fig.findobj(Text) if t.get_gid() == "banner"]
    return text


@pytest.mark.parametrize("n_prompts", [1, 3, 26])
def test_the_banner_takes_at_most_a_tenth_of_the_image(card: dict[str, Any],
                                                         n_prompts: int) -> None:
    fig = plots.forest_figure(_demo_like(card, n_prompts))  # type: ignore[arg-type]
    assert fig is not None
    fig.canvas.draw()
    extent = _banner(fig).get_window_extent(fig.canvas.get_renderer())  # type: ignore[attr-defined]
    assert extent.height / fig.bbox.height <= plots.MAX_BANNER_SHARE
    assert cut_off(fig) == []


def test_no_word_is_broken_across_lines(card: dict[str, Any]) -> None:
    fig = plots.forest_figure(_demo_like(card, 3))  # type: ignore[arg-type]
    assert fig is not None
    lines = _banner(fig).get_text().split("\n")
    assert len(lines) >= 2  # it did wrap
    assert " ".join(lines).split() == BANNER.split()  # "stand-in" whole, nothing split
    assert plots.wrap_words("a stand-in xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx b", 10) == [
        "a stand-in", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "b"]


def test_points_at_the_ends_of_the_axis_are_not_cut_off(card: dict[str, Any]) -> None:
    d = _demo_like(card, 3)
    for r in d["prompts"]:  # a prompt at each extreme: lift +1 and -1
        if r["prompt"] == d["prompts"][0]["prompt"]:
            r.update(must_lift=1.0, must_with_min=1.0, must_with_max=1.0, must_no_min=0.0,
                     must_no_max=0.0)
        elif r["prompt"] == d["prompts"][-1]["prompt"]:
            r.update(must_lift=-1.0, must_with_min=0.0, must_with_max=0.0, must_no_min=1.0,
                     must_no_max=1.0)
    fig = plots.forest_figure(d)  # type: ignore[arg-type]
    assert fig is not None
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    for ax in fig.axes:
        lo, hi = ax.get_xlim()
        # A margin of at least 5% of the axis beyond each extreme: the marker and the end of
        # its rep range read clear of the panel's edge (1.05 left 2%: points touched the edge).
        assert (-1.0 - lo) / (hi - lo) >= 0.05 and (hi - 1.0) / (hi - lo) >= 0.05
        # Each marker drawn at ±1 lies wholly inside its panel.
        for line in ax.get_lines():
            if line.get_marker() in ("o",):
                box = line.get_window_extent(renderer)
                assert ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1


def test_prompts_are_ordered_by_lift_largest_on_top(card: dict[str, Any]) -> None:
    fig = plots.forest_figure(card)  # type: ignore[arg-type]
    assert fig is not None
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()][::-1]  # top row first
    models = plot_inputs.forest_models(card)  # type: ignore[arg-type]
    mean = {}
    for p in labels:
        lifts = [r["must_lift"] for r in card["prompts"]
                 if r["prompt"] == p and r["model"] in models and r["must_lift"] is not None]
        mean[p] = sum(lifts) / len(lifts)
    assert [mean[p] for p in labels] == sorted(mean.values(), reverse=True)
    assert labels != sorted(labels)  # not the alphabet
