"""Issue: numbers a statistician signs — the three counting bugs, on copies of the real week.

* ``trigger_miss_rate`` (gate metric and ``models.*.trigger_miss_rate``) counts completed
  with-skill runs only, as the Activation section does;
* "lift sourced from the published site" counts every with-skill run that fetched the site;
* between-week σ and "run N of 4" pool only weeks comparable with this one, and name them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_skilllift.report import gates
from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.report.verdicts import WeekMeasures

from .test_compare_weeks import edit_csv


@pytest.fixture
def week(reference_data: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "weekly" / "20260808"
    shutil.copytree(reference_data / "qdrant-skills" / "weekly" / "20260808", dst)
    return dst


def _errored_haiku_runs(week: Path, n: int) -> int:
    """Make ``n`` haiku with-skill runs that reached the skill errored (exit code 1) before
    any activation (activation none, as an outage leaves it)."""
    seen = {"n": 0}

    def pick(r: dict[str, str]) -> bool:
        hit = ((r["model"], r["condition"], r["skill_activation"]) == ("haiku", "with-skill",
                                                                       "skill_tool")
               and seen["n"] < n)
        seen["n"] += hit
        return hit

    return edit_csv(week / "manifest.csv", pick, {"exit_code": "1", "skill_activation": "none"})


def test_trigger_miss_rate_counts_completed_runs_only(week: Path) -> None:
    before = summarize_week(week, write=False, plots=False)
    assert before.data["models"]["haiku"]["trigger_miss_rate"] == pytest.approx(7 / 52)
    assert _errored_haiku_runs(week, 8) == 8
    s = summarize_week(week, write=False, plots=False)
    # 8 errored runs say nothing about the description: 7 misses of 44 completed runs
    # (on today's code 15/52 = 0.288)
    assert s.data["models"]["haiku"]["trigger_miss_rate"] == pytest.approx(7 / 44)
    assert s.data["activation_summary"]["excluded_runs"] == 8
    measures = WeekMeasures(s.week, s.aggregates, 0.7, card=s.data)
    assert measures.value("trigger_miss_rate", "haiku", None, None) == pytest.approx(7 / 44)
    # the gate reads the same number
    gs, _ = gates.load_gates(["haiku.trigger_miss_rate<0.2"],
                             gates.Scopes(tuple(s.week.models), tuple(s.week.prompts)))
    report = gates.evaluate(gs, measures, gates.CoverageGuard(10, 10, 0.0))
    assert report.results[0].measured == pytest.approx(7 / 44) and report.results[0].passed


def test_site_sourced_lift_counts_every_run_that_fetched_the_site(week: Path) -> None:
    s = summarize_week(week, write=False, plots=False)
    act = s.data["activation_summary"]
    assert act["web_fetch_runs"] == 0  # no run reached the skill through the site alone
    assert act["site_fetch_runs"] == 11  # but 11 of 104 fetched it
    assert "published site (with-skill runs that fetched the skills site, whatever else " \
           "they read): **11**" in s.markdown
