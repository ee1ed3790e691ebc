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

from .test_report_compare_weeks import edit_csv


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


def _history_weeks(weekly: Path, judges: dict[str, str]) -> None:
    """Three earlier runs in the history, each with a week folder and its week.json."""
    from pytest_skilllift.week import identity as ident
    from pytest_skilllift.week.history import HistoryRow, upsert_history

    from .test_week_identity import make

    rows = []
    for key, lift in zip(judges, (0.20, 0.30, 0.25), strict=True):
        rows.append(HistoryRow(key, f"{key}T090000Z", "sonnet", lift, 0.05))
        (weekly / key).mkdir(parents=True)
        ident.write_week_record(weekly / key, ident.WeekRecord(
            identity=make(judge_model=judges[key])))
    upsert_history(weekly / "scorecard-history.csv", rows)


def test_between_week_sigma_pools_only_comparable_weeks_and_names_them(tmp_path: Path) -> None:
    from pytest_skilllift.week import identity as ident

    from .test_week_identity import make
    from .test_week_io import write_week

    weekly = tmp_path / "weekly"
    same = make().judge_model
    _history_weeks(weekly, {"20260711": same, "20260718": "claude-opus-5", "20260725": same})
    w = write_week(weekly / "20260801")
    ident.write_week_record(w, ident.WeekRecord(identity=make()))
    s = summarize_week(w, plots=False)
    h = s.data["history"]
    # 20260718 was graded by another judge: not pooled, so this is run 3 of 4, not 4
    assert h["n_runs"] == 3 and not h["ready"]
    assert [p["run_key"] for p in h["pooled_runs"]] == ["20260711", "20260725"]
    assert h["not_pooled_runs"] == [{"run_key": "20260718",
                                     "reason": f"judge model: 'claude-opus-5' → {same!r}"}]
    assert "this is run 3 of 4" in s.markdown
    assert "- not pooled: `20260718` — judge model: 'claude-opus-5' →" in s.markdown
    assert "- pooled (between-week σ, run count): `20260711`, `20260725`" in s.markdown


def test_between_week_sigma_of_comparable_weeks_only(tmp_path: Path) -> None:
    from pytest_skilllift.week import identity as ident

    from .test_week_identity import make
    from .test_week_io import write_week

    weekly = tmp_path / "weekly"
    same = make().judge_model
    _history_weeks(weekly, {"20260711": same, "20260718": same, "20260725": same})
    # a fourth, non-comparable run just before this week: it is not the "previous run"
    from pytest_skilllift.week.history import HistoryRow, upsert_history

    upsert_history(weekly / "scorecard-history.csv",
                   [HistoryRow("20260728", "20260728T090000Z", "sonnet", 0.9, 0.05)])
    (weekly / "20260728").mkdir()
    ident.write_week_record(weekly / "20260728", ident.WeekRecord(identity=make(
        judge_samples=3)))
    w = write_week(weekly / "20260801")
    ident.write_week_record(w, ident.WeekRecord(identity=make()))
    s = summarize_week(w, plots=False)
    v = s.data["history"]["per_model"]["sonnet"]
    assert s.data["history"]["n_runs"] == 4 and v["prev_key"] == "20260725"
    import numpy as np

    assert v["between"] == pytest.approx(float(np.std([0.20, 0.30, 0.25], ddof=1)))


def test_pool_decisions_without_week_json_say_why(tmp_path: Path) -> None:
    from pytest_skilllift.week import identity as ident
    from pytest_skilllift.week.history import HistoryRow, pool_decisions

    from .test_week_identity import make

    rows = [HistoryRow(k, f"{k}T09Z", "sonnet", 0.2, 0.05)
            for k in ("20260711", "20260718", "20260801")]
    weekly = tmp_path / "weekly"
    for k in ("20260711", "20260718", "20260801"):
        (weekly / k).mkdir(parents=True)
    # neither has a week.json (a qdrant pipeline history): pooled, marked as not checked
    d = pool_decisions(rows, "20260801", weekly)
    assert [(x.run_key, x.pooled) for x in d] == [("20260711", True), ("20260718", True)]
    assert all("identity not checked" in x.reason for x in d)
    # this week has one, the earlier ones not: they cannot be checked, so not pooled
    ident.write_week_record(weekly / "20260801", ident.WeekRecord(identity=make()))
    (weekly / "20260718" / "week.json").write_text("{not json", encoding="utf-8")
    d = pool_decisions(rows, "20260801", weekly)
    assert not any(x.pooled for x in d)
    assert "20260711 has no week.json, the other has one" in d[0].reason
    assert d[1].reason.startswith("week.json unreadable:")


def test_history_without_week_json_pools_only_weeks_whose_csvs_match(tmp_path: Path) -> None:
    """Weeks the qdrant pipeline wrote have no week.json: the real week beside three weeks of
    entirely other prompts was pooled with them (their lifts entered σ). Now what the CSVs
    show — prompts, models, item texts — is compared."""
    from pytest_skilllift.week.history import HistoryRow, pool_decisions

    from .test_week_io import write_week

    weekly = tmp_path / "weekly"
    write_week(weekly / "20260711", prompts=("other-a", "other-b", "other-c"))
    write_week(weekly / "20260718")  # the same prompts as 20260801
    write_week(weekly / "20260725", models=("sonnet", "haiku"))
    write_week(weekly / "20260801")
    rows = [HistoryRow(k, f"{k}T09Z", "sonnet", 0.2, 0.05)
            for k in ("20260711", "20260718", "20260725", "20260801")]
    d = {x.run_key: x for x in pool_decisions(rows, "20260801", weekly)}
    assert not d["20260711"].pooled and d["20260711"].reason.startswith(
        "prompts differ (0 in common")
    assert d["20260718"].pooled and "compared from the CSVs" in d["20260718"].reason
    assert not d["20260725"].pooled and d["20260725"].reason.startswith("models differ")
    # an edited rubric item: the same prompts and models, other item texts
    edit_csv(weekly / "20260718" / "scores.csv", lambda r: r["prompt"] == "p-b"
             and r["item_type"] == "must", {"item_text": "another must"})
    d = {x.run_key: x for x in pool_decisions(rows, "20260801", weekly)}
    assert not d["20260718"].pooled
    assert d["20260718"].reason == "item texts differ for 1 prompt(s): p-b"
