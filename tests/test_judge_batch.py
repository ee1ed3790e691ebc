"""Batch judging through the Message Batches API: the real ``anthropic`` SDK against the
stand-in's batch endpoints (create, retrieve, results as JSONL)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.judge.batch import (
    BATCH_PRICE_FACTOR,
    BatchJudge,
    BatchRequest,
    custom_id,
    forget_batches,
)
from pytest_skilllift.judge.client import Judge
from pytest_skilllift.judge.protocol import build_judge_request
from pytest_skilllift.testing import StandIn
from pytest_skilllift.testing.batches import BatchScript
from pytest_skilllift.testing.judge_script import keyword_judge
from pytest_skilllift.week.files import BATCHES_FILE
from tests.test_judge_client import ANSWER, EXPECTED, ITEMS, KEY, MODEL

RUN_IDS = [f"prompt-{i}-haiku-with-skill-r1-20260808" for i in range(5)]


class Interrupted(Exception):
    """Stands for a SIGINT/SIGKILL while the session waits for a batch."""


def make(api: StandIn, week: Path, **kw: Any) -> BatchJudge:
    return BatchJudge(week, MODEL, api_key=KEY, base_url=api.base_url, poll_s=0.0, **kw)


def requests(judge: BatchJudge, run_ids: list[str] = RUN_IDS) -> list[BatchRequest]:
    return [judge.request(custom_id(r), build_judge_request("Q?", ANSWER, ITEMS, r))
            for r in run_ids]


def direct_calls(api: StandIn) -> int:
    return sum(1 for r in api.requests if r.kind == "judge" and r.path == "/v1/messages")


def batched_calls(api: StandIn) -> int:
    return sum(1 for r in api.requests if r.kind == "judge" and r.path != "/v1/messages")


def verdicts(result: Any) -> list[tuple[str, str]]:
    return [(v.item.key, v.verdict) for v in result.verdicts]


def test_custom_id_is_the_run_id_or_a_safe_unique_form() -> None:
    assert custom_id("a-b_c-r1-20260808") == "a-b_c-r1-20260808"
    assert custom_id("a-b_c-r1-20260808", 2) == "a-b_c-r1-20260808__s2"
    long_a, long_b = "x" * 70 + "a", "x" * 70 + "b"
    ids = {custom_id(long_a), custom_id(long_b), custom_id("has.dot"), custom_id("has/dot")}
    assert len(ids) == 4
    assert all(len(i) <= 64 and i.replace("-", "").replace("_", "").isalnum() for i in ids)


def test_chunks_stay_within_request_and_byte_limits(tmp_path: Path) -> None:
    judge = BatchJudge(tmp_path, MODEL, max_requests=2)
    reqs = requests(judge)
    assert [len(c) for c in judge.chunks(reqs)] == [2, 2, 1]
    judge = BatchJudge(tmp_path, MODEL, max_bytes=2 * reqs[0].size + 10)
    chunks = judge.chunks(reqs)
    assert [len(c) for c in chunks] == [2, 2, 1]
    assert all(sum(r.size for r in c) <= judge.max_bytes for c in chunks)


def test_batch_grades_map_back_by_custom_id_at_half_price(tmp_path: Path) -> None:
    script = BatchScript(polls_before_end=2)
    slept: list[float] = []
    with StandIn(judge=keyword_judge, batch=script) as api:
        judge = make(api, tmp_path, max_requests=3, sleep=slept.append)
        judge.poll_s = 5.0
        got = judge.grade(requests(judge))
        # the same request graded directly, for the price comparison
        direct = Judge(MODEL, api_key=KEY, base_url=api.base_url).grade("Q?", ANSWER, ITEMS,
                                                                       RUN_IDS[0])
        assert len(api.batches.created) == 2  # 5 requests in chunks of 3
        assert batched_calls(api) == 5 and direct_calls(api) == 1
    assert set(got) == set(RUN_IDS)
    for result in got.values():  # the stand-in returns results in reverse order
        assert result.error is None and verdicts(result) == EXPECTED
    assert got[RUN_IDS[0]].cost_usd == pytest.approx(direct.cost_usd * BATCH_PRICE_FACTOR)
    assert got[RUN_IDS[0]].cost_usd > 0
    assert slept == [5.0, 5.0]  # two polls in progress, then ended
    stored = json.loads((tmp_path / BATCHES_FILE).read_text())
    assert [b["status"] for b in stored["batches"]] == ["ended", "ended"]
    assert sorted(c for b in stored["batches"] for c in b["requests"]) == sorted(RUN_IDS)


def test_an_interrupted_pass_resumes_polling_without_a_second_submission(
        tmp_path: Path) -> None:
    def interrupt(_s: float) -> None:
        raise Interrupted

    with StandIn(judge=keyword_judge, batch=BatchScript(polls_before_end=1)) as api:
        judge = make(api, tmp_path, sleep=interrupt)
        with pytest.raises(Interrupted):
            judge.grade(requests(judge))
        assert len(api.batches.created) == 1  # on file before the first poll
        lines: list[str] = []
        again = make(api, tmp_path, log=lines.append)
        got = again.grade(requests(again))
        assert len(api.batches.created) == 1  # polled, not submitted again
        assert again.submitted == [] and again.resumed == api.batches.created
        assert any("resuming Message Batch" in line for line in lines)
    assert all(verdicts(r) == EXPECTED for r in got.values())


def test_errored_and_expired_are_retried_once_then_ungraded_never_zero(tmp_path: Path) -> None:
    flaky, dead = custom_id(RUN_IDS[0]), custom_id(RUN_IDS[1])
    script = BatchScript(errored=frozenset({flaky}), expired=frozenset({dead}), times=1)
    with StandIn(judge=keyword_judge, batch=script) as api:
        judge = make(api, tmp_path)
        got = judge.grade(requests(judge))
        assert len(api.batches.created) == 2  # the first, then one retry batch of two
        assert sorted(judge.retried) == sorted([flaky, dead])
    assert all(r.error is None and verdicts(r) == EXPECTED for r in got.values())

    script = BatchScript(errored=frozenset({flaky}), expired=frozenset({dead}), times=0)
    with StandIn(judge=keyword_judge, batch=script) as api:
        judge = make(api, tmp_path / "always")
        got = judge.grade(requests(judge))
        assert len(api.batches.created) == 2  # retried once, not forever
        assert api.batches.submitted(flaky) == 2
        # a session started again does not submit them a third time
        again = make(api, tmp_path / "always")
        again_got = again.grade(requests(again))
        assert len(api.batches.created) == 2
    for cid, word in ((flaky, "errored"), (dead, "expired")):
        for result in (got[cid], again_got[cid]):
            assert result.verdicts == () and result.cost_usd == 0.0
            assert word in (result.error or "") and "ungraded after 2 batch attempt" in (
                result.error or "")
            assert {i.key for i in result.ungraded} == {i.key for i in ITEMS}
    assert all(got[c].error is None for c in map(custom_id, RUN_IDS[2:]))


def test_a_changed_request_or_a_fresh_pass_is_submitted_anew(tmp_path: Path) -> None:
    with StandIn(judge=keyword_judge) as api:
        judge = make(api, tmp_path)
        judge.grade(requests(judge, RUN_IDS[:2]))
        again = make(api, tmp_path)
        again.grade(requests(again, RUN_IDS[:2]))
        assert len(api.batches.created) == 1  # same requests: the batch on file serves them
        edited = [again.request(custom_id(r), build_judge_request("Q?", ANSWER, ITEMS[:2], r))
                  for r in RUN_IDS[:2]]
        again.grade(edited)
        assert len(api.batches.created) == 2  # a rubric edit is another request
        assert forget_batches(tmp_path)
        fresh = make(api, tmp_path)
        fresh.grade(edited)
        assert len(api.batches.created) == 3  # --fresh reuses nothing


def test_skilllift_judge_batch_sends_samples_then_one_tie_break_batch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``skilllift judge WEEKDIR --batch --samples 2``: round one carries every sample of every
    run (custom_id = run id, then run id + sample), a second batch only the tie-breaks."""
    from pytest_skilllift.cli.main import main as skilllift
    from pytest_skilllift.testing.judge_script import flaky_judge

    prompt = tmp_path / "fusion.json"
    prompt.write_text(json.dumps({"name": "fusion", "prompt": "Q?", "rubric": [
        {"type": t, "text": i.text} for t, i in ((i.type, i) for i in ITEMS)]}))
    week = tmp_path / "week"
    run_ids = [f"fusion-haiku-{c}-r1-week" for c in ("no-skill", "with-skill")]
    for run_id, cond in zip(run_ids, ("no-skill", "with-skill"), strict=True):
        (week / run_id).mkdir(parents=True)
        (week / run_id / "run.json").write_text(json.dumps({
            "run_id": run_id, "prompt": "fusion", "model": "haiku", "condition": cond,
            "rep": 1, "run_status": "ok", "final_answer": f"{ANSWER}\nThis is the {cond} run.",
            "prompt_path": str(prompt), "skill_leaf": "fusion/SKILL.md"}))
    with StandIn(judge=flaky_judge("prefetch limit")) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        code = skilllift(["judge", str(week), "--batch", "--batch-poll", "0", "--samples", "2",
                          "--judge-model", MODEL])
        created = api.batches.created
        sent = [r.body for r in api.requests if r.kind == "judge"]
        assert direct_calls(api) == 0
    err = capsys.readouterr().err
    assert code == 0, err
    assert len(created) == 2 and len(sent) == 2 * 2 + 2  # 2 runs × 2 samples, 2 tie-breaks
    stored = json.loads((week / BATCHES_FILE).read_text())["batches"]
    assert sorted(stored[0]["requests"]) == sorted(
        [*run_ids, *(f"{r}__s2" for r in run_ids)])
    assert sorted(stored[1]["requests"]) == sorted(f"{r}__tie" for r in run_ids)
    for run_id in run_ids:
        grades = json.loads((week / run_id / "grades.json").read_text())
        flaky = next(r for r in grades["rows"] if "prefetch limit" in r["item_text"])
        # keyword verdict (sample 1), flipped (sample 2), keyword again (the tie-break)
        assert (flaky["verdict"], flaky["contested"]) == ("met", 1)
        assert [s["verdict"] for s in flaky["samples"]] == ["met", "missing", "met"]
        assert grades["judge_calls"] == 3 and grades["tie_breaks"] == 1
        assert float((week / run_id / "judge_cost.txt").read_text()) == pytest.approx(
            grades["cost_usd"], abs=1e-6) and grades["cost_usd"] > 0
    assert (week / "scores.csv").is_file() and (week / "scorecard.json").is_file()


def test_batch_judging_masks_the_arm_like_direct_judging(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``--batch`` goes through the arm-leak mask too: the batch requests carry the masked
    answer, and grades.json counts the leaks and records the mask — as a directly graded run
    does, so week.json's recorded mask is true of batch-graded runs."""
    from pytest_skilllift.cli.main import main as skilllift
    from pytest_skilllift.judge.mask import MASK

    prompt = tmp_path / "fusion.json"
    prompt.write_text(json.dumps({"name": "fusion", "prompt": "Q?", "rubric": [
        {"type": i.type, "text": i.text} for i in ITEMS]}))
    week = tmp_path / "week"
    run_id = "fusion-haiku-with-skill-r1-week"
    (week / run_id).mkdir(parents=True)
    (week / run_id / "run.json").write_text(json.dumps({
        "run_id": run_id, "prompt": "fusion", "model": "haiku", "condition": "with-skill",
        "rep": 1, "run_status": "ok",
        "final_answer": f"Following the fusion skill and SKILL.md:\n{ANSWER}",
        "prompt_path": str(prompt), "skill_leaf": "fusion/SKILL.md"}))
    with StandIn(judge=keyword_judge) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        code = skilllift(["judge", str(week), "--batch", "--batch-poll", "0",
                          "--judge-model", MODEL])
        sent = json.dumps([r.body for r in api.requests if r.kind == "judge"])
        assert direct_calls(api) == 0 and batched_calls(api) >= 1
    assert code == 0, capsys.readouterr().err
    assert "fusion skill" not in sent and "SKILL.md:" not in sent and MASK in sent
    grades = json.loads((week / run_id / "grades.json").read_text())
    assert grades["arm_leaks"] == 2 and grades["judge_mask"] is True
    assert {r["verdict"] for r in grades["rows"]} >= {"met"}  # graded, not refused


def test_batch_judging_sends_a_skill_creator_evals_expected_output_as_direct_judging_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """An evals.json run's ``expected_output`` reaches the judge as context
    (``judge_prompt_text``) whether it is graded directly or through ``--batch``: the batch
    path once sent the bare prompt, so a batch judge never saw the eval's expected output."""
    from pytest_skilllift.cli.main import main as skilllift
    from pytest_skilllift.run.skill_creator import CONTEXT_HEADER
    from tests.test_run_skill_creator import GIT_BISECT_EVALS

    evals = tmp_path / "evals.json"
    evals.write_text(json.dumps(GIT_BISECT_EVALS))
    week = tmp_path / "week"
    run_id = "git-bisect-eval-1-haiku-with-skill-r1-week"
    (week / run_id).mkdir(parents=True)
    (week / run_id / "run.json").write_text(json.dumps({
        "run_id": run_id, "prompt": "git-bisect-eval-1", "model": "haiku",
        "condition": "with-skill", "rep": 1, "run_status": "ok", "final_answer": ANSWER,
        "prompt_path": str(evals)}))
    expected = GIT_BISECT_EVALS["evals"][0]["expected_output"]
    with StandIn(judge=keyword_judge) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        code = skilllift(["judge", str(week), "--batch", "--batch-poll", "0",
                          "--judge-model", MODEL])
        sent = json.dumps([r.body for r in api.requests if r.kind == "judge"])
        assert direct_calls(api) == 0 and batched_calls(api) >= 1
    assert code == 0, capsys.readouterr().err
    assert json.dumps(CONTEXT_HEADER)[1:-1] in sent and json.dumps(expected)[1:-1] in sent
