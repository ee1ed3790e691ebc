"""Scorecard rendering: contract keys, sections, no silent caps, week-over-week, plots."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.report import scorecard
from pytest_skilllift.report.card import Scorecard
from pytest_skilllift.report.sections import prompts as prompts_section
from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.week.history import HistoryRow, upsert_history

from .test_week_io import write_week


@pytest.fixture
def data(tmp_path: Path) -> Scorecard:
    w = write_week(tmp_path / "weekly" / "20260801", models=("sonnet", "haiku"),
                   prompts=tuple(f"p{i}" for i in range(6)))
    return summarize_week(w, write=False).data


def test_json_contract_keys(data: Scorecard) -> None:
    for m in data["models"].values():
        assert {"must_no", "must_with", "must_lift", "must_lift_se", "ci_excludes_zero",
                "n_prompts", "bonus_delta", "avoid_delta", "cost_delta",
                "turns_delta"} <= set(m)
    assert {"model", "condition", "must_coverage", "bonus_rate", "avoid_violations",
            "composite", "mean_cost", "mean_turns", "n"} <= set(data["cells"][0])
    assert {"prompt", "model", "must_no", "must_with", "must_lift", "composite_no",
            "composite_with"} <= set(data["prompts"][0])
    assert {"graded_runs", "total_runs", "dropped"} <= set(data["coverage"])
    act = data["activation"][0]
    assert {"prompt", "skill_family", "with_skill_runs", "activated_runs", "counts",
            "reached_leaf"} <= set(act)
    assert set(act["counts"]) == {"skill_tool", "file_read", "web_fetch", "none"}
    assert {"per_model", "seed", "n_boot"} <= set(data["bootstrap"])
    assert {"per_model", "power", "alpha"} <= set(data["mdl"])
    assert {"n_runs", "ready", "per_model"} <= set(data["history"])
    text = scorecard.render_json(data)
    assert json.loads(text) == json.loads(json.dumps(data))


def test_all_sections_present_in_order(data: Scorecard) -> None:
    md = scorecard.render_markdown(data)
    titles = [ln[3:] for ln in md.splitlines() if ln.startswith("## ")]
    assert titles == [
        "Lift per model (with-skill − no-skill)", "Noise floor (A/A)",
        "Week-over-week lift delta",
        "Per-cell metrics", "Reliability over reps: pass@k, pass^k, flakiness",
        "Per-prompt (must_coverage; with-skill lift)",
        "Activation / trigger misses",
        "Trajectory audit — invocation, misuse, skill impact", "Suggested improvements",
        "Lift caveat — baseline self-served the skill",
        "`avoid` violations (most damaging failures)", "Coverage", "Cost & time",
        "Run health", "Judge reliability", "Provenance"]
    assert "**Will be computed after four runs.** (this is run 1 of 4;" in md
    assert "### Uncertainty detail" in md


def test_banner_is_first(data: Scorecard) -> None:
    data["banner"] = "DEMO — scripted models"
    md = scorecard.render_markdown(data)
    assert md.splitlines()[0] == "> **DEMO — scripted models**"


def test_one_verdict_sentence_under_the_title_agrees_with_the_sign_test(
        data: Scorecard) -> None:
    md = scorecard.render_markdown(data)
    lines = [ln for ln in md.splitlines() if ln.strip()]
    assert lines[0].startswith("# Weekly Skill Scorecard")
    sentence = data["verdict"]
    assert lines[1] == f"**{sentence}**"
    assert sentence.startswith("Verdict, one vote per prompt (the sign test): ")
    for label, m in data["models"].items():  # the rule's own verdict and reason, per model
        st = m["sign_test"]
        words = {"helps": "the skill helps", "hurts": "the skill hurts",
                 "no change": "no change shown", "underpowered": "underpowered"}[st["verdict"]]
        assert f"{label}: {words}" in sentence and st["reason"] in sentence
    assert md.count(sentence) == 1


def test_the_verdict_sentence_of_each_verdict() -> None:
    from pytest_skilllift.report.verdicts import verdict_sentence

    def model(verdict: str) -> dict[str, Any]:
        return {"sign_test": {"verdict": verdict, "reason": "r"}}

    assert verdict_sentence({}) == ""
    text = verdict_sentence({"a": model("helps"), "b": model("underpowered"),
                             "c": model("no change"), "d": model("hurts")})
    assert text == ("Verdict, one vote per prompt (the sign test): a: the skill helps (r); "
                    "b: underpowered, too few prompts vote to tell (don't act on its lift "
                    "yet) (r); c: no change shown (r); d: the skill hurts (r).")


def test_labels_not_run_are_one_plain_line_not_the_banner(tmp_path: Path) -> None:
    w = write_week(tmp_path / "weekly" / "20260801", models=("sonnet",),
                   prompts=("p0", "p1"))
    s = summarize_week(w, write=False, banner="DEMO", note="1 label not run: gpt — x")
    assert s.data["banner"] == "DEMO" and s.data["note"] == "1 label not run: gpt — x"
    assert "\n_1 label not run: gpt — x_\n" in s.markdown
    assert "> **DEMO**" in s.markdown


def test_delta_columns_only_when_nonzero(data: Scorecard) -> None:
    d = copy.deepcopy(data)
    for m in d["models"].values():
        m["bonus_delta"] = 0.0
    md = scorecard.render_markdown(d)
    header = next(ln for ln in md.splitlines() if ln.startswith("| model  | must_coverage"))
    assert "Δbonus" not in header and "Δavoid" in header


def test_caps_are_stated_never_silent(data: Scorecard,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prompts_section, "MAX_PROMPT_ROWS", 5)
    md = scorecard.render_markdown(data)
    n = len(data["prompts"])
    assert f"_Showing the first 5 of {n} per-prompt rows; all {n} are in `scorecard.json`._" in md


def test_low_sample_and_t_bootstrap_disagreement(data: Scorecard) -> None:
    d = copy.deepcopy(data)
    m = d["models"]["sonnet"]
    m["low_sample"], m["n_prompts"], m["ci_excludes_zero"] = True, 3, True
    boot = d["bootstrap"]["per_model"]["sonnet"]
    boot["excludes_zero"], boot["agrees_with_t"] = False, False
    md = scorecard.render_markdown(d)
    assert "⚠ **low sample** for sonnet: only 3 paired prompt(s)" in md
    assert "the t interval excludes zero but the bootstrap interval includes it" in md


def test_problems_make_the_scorecard_say_partial(data: Scorecard) -> None:
    d = copy.deepcopy(data)
    d["problems"] = ["scores.csv, row 3, column 'verdict': unknown verdict 'maybe'"]
    md = scorecard.render_markdown(d)
    assert "## ⚠ Input problems — this scorecard is partial" in md
    assert "- scores.csv, row 3, column 'verdict': unknown verdict 'maybe'" in md


def test_week_over_week_after_four_runs_and_plots(tmp_path: Path) -> None:
    weekly = tmp_path / "weekly"
    hist = weekly / "scorecard-history.csv"
    weekly.mkdir()
    upsert_history(hist, [
        HistoryRow("20260711", "20260711T090000Z", "sonnet", 0.20, 0.05),
        HistoryRow("20260718", "20260718T090000Z", "sonnet", 0.30, 0.05),
        HistoryRow("20260725", "20260725T090000Z", "sonnet", 0.25, 0.04),
    ])
    w = write_week(weekly / "20260801")
    s = summarize_week(w)
    assert s.data["history"]["ready"] and s.data["history"]["n_runs"] == 4
    v = s.data["history"]["per_model"]["sonnet"]
    assert v["prev_key"] == "20260725" and v["prev_lift"] == pytest.approx(0.25)
    assert v["within"] is not None and v["between"] is not None
    assert v["threshold"] == pytest.approx(max(v["within"], v["between"]))
    assert "Will be computed" not in s.markdown
    assert "vs previous run `20260725`" in s.markdown and "| actionable? |" in s.markdown
    # plots exist and are linked
    assert (w / "forest.png").stat().st_size > 1000 and (w / "trend.png").exists()
    assert "![Per-prompt must-coverage lift" in s.markdown and "(trend.png)" in s.markdown
    assert (w / "forest.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the run was upserted once; re-summarizing keeps the file identical
    before = hist.read_bytes()
    summarize_week(w, plots=False)
    assert hist.read_bytes() == before and before.count(b"20260801") == 1


def test_terminal_lines(tmp_path: Path) -> None:
    s = summarize_week(write_week(tmp_path / "w"), write=False)
    lines = s.terminal_lines()
    assert lines[0].startswith("skill lift (must_coverage")
    assert any(ln.split()[:1] == ["sonnet"] for ln in lines)
    assert any("graded 12 of 12 runs; dropped 0" in ln for ln in lines)
    # a session that says the count itself leaves it out (a dropped run is always said)
    assert not any("graded 12 of 12" in ln for ln in s.terminal_lines(counts=False))


def test_unreadable_history_is_reported_and_left_alone(tmp_path: Path) -> None:
    weekly = tmp_path / "weekly"
    w = write_week(weekly / "20260801")
    hist = weekly / "scorecard-history.csv"
    hist.write_bytes(b"week,notes\n1,\x00\x00 binary\n")
    s = summarize_week(w, plots=False)
    assert any("scorecard-history.csv" in p and "left untouched" in p for p in s.problems)
    assert hist.read_bytes() == b"week,notes\n1,\x00\x00 binary\n"
    assert "Will be computed after four runs." in s.markdown


def test_coverage_names_every_nonzero_exclusion(data: Scorecard) -> None:
    data["coverage"].update({"items_ungraded": 3, "items_total": 40, "items_invalid": 2,
                             "items_excluded_with_run": 5, "unscored_prompt_reps": 1,
                             "bonus_ungraded_prompt_reps": 0})
    md = scorecard.render_markdown(data)
    assert ("- ungraded items (judge/parse error; excluded, not scored as zero): **3** of 40"
            in md)
    assert "- items excluded as invalid input (see Input problems): **2**" in md
    assert "- graded items excluded with their dropped run: **5**" in md
    assert "- prompt×rep unscored (no gradeable must item): **1**" in md
    assert "composite unscored" not in md  # zero counts are not shown
