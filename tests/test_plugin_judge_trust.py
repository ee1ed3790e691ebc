"""End to end, with the real bundled CLI: fabricated quotes, multi-sample judging, regrading.

One prompt, one model, one rep: two runs per week. The stand-in counts every call, so "a
regrade makes no agent call" and "N judge calls per run plus one per tie-break" are counted,
not assumed.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.cli import main as cli
from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.judge.client import default_judge_model
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.testing import Reply, StandIn
from pytest_skilllift.testing.agent_script import skill_agent
from pytest_skilllift.testing.judge_script import decide, flaky_judge, keyword_judge, make_judge

REPO = Path(__file__).resolve().parents[1]
KEY = "sk-ant-test-judge-trust"
PROMPT = "git-bisect-regression.json"
FLAKY = "Skips commits that do not build with git bisect skip"
#: The judge a session uses by default (the id pinned in config.OPTIONS).
JUDGE = default_judge_model()

pytestmark = [
    pytest.mark.cli,
    pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing"),
]


def make_project(pytester: pytest.Pytester) -> Path:
    root = pytester.path
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    (root / "evals" / "test-prompts").mkdir(parents=True)
    shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / PROMPT, root / "evals" / "test-prompts")
    pytester.makeini("[pytest]\nskill_lift_models = haiku=claude-haiku-4-5\n"
                     "skill_lift_reps = 1\nskill_lift_out = weekly/20260808\n")
    return root


def run(pytester: pytest.Pytester, server: StandIn, monkeypatch: pytest.MonkeyPatch,
        *args: str) -> pytest.RunResult:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return pytester.runpytest_subprocess("--skill-lift", "-p", "no:cacheprovider", *args,
                                         timeout=300)


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def answers(week: Path) -> dict[str, str]:
    return {p.parent.name: json.loads(p.read_text())["final_answer"]
            for p in week.glob("*/run.json")}


def test_a_fabricated_quote_earns_nothing_end_to_end(pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A judge that claims 'met' with invented quotes for everything it would find missing:
    under the default policy the claims score nothing (the lift is the honest one); under
    --skill-lift-evidence=flag they score, and the lift collapses."""
    root = make_project(pytester)
    week = root / "weekly" / "20260808"
    with StandIn(agent=skill_agent, judge=make_judge("lenient-liar")) as api:
        assert run(pytester, api, monkeypatch, "-p", "no:xdist").ret == 0
        assert (api.count("agent") > 0, api.count("judge")) == (True, 2)
        agent_calls = api.count("agent")
        scores = rows(week / "scores.csv")
        finals = answers(week)
        # Every recorded verdict is the honest one: the fabricated claims earned nothing.
        for r in scores:
            assert r["verdict"] == decide(r["item_type"], r["item_text"], finals[r["run_id"]])[0]
        rejected = [r for r in scores if r["claimed_verdict"]]
        assert rejected and all(
            (r["verdict"], r["credit"], r["evidence_ok"], r["claimed_verdict"],
             r["claimed_evidence"]) == (
                {"must": "missing", "bonus": "absent"}[r["item_type"]], "0.0", "0", "met",
                "The answer covers this point in full detail.") for r in rejected)
        no_skill = [r for r in rejected if r["condition"] == "no-skill"]
        assert no_skill  # the baseline is where the liar had the most to invent
        grades = json.loads((week / rejected[0]["run_id"] / "grades.json").read_text())
        claim = next(g for g in grades["rows"] if g["claimed_verdict"])
        assert claim["claimed_evidence"] == "The answer covers this point in full detail."
        assert (grades["evidence_policy"], grades["judge_calls"]) == ("reject", 1)
        card = json.loads((week / "scorecard.json").read_text())
        honest_lift = card["models"]["haiku"]["must_lift"]
        assert honest_lift > 0
        assert card["judge"]["rejected_quotes"] == len(rejected)
        cells = card["judge"]["quotes_by_cell"]["haiku"]
        assert sum(c["rejected"] for c in cells.values()) == len(rejected)
        md = (week / "scorecard.md").read_text()
        assert f"missing/absent/clean): {len(rejected)} — haiku/" in md

        # Today's behaviour on request: the claims are kept (flagged), and the lift moves.
        result = run(pytester, api, monkeypatch, "-p", "no:xdist", "--skill-lift-fresh",
                     "--skill-lift-evidence=flag")
        assert result.ret == 0
        assert api.count("agent") == agent_calls and api.count("judge") == 4
        flagged = [r for r in rows(week / "scores.csv") if r["evidence_ok"] == "0"]
        assert len(flagged) == len(rejected) and all(r["credit"] == "1.0" for r in flagged)
        card = json.loads((week / "scorecard.json").read_text())
        assert card["models"]["haiku"]["must_lift"] < honest_lift
        assert card["judge"]["evidence_policy"] == {"flag": 2}
        assert "⚠ evidence policy **flag** (2 runs)" in (week / "scorecard.md").read_text()


@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "xdist-2"])
def test_two_samples_tie_break_and_contested(pytester: pytest.Pytester,
                                             monkeypatch: pytest.MonkeyPatch,
                                             workers: int) -> None:
    root = make_project(pytester)
    week = root / "weekly" / "20260808"
    args = ("-n", "2") if workers else ("-p", "no:xdist")
    with StandIn(agent=skill_agent, judge=flaky_judge(FLAKY)) as api:
        result = run(pytester, api, monkeypatch, *args, "--skill-lift-judge-samples=2")
        assert result.ret == 0, result.stdout.str()
        # 2 samples per run + 1 tie-break per run (the flaky item is in both runs), exactly.
        assert api.count("judge") == 2 * 2 + 2
    scores = rows(week / "scores.csv")
    contested = [r for r in scores if r["contested"]]
    assert {(r["item_text"], r["contested"]) for r in contested} == {(FLAKY, "1")}
    assert len(contested) == 2  # both arms
    finals = answers(week)
    for r in scores:  # the majority is the keyword verdict (samples: keyword, flipped, keyword)
        assert r["verdict"] == decide(r["item_type"], r["item_text"], finals[r["run_id"]])[0]
    grades = json.loads((week / contested[0]["run_id"] / "grades.json").read_text())
    assert (grades["judge_calls"], grades["judge_samples"], grades["tie_breaks"]) == (3, 2, 1)
    flaky = next(g for g in grades["rows"] if g["item_text"] == FLAKY)
    assert [s["tie_break"] for s in flaky["samples"]] == [False, False, True]
    assert len({s["verdict"] for s in flaky["samples"]}) == 2
    assert all(len(g["samples"]) == 2 for g in grades["rows"] if g["item_text"] != FLAKY)
    card = json.loads((week / "scorecard.json").read_text())
    [item] = card["judge"]["contested"]
    assert (item["item_text"], item["runs"], item["arms"]) == (
        FLAKY, 2, {"haiku/no-skill": 1, "haiku/with-skill": 1})
    assert card["judge"]["judge_calls"] == 6 and card["run_health"]["contested_items"] == 2
    history = rows(root / "weekly" / "scorecard-history.csv")
    assert [h["contested_items"] for h in history] == ["2"]


def test_regrade_without_regenerating(pytester: pytest.Pytester,
                                      monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    root = make_project(pytester)
    week = root / "weekly" / "20260808"
    with StandIn(agent=skill_agent, judge=keyword_judge) as api:
        assert run(pytester, api, monkeypatch, "-p", "no:xdist").ret == 0
        agent_calls, judge_calls = api.count("agent"), api.count("judge")
        first_scores = (week / "scores.csv").read_bytes()
        run_ids = sorted(p.parent.name for p in week.glob("*/run.json"))

        # Nothing ungraded: nothing to do.
        assert cli.main(["judge", str(week)]) == 0
        assert api.count("judge") == judge_calls

        # An interrupted grading: one run lost its grades; only that one is graded again.
        (week / run_ids[0] / "grades.json").unlink()
        assert cli.main(["judge", str(week),
                         "-j", "2"]) == 0
        assert api.count("judge") == judge_calls + 1
        assert (week / "scores.csv").read_bytes() == first_scores

        # --fresh regrades all, with two samples each.
        assert cli.main(["judge", str(week), "--fresh",
                         "--samples", "2"]) == 0
        assert api.count("judge") == judge_calls + 1 + 2 * 2
        assert all(json.loads((week / r / "grades.json").read_text())["judge_samples"] == 2
                   for r in run_ids)
        assert not (week / ".fresh-regrade.json").exists()
        assert api.count("agent") == agent_calls  # no run was regenerated
        # the week's identity now names how it was graded
        identity = json.loads((week / "week.json").read_text())["identity"]
        assert (identity["judge_model"], identity["judge_samples"]) == (JUDGE, 2)

        # Another judge model is another measurement: refused in place, graded in a copy.
        capsys.readouterr()
        assert cli.main(["judge", str(week), "--judge-model", "claude-sonnet-4-6"]) == 2
        assert f"was graded by {JUDGE}" in capsys.readouterr().err
        copy = root / "trials" / "20260808-sonnet"
        assert cli.main(["judge", str(week), "--judge-model", "claude-sonnet-4-6",
                         "--out", str(copy)]) == 0
        assert api.count("agent") == agent_calls
        assert json.loads((week / run_ids[0] / "grades.json").read_text())[
            "judge_model"] == JUDGE
        assert json.loads((copy / run_ids[0] / "grades.json").read_text())[
            "judge_model"] == "claude-sonnet-4-6"
        assert "- judge: `claude-sonnet-4-6` (2 runs)" in (copy / "scorecard.md").read_text()
        assert f"- judge: `{JUDGE}` (2 runs)" in (week / "scorecard.md").read_text()
        assert (copy / "scorecard-history.csv").is_file()  # the copy's own, not the weeks'
        # the copy's week.json: the week's, with the copy's judge; the week keeps its own
        assert json.loads((copy / "week.json").read_text())["identity"]["judge_model"] == (
            "claude-sonnet-4-6")
        assert json.loads((week / "week.json").read_text())["identity"]["judge_model"] == JUDGE

    # --fresh resumes after an interruption: a pass that left one run ungraded is continued
    # by the same command without paying again for the run it already regraded.
    calls = {"n": 0}

    def fails_once(body: dict[str, Any]) -> Reply:
        calls["n"] += 1
        return make_judge("bad-json")(body) if calls["n"] == 1 else keyword_judge(body)

    with StandIn(agent=skill_agent, judge=fails_once) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        # --samples 1 differs from the week's recorded 2: said, then recorded at the end
        # (without it the regrade keeps the recorded protocol).
        assert cli.main(["judge", str(week), "--fresh", "--samples", "1",
                         "-j", "1"]) == 1
        marker = json.loads((week / ".fresh-regrade.json").read_text())
        assert len(marker["done"]) == 1 and api.count("judge") == 2
        # an unfinished --fresh pass has not regraded the week: its identity is unchanged
        assert json.loads((week / "week.json").read_text())["identity"]["judge_samples"] == 2
        assert cli.main(["judge", str(week),
                         "--fresh", "--samples", "1"]) == 0
        assert api.count("judge") == 3 and api.count("agent") == 0
        assert not (week / ".fresh-regrade.json").exists()
        assert json.loads((week / "week.json").read_text())["identity"]["judge_samples"] == 1
    assert (week / "scores.csv").read_bytes() == first_scores
