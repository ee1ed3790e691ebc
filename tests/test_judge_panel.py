"""A panel of judges: the majority and its tie rule, each judge paid once per run (resume,
``skilllift judge --judges`` on a graded week with no agent call), the votes on file, and
the agreement a hand computation from grades.json reproduces; the arm-leak mask."""

from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from itertools import permutations
from pathlib import Path

import pytest

from pytest_skilllift.intervals import cohen_kappa, krippendorff_alpha
from pytest_skilllift.judge.factory import build_judge
from pytest_skilllift.judge.mask import MASK, MaskingGrader, leak_spans, mask_answer
from pytest_skilllift.judge.panel import (
    TIE_RULE,
    PanelCache,
    PanelJudge,
    combine_panel,
    panel_verdict,
)
from pytest_skilllift.model import ItemVerdict, JudgeResult, RubricItem
from pytest_skilllift.testing import StandIn
from pytest_skilllift.testing.demo import demo_judge
from pytest_skilllift.testing.judge_script import keyword_judge
from pytest_skilllift.week.columns import contribution_for, credit_for
from tests.test_judge_client import ANSWER, ITEMS

KEY = "sk-panel-test-DO-NOT-WRITE-0123456789"
PANEL = ("claude-sonnet-4-5", "openai:gpt-5-mini", "google:gemini-2.5-flash")
#: Six content stems: the demo's Google judge (match share 0.4) finds it with 3 of them in the
#: answer, its Claude judge (0.5) with 3, its OpenAI judge (0.6) with 4 — so they disagree.
EXTRA = RubricItem("must", "Compares latency throughput recall memory budget", 4)
WORDS = ("latency", "throughput", "recall", "memory")
RUBRIC = (*ITEMS, EXTRA)


def v(item: RubricItem, verdict: str) -> ItemVerdict:
    credit = credit_for(item.type, verdict)
    return ItemVerdict(item=item, verdict=verdict, evidence="q" if credit or verdict ==
                       "violated" else "", credit=credit,
                       contribution=contribution_for(item.type, credit), evidence_ok=True)


def result(*verdicts: ItemVerdict, error: str | None = None) -> JudgeResult:
    return JudgeResult(verdicts=verdicts, cost_usd=0.01, model="m", calls=1, error=error)


# ---------------------------------------------------------------------------------------------
# The majority and the tie rule (pure)


def test_the_majority_counts_and_a_tie_goes_against_the_answer() -> None:
    must, avoid, bonus = ITEMS[0], ITEMS[4], ITEMS[3]
    assert panel_verdict("must", ["met", "met", "missing"]) == ("met", False)
    assert panel_verdict("must", ["met", "missing"]) == ("missing", True)
    assert panel_verdict("avoid", ["clean", "violated"]) == ("violated", True)
    assert panel_verdict("bonus", ["met", "absent"]) == ("absent", True)
    assert TIE_RULE == {"must": "missing", "bonus": "absent", "avoid": "violated"}
    two = combine_panel([must, avoid, bonus], [
        ("a", result(v(must, "met"), v(avoid, "clean"), v(bonus, "met"))),
        ("b", result(v(must, "missing"), v(avoid, "violated"), v(bonus, "met")))])
    got = {x.item.key: (x.verdict, x.contested, x.credit) for x in two.verdicts}
    assert got == {"must-1": ("missing", True, 0.0), "avoid-1": ("violated", True, 1.0),
                   "bonus-1": ("met", False, 1.0)}
    # The violation's quote is the judge's that saw it; every vote is kept, named.
    avoid_row = next(x for x in two.verdicts if x.item == avoid)
    assert avoid_row.evidence == "q"
    assert [(s.judge, s.verdict) for s in avoid_row.samples] == [("a", "clean"),
                                                                ("b", "violated")]
    assert two.model == "a,b" and two.calls == 2 and two.tie_breaks == 2


def test_a_judge_that_failed_leaves_the_run_ungraded_never_zero() -> None:
    out = combine_panel(ITEMS, [("a", result(*(v(i, "met" if i.type != "avoid" else "clean")
                                                  for i in ITEMS))),
                                ("b", result(error="HTTP 500"))])
    assert out.error and "b failed (HTTP 500)" in out.error
    assert out.verdicts == () and out.ungraded == ITEMS


def test_krippendorff_alpha_matches_the_published_example() -> None:
    """Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the nominal
    example with missing values: alpha = 0.743."""
    rows = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
            [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]]
    units = [[r[u] for r in rows if r[u] is not None] for u in range(12)]
    assert krippendorff_alpha(units) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha([["a", "a"], ["a", "a"]]) is None  # no variation: undefined
    assert krippendorff_alpha([["a"], ["b"]]) is None  # nothing pairable


# ---------------------------------------------------------------------------------------------
# The mask


def test_leaks_are_found_and_masked_in_both_arms_alike() -> None:
    families = ["git-bisect", "sqlite-performance"]
    text = ("Following the sqlite-performance skill, batch the inserts. As SKILL.md says, "
            "use WAL. The installed skill also suggests a transaction. sqlite performance "
            "improves.")
    assert leak_spans(text, families) == ["the sqlite-performance skill", "SKILL.md",
                                         "installed skill"]
    masked, n = mask_answer(text, families)
    assert n == 3 and masked.count(MASK) == 3
    assert "sqlite performance improves" in masked  # plain words are not a family name
    assert leak_spans("Use git bisect run with a script.", families) == []


def test_the_judge_sees_the_masked_answer_and_quotes_are_checked_against_it() -> None:
    answer = "Following the fusion skill, use RRF fusion because score scales differ."
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        inner = build_judge("openai:gpt-5-mini", api_key=KEY, base_url=api.base_url)
        out = MaskingGrader(inner, ["fusion"]).grade("Q?", answer, ITEMS[:1], "r")
        body = json.dumps(api.bodies("judge", api="codex"))
        off = MaskingGrader(inner, ["fusion"], mask=False).grade("Q?", answer, ITEMS[:1], "r")
    assert out.arm_leaks == 1 and out.masked and off.arm_leaks == 1 and not off.masked
    assert "the fusion skill" not in body.split("masked")[0] and MASK in body
    (met,) = out.verdicts
    assert met.verdict == "met" and met.evidence_ok and MASK in met.evidence


# ---------------------------------------------------------------------------------------------
# Paid once per run


def test_resume_calls_only_the_judge_that_failed(tmp_path: Path) -> None:
    """A judge that failed (here a wrong key) leaves the run ungraded; the two that answered
    are kept in panel.json, so the next session calls only the missing judge."""
    run = tmp_path / "fusion-haiku-no-skill-r1-w"
    run.mkdir()
    (run / "run.json").write_text("{}")
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        def panel(google_key: str) -> PanelJudge:
            return PanelJudge([(spec, build_judge(spec, api_key=google_key if "google" in spec
                                                  else KEY, base_url=api.base_url,
                                                  max_retries=0)) for spec in PANEL],
                              cache=PanelCache(tmp_path))
        first = panel("wrong").grade("Q?", ANSWER, ITEMS, run.name)
        calls_first = Counter(r.api for r in api.requests if r.kind == "judge")
        second = panel(KEY).grade("Q?", ANSWER, ITEMS, run.name)
        calls = Counter(r.api for r in api.requests if r.kind == "judge" and r.ok)
    assert first.error and "google:gemini-2.5-flash failed" in first.error
    assert calls_first == {"messages": 1, "codex": 1, "gemini-cli": 1}
    assert second.error is None and len(second.verdicts) == len(ITEMS)
    assert calls == {"messages": 1, "codex": 1, "gemini-cli": 1}  # the failed one, once more
    assert sorted(json.loads((run / "panel.json").read_text())) == sorted(PANEL)


# ---------------------------------------------------------------------------------------------
# skilllift judge --judges on a graded week: no agent call, the agreement by hand


def make_week(tmp_path: Path) -> Path:
    prompt = tmp_path / "fusion.json"
    prompt.write_text(json.dumps({"name": "fusion", "skill": "fusion/SKILL.md", "prompt": "Q?",
                                  "rubric": [{"type": i.type, "text": i.text} for i in RUBRIC]}))
    week = tmp_path / "week"
    k = 0
    for label, model_id in (("sonnet", "claude-sonnet-4-5"), ("gpt", "codex:gpt-5.5")):
        for cond in ("no-skill", "with-skill"):
            for rep in (1, 2):
                k += 1
                words = WORDS[: 2 + k % 3]  # 2, 3 or 4 of the extra item's words
                lead = "Following the fusion skill, compare options. " if (
                    cond == "with-skill") else ""
                run_id = f"fusion-{label}-{cond}-r{rep}-week"
                (week / run_id).mkdir(parents=True)
                (week / run_id / "run.json").write_text(json.dumps({
                    "run_id": run_id, "prompt": "fusion", "model": label, "model_id": model_id,
                    "condition": cond, "rep": rep, "run_status": "ok",
                    "final_answer": f"{lead}{ANSWER}\nWatch {' and '.join(words)} closely.",
                    "prompt_path": str(prompt), "skill_leaf": "fusion/SKILL.md"}))
    return week


def hand_alpha(units: list[list[str]]) -> float:
    """Krippendorff's alpha by its coincidence matrix, written out (not the package's)."""
    o: defaultdict[tuple[str, str], float] = defaultdict(float)
    for values in units:
        if len(values) < 2:
            continue
        for i, j in permutations(range(len(values)), 2):
            o[(values[i], values[j])] += 1 / (len(values) - 1)
    n_c: defaultdict[str, float] = defaultdict(float)
    for (c, _k), w in o.items():
        n_c[c] += w
    n = sum(n_c.values())
    d_o = sum(w for (c, k), w in o.items() if c != k) / n
    d_e = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k) / (n * (n - 1))
    return 1 - d_o / d_e


def test_judges_added_to_a_graded_week_without_an_agent_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_skilllift.cli.main import main as skilllift

    week = make_week(tmp_path)
    runs = sorted(p.name for p in week.iterdir())
    with StandIn(judge=demo_judge(), api_key=KEY) as api:
        for var in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
            monkeypatch.setenv(var, api.base_url)
        for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
            monkeypatch.setenv(var, KEY)

        def calls() -> Counter[str]:
            return Counter(r.api for r in api.requests if r.kind == "judge" and r.ok)

        assert skilllift(["judge", str(week), "--judge-model", PANEL[0]]) == 0
        assert calls() == {"messages": len(runs)}
        assert skilllift(["judge", str(week), "--judges", ",".join(PANEL)]) == 0, (
            capsys.readouterr().err)
        # The Claude judge's grades were kept (not paid again); the two new judges, once each.
        assert calls() == {"messages": len(runs), "codex": len(runs), "gemini-cli": len(runs)}
        assert skilllift(["judge", str(week), "--judges", ",".join(PANEL)]) == 0
        assert calls() == {"messages": len(runs), "codex": len(runs), "gemini-cli": len(runs)}
        assert api.count("agent", ok_only=False) == 0
        openai_bodies = json.dumps(api.bodies("judge", api="codex"))
    assert "the fusion skill" not in openai_bodies and MASK in openai_bodies

    units: list[list[str]] = []
    pair: tuple[list[str], list[str]] = ([], [])
    for run_id in runs:
        grades = json.loads((week / run_id / "grades.json").read_text())
        assert grades["judge_model"] == ",".join(PANEL)
        for row in grades["rows"]:
            votes = {s["judge"]: s["verdict"] for s in row["samples"]}
            assert list(votes) == list(PANEL)
            majority = Counter(votes.values()).most_common()
            expected = (TIE_RULE[row["item_type"]] if len(majority) > 1
                        and majority[0][1] == majority[1][1] else majority[0][0])
            assert row["verdict"] == expected
            assert bool(row["contested"]) == (len(set(votes.values())) > 1)
            units.append(list(votes.values()))
            pair[0].append(votes[PANEL[0]])
            pair[1].append(votes[PANEL[1]])
    card = json.loads((week / "scorecard.json").read_text())
    panel = card["judge"]["audit"]["panel"]
    assert panel["items"] == len(units) and panel["disagreed_items"] > 0
    assert panel["alpha"] == pytest.approx(hand_alpha(units), abs=1e-9)
    assert 0 < panel["alpha"] < 1
    lo, hi = panel["alpha_ci95"]
    assert lo <= panel["alpha"] <= hi
    kappa = next(p for p in panel["kappa"] if (p["a"], p["b"]) == PANEL[:2])
    assert kappa["kappa"] == pytest.approx(cohen_kappa(*pair))
    # The lift per judge beside the panel's, and the family warnings on both labels.
    assert set(panel["lift"]["sonnet"]) == {"panel", *PANEL}
    warned = {w["label"]: w["judges"] for w in card["judge"]["audit"]["family_warnings"]}
    assert warned == {"sonnet": [PANEL[0]], "gpt": [PANEL[1]]}
    leakage = card["judge"]["audit"]["leakage"]
    assert leakage["gpt"]["with-skill"] == {"runs": 2, "leaking": 2, "masked": 2}
    assert leakage["gpt"]["no-skill"]["leaking"] == 0
    assert set(card["judge"]["audit"]["self_preference"]) == {"sonnet", "gpt"}
    with (week / "scores.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert all(r["judge_votes"].count("=") == 3 for r in rows)
    md = (week / "scorecard.md").read_text()
    assert "Krippendorff's alpha" in md and "is graded by its own family's judge" in md


# ---------------------------------------------------------------------------------------------
# The bias audit's arithmetic on a week written by hand


def write_run(week: Path, run_id: str, *, label: str, model_id: str, cond: str, prompt: str,
              answer: str, votes: list[dict[str, str]], judge_model: str) -> None:
    (week / run_id).mkdir(parents=True)
    (week / run_id / "run.json").write_text(json.dumps({
        "run_id": run_id, "model": label, "model_id": model_id, "condition": cond,
        "prompt": prompt, "final_answer": answer}))
    rows = []
    for i, vote in enumerate(votes, start=1):
        majority = Counter(vote.values()).most_common(1)[0][0]
        rows.append({"item_type": "must", "item_index": i, "item_text": f"item {i}",
                     "verdict": majority, "samples": [
                         {"judge": j, "verdict": x} for j, x in vote.items()] if len(vote) > 1
                     else []})
    (week / run_id / "grades.json").write_text(json.dumps({
        "judge_model": judge_model, "rows": rows, "arm_leaks": 0}))


def test_verbosity_is_flagged_when_the_lift_follows_answer_length(tmp_path: Path) -> None:
    """Coverage that grows with length: the lift (0.625) is all length — at equal length
    (the intercept of the paired regression) it is 0 — so the row is flagged."""
    from pytest_skilllift.report.judge_audit import VERBOSITY_GAP, build_audit

    week = tmp_path / "week"
    for k in range(1, 5):
        met = ["met"] * k + ["missing"] * (4 - k)
        for cond, answer, verdicts in (("no-skill", "x" * 500, ["missing"] * 4),
                                       ("with-skill", "x" * (500 + 1000 * k), met)):
            write_run(week, f"p{k}-sonnet-{cond}", label="sonnet", model_id="claude-sonnet-4-5",
                      cond=cond, prompt=f"p{k}", answer=answer,
                      votes=[{"claude-sonnet-4-5": x} for x in verdicts],
                      judge_model="claude-sonnet-4-5")
    audit = build_audit(week)
    row = audit["verbosity"]["sonnet"]
    assert row["lift"] == pytest.approx(0.625)
    assert row["lift_length_adjusted"] == pytest.approx(0.0, abs=1e-12)
    assert row["credit_per_kchar"] == pytest.approx(0.25)
    assert row["flag"] and row["lift"] - row["lift_length_adjusted"] >= VERBOSITY_GAP
    assert row["length_credit_r"]["with-skill"] == pytest.approx(1.0)
    assert row["length_credit_r_within_item"] == {"no-skill": None, "with-skill": None}  # 1 rep
    assert audit["panel"] is None and audit["self_preference"] == {}
    assert audit["family_warnings"] == [{"label": "sonnet", "family": "anthropic",
                                         "judges": ["claude-sonnet-4-5"]}]


def test_self_preference_is_the_own_family_lift_minus_the_others(tmp_path: Path) -> None:
    """A Claude judge that credits the Claude label's with-skill answers more than the OpenAI
    judge does: own-family lift 1.0 vs 0.5 on each of two prompts... and 0.5 vs 0.5 on a
    third; the difference is their mean, its SE the paired one over prompts."""
    from pytest_skilllift.report.judge_audit import build_audit

    week = tmp_path / "week"
    panel_name = "claude-sonnet-4-5,openai:gpt-5"
    for k, (own, other) in enumerate((("met", "missing"), ("met", "missing"), ("met", "met")),
                                     start=1):
        for cond in ("no-skill", "with-skill"):
            votes = ([{"claude-sonnet-4-5": "missing", "openai:gpt-5": "missing"}] * 2
                     if cond == "no-skill" else
                     [{"claude-sonnet-4-5": "met", "openai:gpt-5": "met"},
                      {"claude-sonnet-4-5": own, "openai:gpt-5": other}])
            write_run(week, f"p{k}-sonnet-{cond}", label="sonnet", model_id="claude-sonnet-4-5",
                      cond=cond, prompt=f"p{k}", answer="a", votes=votes, judge_model=panel_name)
    pref = build_audit(week)["self_preference"]["sonnet"]
    diffs = [0.5, 0.5, 0.0]
    mean = sum(diffs) / 3
    se = (sum((d - mean) ** 2 for d in diffs) / 2 / 3) ** 0.5
    assert (pref["own_judges"], pref["other_judges"]) == (["claude-sonnet-4-5"], ["openai:gpt-5"])
    assert pref["lift_own"] == pytest.approx(1.0)
    assert pref["lift_other"] == pytest.approx(1.0 - mean)
    assert pref["difference"] == pytest.approx(mean)
    assert pref["difference_se"] == pytest.approx(se)
