"""The judge's short reason for every missing, absent or violated item (judge prompt
skilllift-judge/3): parsed as data (present, absent, over-long, not text), carried through
samples, panels, the Message Batches path and every provider's SDK against the stand-in,
stored in grades.json and scores.csv, and a week graded before reasons (skilllift-judge/2)
resumed without a refusal or a regrade."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.judge.batch import BatchJudge, custom_id
from pytest_skilllift.judge.factory import build_judge
from pytest_skilllift.judge.panel import combine_panel
from pytest_skilllift.judge.protocol import (
    PROMPT_VERSION,
    PROMPT_VERSIONS_SAME_VERDICTS,
    REASON_MAX_CHARS,
    SYSTEM_PROMPT,
    VERDICTS_SCHEMA,
    build_judge_request,
    parse_judge_reply,
)
from pytest_skilllift.judge.samples import combine_samples
from pytest_skilllift.model import JudgeResult
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.testing import StandIn
from pytest_skilllift.testing.batches import BatchScript
from pytest_skilllift.testing.judge_script import keyword_judge, reason_for
from pytest_skilllift.week import identity as ident
from tests.test_judge_client import ANSWER, EXPECTED, ITEMS, KEY, MODEL
from tests.test_week_identity import ALL_RUNS, make, open_

PROMPT = "How do I fuse dense and sparse results?"
#: must-2 is the one item the keyword judge finds missing in ANSWER.
MISSING = "must-2"


def reply(request: Any, **override: Any) -> list[dict[str, Any]]:
    """The forced tool call grading every shown item by EXPECTED, with ``override`` fields
    on the missing item."""
    verdict = dict(EXPECTED)
    quotes = {"must-1": "Use RRF fusion by default",
              "must-3": "Each branch has its own prefetch limit",
              "bonus-1": "a formula query combines scores"}
    entries = []
    for i, item in enumerate(request.shown, start=1):
        entry: dict[str, Any] = {"index": i, "verdict": verdict[item.key],
                                 "evidence": quotes.get(item.key, "")}
        if item.key == MISSING:
            entry.update(override)
        entries.append(entry)
    return [{"type": "tool_use", "name": "record_verdicts", "input": {"verdicts": entries}}]


def graded(**override: Any) -> tuple[Any, JudgeResult]:
    request = build_judge_request(PROMPT, ANSWER, ITEMS, "run-1")
    result = parse_judge_reply(request, reply(request, **override))
    by_key = {v.item.key: v for v in result.verdicts}
    return by_key[MISSING], result


# -- the protocol -----------------------------------------------------------------------------


def test_the_prompt_and_the_schema_ask_for_a_reason_per_miss() -> None:
    assert PROMPT_VERSION == "skilllift-judge/3"
    assert '"missing", "absent" and "violated"' in SYSTEM_PROMPT.replace("\n", " ")
    assert f"at most {REASON_MAX_CHARS} characters" in SYSTEM_PROMPT.replace("\n", " ")
    entry = VERDICTS_SCHEMA["properties"]["verdicts"]["items"]
    assert entry["properties"]["reason"]["type"] == "string"
    assert "reason" in entry["required"]
    # the one earlier version declared to decide verdicts the same way
    assert {"skilllift-judge/2"} == PROMPT_VERSIONS_SAME_VERDICTS


def test_a_reason_is_kept_as_given_with_its_whitespace_collapsed() -> None:
    v, result = graded(reason="No  go get\ncommand\tfor the client.")
    assert v.reason == "No go get command for the client." and v.reason_cut == 0
    assert v.verdict == "missing" and v.credit == 0.0  # a reason never changes the grade
    assert result.notes == ()


def test_an_absent_or_null_reason_is_no_reason_and_no_error() -> None:
    for override in ({}, {"reason": None}):
        v, result = graded(**override)
        assert v.reason == "" and v.verdict == "missing"
        assert result.error is None and result.ungraded == () and result.notes == ()


def test_an_over_long_reason_is_cut_at_the_cap_and_counted() -> None:
    v, result = graded(reason="x" * (REASON_MAX_CHARS + 57))
    assert v.reason == "x" * REASON_MAX_CHARS + "\u2026"
    assert v.reason_cut == 57
    assert result.notes == (f"{MISSING}: reason cut at {REASON_MAX_CHARS} characters "
                            "(57 more cut)",)


@pytest.mark.parametrize("value", [42, ["a", "list"], {"nested": "object"}, True])
def test_a_reason_that_is_not_text_is_dropped_with_a_note(value: Any) -> None:
    v, result = graded(reason=value)
    assert v.reason == "" and v.verdict == "missing"
    assert result.notes == (f"{MISSING}: reason is a {type(value).__name__}, not text; "
                            "dropped",)


def test_samples_and_panels_keep_each_vote_s_reason() -> None:
    _, one = graded(reason="first judge: no go get command")
    _, two = graded(reason="second judge: the client is not named")
    merged = combine_samples(ITEMS, [one, two])
    v = next(v for v in merged.verdicts if v.item.key == MISSING)
    assert v.reason == "first judge: no go get command"  # the recorded vote's, like its quote
    assert [s.reason for s in v.samples] == ["first judge: no go get command",
                                             "second judge: the client is not named"]
    panel = combine_panel(ITEMS, [("anthropic:a", one), ("openai:b", two)])
    v = next(v for v in panel.verdicts if v.item.key == MISSING)
    assert {s.judge: s.reason for s in v.samples} == {
        "anthropic:a": "first judge: no go get command",
        "openai:b": "second judge: the client is not named"}


def test_grades_rows_carry_the_reason_and_count_the_misses_without_one() -> None:
    from pytest_skilllift.run.engine import judge_meta, score_rows
    from pytest_skilllift.week.columns import SCORES_EXTRA_COLUMNS

    assert SCORES_EXTRA_COLUMNS[-1] == "judge_reason"  # after every earlier column
    _, with_reason = graded(reason="x" * (REASON_MAX_CHARS + 3))
    _, without = graded()
    meta = judge_meta(with_reason)
    assert (meta["reasons_missing"], meta["reasons_cut"]) == (0, 1)
    assert (judge_meta(without)["reasons_missing"], judge_meta(without)["reasons_cut"]) == (1, 0)

    class Prompt:
        name, family, rubric = "p", "f", ITEMS

    class Spec:
        prompt, model_label, condition, rep, run_id = Prompt, "haiku", "with-skill", 1, "r"

    rows = {f"{r['item_type']}-{r['item_index']}": r
            for r in score_rows(Spec, with_reason)}  # type: ignore[arg-type]
    assert rows[MISSING]["judge_reason"].endswith("\u2026") and rows[MISSING]["reason_cut"] == 3
    assert rows["must-1"]["judge_reason"] == "" and "reason_cut" not in rows["must-1"]


# -- the scripted judge through every provider's SDK --------------------------------------------


def test_the_scripted_judge_s_reasons() -> None:
    assert reason_for("must", ITEMS[1].text, ANSWER, "missing") == (
        "the answer never mentions get, command, official, client")
    assert reason_for("must", ITEMS[0].text, ANSWER, "met") == ""
    assert reason_for("avoid", "Recommends fusion scales", ANSWER, "violated") == (
        "the answer does what this item warns against: it holds 2 of the item's 3 key words")
    assert reason_for("avoid", ITEMS[4].text, ANSWER, "clean") == ""


def _check_reasons(result: JudgeResult) -> None:
    assert result.error is None, result.error
    assert [(v.item.key, v.verdict) for v in result.verdicts] == EXPECTED
    for v in result.verdicts:
        expected = reason_for(v.item.type, v.item.text, ANSWER, v.verdict)
        assert v.reason == expected, v.item.key
    assert next(v.reason for v in result.verdicts if v.item.key == MISSING)


@pytest.mark.parametrize("spec", [MODEL, "openai:gpt-5-mini", "google:gemini-2.5-flash"])
def test_reasons_round_trip_through_each_provider_s_sdk(spec: str) -> None:
    """The Anthropic, OpenAI (Responses) and Google (Gemini) SDKs each carry the scripted
    judge's reason from the stand-in's reply to the item."""
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        judge = build_judge(spec, api_key=KEY, base_url=api.base_url, timeout_s=5.0,
                            backoff_base_s=0.01, backoff_max_s=0.02)
        result = judge.grade(PROMPT, ANSWER, ITEMS, "run-1")
        assert any(r.kind == "judge" and r.ok for r in api.requests)
    _check_reasons(result)


def test_reasons_round_trip_through_message_batches(tmp_path: Path) -> None:
    run_ids = ["p-haiku-with-skill-r1-20260808", "p-haiku-no-skill-r1-20260808"]
    with StandIn(judge=keyword_judge, batch=BatchScript(polls_before_end=0)) as api:
        judge = BatchJudge(tmp_path, MODEL, api_key=KEY, base_url=api.base_url, poll_s=0.0)
        got = judge.grade([judge.request(custom_id(r), build_judge_request(PROMPT, ANSWER,
                                                                           ITEMS, r))
                           for r in run_ids])
    assert set(got) == set(run_ids)
    for result in got.values():
        _check_reasons(result)


# -- a week graded before reasons -----------------------------------------------------------


def test_a_week_graded_with_the_previous_prompt_resumes_without_refusal(tmp_path: Path) -> None:
    open_(tmp_path, make(judge_prompt_version="skilllift-judge/2"), ALL_RUNS)
    new = make(judge_prompt_version=PROMPT_VERSION)
    record, notes = open_(tmp_path, new, ALL_RUNS)
    assert record.identity.judge_prompt_version == PROMPT_VERSION
    assert notes == ["judge prompt version: 'skilllift-judge/2' → 'skilllift-judge/3': same "
                     "verdict rules, the judge now also gives a reason per missing or violated "
                     "item; runs graded before keep their grades and show no reason "
                     "(--skill-lift-fresh regrades them)"]
    assert record.changes[-1] | {"at": ""} == {
        "at": "", "what": "judge_prompt_version", "key": None, "kind": "changed",
        "before": "skilllift-judge/2", "after": PROMPT_VERSION}
    # A version not declared the same (skilllift-judge/1) stays a grading difference: refused,
    # or every run regraded with --skill-lift-fresh.
    (tmp_path / "w1").mkdir()
    open_(tmp_path / "w1", make(judge_prompt_version="skilllift-judge/1"), ALL_RUNS)
    with pytest.raises(ident.IdentityRefused) as err:
        open_(tmp_path / "w1", new, ALL_RUNS)
    assert "judge prompt version: 'skilllift-judge/1' → 'skilllift-judge/3' [grading]" in str(
        err.value)
    assert ident.same_verdict_rules("skilllift-judge/2", PROMPT_VERSION)
    assert not ident.same_verdict_rules(PROMPT_VERSION, "skilllift-judge/2")  # not backwards


@pytest.mark.parametrize(("other", "same"), [("skilllift-judge/2", True),
                                             ("skilllift-judge/1", False)])
def test_the_scorecard_names_a_week_graded_partly_before_reasons(
        tmp_path: Path, other: str, same: bool) -> None:
    from pytest_skilllift.report.summarize import summarize_week
    from tests.test_report_judging import make_week

    week = make_week(tmp_path / "weekly", "20260801", contested=False, samples=1)
    grades = sorted(week.glob("*/grades.json"))
    for path in grades[:2]:  # two runs graded by this version, two by the other
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, "prompt_version": PROMPT_VERSION}))
    for path in grades[2:]:
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, "prompt_version": other}))
    md = summarize_week(week, plots=False).markdown
    soft = (f"- judge prompts `{other}` and `{PROMPT_VERSION}` decide verdicts the same way; "
            f"the runs graded with `{other}` have no judge's reasons")
    warning = "- ⚠ more than one judge prompt version graded this week"
    assert (soft in md, warning in md) == (same, not same)


def _rewrite_as_graded_before_reasons(week: Path) -> dict[str, bytes]:
    """Make a week look graded by skilllift-judge/2: no reason anywhere, that prompt version
    in week.json and every grades.json. Returns each grades.json's bytes."""
    from pytest_skilllift.week.files import GRADES_FILE

    record = json.loads((week / "week.json").read_text())
    record["identity"]["judge_prompt_version"] = "skilllift-judge/2"
    (week / "week.json").write_text(json.dumps(record, indent=2))
    before: dict[str, bytes] = {}
    for path in sorted(week.glob(f"*/{GRADES_FILE}")):
        data = json.loads(path.read_text())
        data["prompt_version"] = "skilllift-judge/2"
        for key in ("reasons_missing", "reasons_cut"):
            data.pop(key, None)
        for row in data["rows"]:
            row.pop("judge_reason", None)
            row.pop("reason_cut", None)
        path.write_text(json.dumps(data, indent=2))
        before[path.parent.name] = path.read_bytes()
    with (week / "scores.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    columns = [c for c in rows[0] if c != "judge_reason"]
    with (week / "scores.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return before


@pytest.mark.cli
@pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing")
def test_an_old_week_loads_resumes_and_renders(pytester: pytest.Pytester,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A demo week made (haiku's runs), rewritten as graded by skilllift-judge/2, then resumed
    by this version with sonnet's runs: no refusal, the old runs' grades untouched (not
    regraded), the new runs graded with reasons, the scorecard and the viewer written."""
    from pytest_skilllift.report.summarize import summarize_week
    from pytest_skilllift.view.data import page_name
    from pytest_skilllift.view.site import build_site

    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    args = ["--skill-lift-demo", "--skill-lift-out=week", "--skill-lift-reps=1",
            "-p", "no:cacheprovider", "-p", "no:randomly"]
    first = pytester.runpytest_subprocess(*args, "-k", "git-bisect and haiku", timeout=300)
    assert first.ret == pytest.ExitCode.OK, first.stdout.str()
    week = pytester.path / "week"
    old = _rewrite_as_graded_before_reasons(week)
    assert old

    summary = summarize_week(week)  # the old week loads as it is
    assert summary.data["coverage"]["total_runs"] == len(old)

    second = pytester.runpytest_subprocess(*args, "-k", "git-bisect and sonnet", timeout=300)
    out = second.stdout.str()
    assert second.ret == pytest.ExitCode.OK, out
    assert "same verdict rules, the judge now also gives a reason" in out
    from pytest_skilllift.week.files import GRADES_FILE

    for run_id, data in old.items():  # not regraded
        assert (week / run_id / GRADES_FILE).read_bytes() == data, run_id
    new = [p for p in week.glob(f"*/{GRADES_FILE}") if p.parent.name not in old]
    assert len(new) == len(old)
    for path in new:
        data = json.loads(path.read_text())
        assert data["prompt_version"] == PROMPT_VERSION
        misses = [r for r in data["rows"] if r["verdict"] in ("missing", "absent", "violated")]
        assert all(r["judge_reason"] for r in misses)
    record = json.loads((week / "week.json").read_text())
    assert record["identity"]["judge_prompt_version"] == PROMPT_VERSION
    assert any(c.get("what") == "judge_prompt_version" for c in record["changes"])
    assert (week / "scorecard.md").is_file()
    # the viewer: the new runs' reasons in the prompt page's data
    site = build_site(week)
    page = (site.index.parent / "prompts" / page_name("git-bisect-regression")).read_text()
    assert '"why": "the answer never mentions' in page or '"why":"the answer never' in page


def test_skilllift_judge_names_an_old_week_s_prompt_and_its_same_rules(tmp_path: Path) -> None:
    import argparse

    from pytest_skilllift.cli.judge import _recorded_protocol

    notes = {}
    for old in ("skilllift-judge/2", "skilllift-judge/1"):
        week = tmp_path / old.replace("/", "-")
        week.mkdir()
        open_(week, make(judge_prompt_version=old), ALL_RUNS)
        args = argparse.Namespace(judge_model=None, samples=None, evidence=None, mask=None)
        notes[old] = [n for n in _recorded_protocol(week, args) if "judge prompt" in n]
    assert notes["skilllift-judge/2"] == [
        f"judging protocol: the week was graded with judge prompt skilllift-judge/2; this "
        f"version of pytest-skilllift grades with {PROMPT_VERSION} (the same verdict rules; "
        "its grades also carry the judge's reasons)"]
    assert notes["skilllift-judge/1"] == [
        f"judging protocol: the week was graded with judge prompt skilllift-judge/1; this "
        f"version of pytest-skilllift grades with {PROMPT_VERSION}"]


def _hurt_week(tmp_path: Path, reason_column: bool) -> Path:
    """One prompt, haiku, one rep per arm: must-1 met without the skill and missed with it
    (the judge's reason given), must-2 met in both — the skill hurt on every model."""
    from tests.test_report_judging import MANIFEST, SCORES, write_csv

    week = tmp_path / "weekly" / "20260801"
    week.mkdir(parents=True)
    manifest, scores = [], []
    for condition in ("no-skill", "with-skill"):
        run_id = f"alpha-haiku-{condition}-r1-20260801"
        manifest.append({"prompt": "alpha", "model": "haiku", "condition": condition,
                         "rep": 1, "run_id": run_id, "run_status": "ok"})
        lost = condition == "with-skill"
        for index, verdict, quote, why in (
                (1, "missing" if lost else "met", "" if lost else "Runs git bisect run.",
                 f"the answer never mentions bisect {HOSTILE}" if lost else ""),
                (2, "met", "Names the bad commit.", "")):
            scores.append({"prompt": "alpha", "skill": "alpha", "model": "haiku",
                           "condition": condition, "rep": 1, "run_id": run_id,
                           "item_type": "must", "item_index": index,
                           "item_text": f"must {index}", "verdict": verdict,
                           "credit": float(verdict == "met"),
                           "contribution": float(verdict == "met"), "evidence_quote": quote,
                           "evidence_ok": 1, "judge_reason": why})
    write_csv(week / "manifest.csv", MANIFEST, manifest)
    write_csv(week / "scores.csv", SCORES + ["judge_reason"] * reason_column, scores)
    return week


HOSTILE = "<img src=x onerror=alert(1)> | ` ** [x](javascript:1)"


@pytest.mark.parametrize("reason_column", [True, False])
def test_suggested_improvements_quote_the_judge_s_reason_for_the_lost_item(
        tmp_path: Path, reason_column: bool) -> None:
    from pytest_skilllift.report.markdown import untrusted
    from pytest_skilllift.report.summarize import summarize_week

    s = summarize_week(_hurt_week(tmp_path, reason_column), plots=False)
    item = next(i for i in s.data["improvements"]["items"] if i["pattern"] ==
                "hurt on every model")
    assert "misled quote: must “must 1” (no-skill r1: “Runs git bisect run.”)" in item["evidence"]
    reason = (f"; the judge's reason (with-skill r1): “the answer never mentions bisect "
              f"{HOSTILE}”")
    assert (reason in item["evidence"]) == reason_column  # a week without reasons: none
    if reason_column:  # the markdown escapes it with the rest of the evidence
        assert untrusted(item["evidence"]) in s.markdown and "<img" not in s.markdown
