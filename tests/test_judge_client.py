"""The judge client against the local Messages API stand-in, through the real ``anthropic`` SDK."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.judge.client import (
    Judge,
    _classify,
    default_judge_model,
    estimate_cost,
)
from pytest_skilllift.judge.protocol import JUDGE_MARKER, TOOL_NAME
from pytest_skilllift.model import JudgeResult, RubricItem
from pytest_skilllift.testing import FAULT_KINDS, Faults, Reply, StandIn
from pytest_skilllift.testing.judge_script import decide, keyword_judge, make_judge
from pytest_skilllift.week.ledger import Ledger

KEY = "sk-ant-test-DO-NOT-WRITE-0123456789"
MODEL = "claude-opus-4-7"  # listed by the installed SDK and not deprecated

ITEMS = (
    RubricItem("must", "Recommends RRF fusion as the default because score scales differ", 1),
    RubricItem("must", "Gives the go get command for the official Go client", 2),
    RubricItem("must", "Explains the prefetch limit of each branch", 3),
    RubricItem("bonus", "Mentions a formula query for custom fusion", 1),
    RubricItem("avoid", "Recommends tuning HNSW ef before measuring recall", 1),
)
ANSWER = (
    "Use RRF fusion by default, because dense and sparse score scales differ.\n"
    "Each branch has its own prefetch limit; set it to about 100.\n"
    "For custom fusion, a formula query combines scores however you like."
)
EXPECTED = [
    ("must-1", "met"), ("must-2", "missing"), ("must-3", "met"), ("bonus-1", "met"),
    ("avoid-1", "clean"),
]


def fast_judge(api: StandIn, **kw: Any) -> Judge:
    """A judge with test-sized timeouts and backoff."""
    options: dict[str, Any] = {
        "api_key": KEY, "base_url": api.base_url, "timeout_s": 2.0,
        "backoff_base_s": 0.005, "backoff_max_s": 0.02, "max_retries": 6,
    }
    options.update(kw)
    return Judge(MODEL, **options)


def summary(result: JudgeResult) -> list[tuple[str, str, str, bool]]:
    return [(v.item.key, v.verdict, v.evidence, v.evidence_ok) for v in result.verdicts]


@pytest.fixture
def api() -> Iterator[StandIn]:
    with StandIn(judge=keyword_judge, api_key=KEY) as server:
        yield server


# -- the happy path ---------------------------------------------------------------------------


def test_one_request_per_grade_with_forced_tool(api: StandIn) -> None:
    result = fast_judge(api).grade("How should I fuse hybrid results?", ANSWER, ITEMS, seed="r1")
    assert result.error is None and result.ungraded == ()
    assert [(k, v) for k, v, _e, _ok in summary(result)] == EXPECTED
    assert all(ok for *_rest, ok in summary(result))
    assert len(api.requests) == 1 and api.count("judge") == 1
    body = api.bodies("judge")[0]
    assert JUDGE_MARKER in body["system"]
    assert body["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    assert body["model"] == MODEL
    assert result.model == MODEL


def test_close_and_reuse(api: StandIn) -> None:
    judge = fast_judge(api)
    first = judge.grade("q", ANSWER, ITEMS, seed=1)
    judge.close()
    assert summary(judge.grade("q", ANSWER, ITEMS, seed=1)) == summary(first)
    assert api.count("judge") == 2


def test_text_reply_mode(api: StandIn) -> None:
    result = fast_judge(api, reply_mode="text").grade("q", ANSWER, ITEMS, seed="r1")
    assert [(k, v) for k, v, _e, _ok in summary(result)] == EXPECTED
    assert "tools" not in api.bodies("judge")[0]


def test_streaming_reply(api: StandIn) -> None:
    result = fast_judge(api, stream=True).grade("q", ANSWER, ITEMS, seed="r1")
    assert [(k, v) for k, v, _e, _ok in summary(result)] == EXPECTED
    assert api.requests[0].stream


def test_base_url_from_environment(api: StandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    result = Judge(MODEL, backoff_base_s=0.005).grade("q", ANSWER, ITEMS, seed=1)
    assert result.error is None and api.count("judge") == 1


def test_empty_answer_or_rubric_makes_no_call(api: StandIn) -> None:
    judge = fast_judge(api)
    empty = judge.grade("q", "  \n", ITEMS, seed=1)
    assert empty.error and "no gradeable answer" in empty.error
    assert empty.ungraded == ITEMS and empty.verdicts == ()
    assert judge.grade("q", ANSWER, (), seed=1).error is None
    assert api.requests == []


# -- retries ----------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_fault_kind_is_retried_to_success(kind: str, stream: bool) -> None:
    reference = None
    with StandIn(judge=keyword_judge, api_key=KEY) as clean:
        reference = summary(fast_judge(clean).grade("q", ANSWER, ITEMS, seed="r1"))
    delays: list[float] = []

    def sleep(seconds: float) -> None:
        delays.append(seconds)
        time.sleep(seconds)

    faults = Faults(first_n=2, kinds=(kind,), retry_after=0.05, hang_s=5.0)
    with StandIn(judge=keyword_judge, faults=faults, api_key=KEY) as api:
        judge = fast_judge(api, stream=stream, timeout_s=0.3, sleep=sleep)
        result = judge.grade("q", ANSWER, ITEMS, seed="r1")
        assert [r.fault for r in api.requests] == [kind, kind, None]
    assert result.error is None
    assert summary(result) == reference
    assert len(delays) == 2 and len([n for n in result.notes if "retried" in n]) == 2
    if kind == "429":  # the server's retry-after is a floor under the backoff
        assert all(d >= 0.05 for d in delays)


def test_random_faults_do_not_change_verdicts() -> None:
    answers = [ANSWER, ANSWER.split("\n")[0], ANSWER.replace("RRF", "DBSF"), "go get it"]
    runs = [(answer, f"run-{i}") for i, answer in enumerate(answers * 3)]
    with StandIn(judge=keyword_judge, api_key=KEY) as clean:
        judge = fast_judge(clean)
        reference = [summary(judge.grade("q", a, ITEMS, seed=s)) for a, s in runs]
    faults = Faults(rate=0.25, seed=11, retry_after=0.01, hang_s=5.0)
    with StandIn(judge=keyword_judge, faults=faults, api_key=KEY) as api:
        judge = fast_judge(api, timeout_s=0.3, max_retries=8)
        results = [judge.grade("q", a, ITEMS, seed=s) for a, s in runs]
        injected = [r.fault for r in api.requests if r.fault]
    assert injected, "the fault schedule injected nothing; pick another seed"
    assert all(r.error is None for r in results)
    assert [summary(r) for r in results] == reference


def test_exhausted_retries_leave_the_run_unscored(caplog: pytest.LogCaptureFixture) -> None:
    faults = Faults(first_n=100, kinds=("529", "500"))
    with caplog.at_level(logging.WARNING, logger="pytest_skilllift.judge.protocol"), \
            StandIn(judge=keyword_judge, faults=faults, api_key=KEY) as api:
        result = fast_judge(api, max_retries=3).grade("q", ANSWER, ITEMS, seed=1)
        assert len(api.requests) == 4
    assert result.error and "after 4 attempts" in result.error and "HTTP 5" in result.error
    assert result.verdicts == () and result.ungraded == ITEMS and result.cost_usd == 0.0
    assert len([r for r in caplog.records if "retrying" in r.getMessage()]) == 3


def test_reply_cut_off_at_max_tokens_is_named() -> None:
    def cut(body: dict[str, Any]) -> Reply:
        reply = keyword_judge(body)
        reply.content[-1]["input"]["verdicts"] = reply.content[-1]["input"]["verdicts"][:2]
        reply.stop_reason = "max_tokens"
        return reply

    with StandIn(judge=cut, api_key=KEY) as api:
        result = fast_judge(api, max_tokens=64).grade("q", ANSWER, ITEMS, seed=1)
    assert result.error is None and len(result.verdicts) == 2 and len(result.ungraded) == 3
    assert any("max_tokens=64" in n for n in result.notes)


def test_missing_credentials_are_named_not_raised() -> None:
    err = TypeError('"Could not resolve authentication method. Expected one of api_key"')
    retryable, reason, _after = _classify(err, 1.0)
    assert not retryable and "ANTHROPIC_API_KEY" in reason
    with pytest.raises(KeyError):  # anything else is a bug and propagates
        _classify(KeyError("x"), 1.0)


def test_client_errors_are_not_retried() -> None:
    with StandIn(judge=keyword_judge, api_key="another-key") as api:
        result = fast_judge(api).grade("q", ANSWER, ITEMS, seed=1)
        assert len(api.requests) == 1
    assert result.error and "401" in result.error and "not retryable" in result.error
    assert result.ungraded == ITEMS


# -- misbehaving judges, through the wire -----------------------------------------------------


def _grade_with(mode: str) -> JudgeResult:
    with StandIn(judge=make_judge(mode), api_key=KEY) as api:
        return fast_judge(api).grade("q", ANSWER, ITEMS, seed="r1")


@pytest.mark.parametrize("mode", ["fenced-text", "prose-text"])
def test_text_replies_are_never_read_when_the_tool_was_forced(mode: str) -> None:
    # Tool mode reads the forced tool's input only: reply text might be verdict-like text
    # copied from the answer. The run is ungraded (retried later), never scored from text.
    result = _grade_with(mode)
    assert result.error and "did not call the forced tool" in result.error
    assert result.verdicts == () and result.ungraded == ITEMS
    with StandIn(judge=make_judge(mode), api_key=KEY) as api:
        text_mode = fast_judge(api, reply_mode="text").grade("q", ANSWER, ITEMS, seed="r1")
    assert [(k, v) for k, v, _e, _ok in summary(text_mode)] == EXPECTED


def test_bad_json_is_an_error_but_paid_for() -> None:
    result = _grade_with("bad-json")
    assert result.error and result.verdicts == () and result.ungraded == ITEMS
    assert result.cost_usd > 0


@pytest.mark.parametrize("mode", ["wrong-vocab", "missing-index", "duplicate-index"])
def test_unusable_item_verdicts_are_ungraded(mode: str) -> None:
    result = _grade_with(mode)
    assert result.error is None
    assert len(result.ungraded) == 1
    assert len(result.verdicts) == len(ITEMS) - 1
    assert result.ungraded[0] not in {v.item for v in result.verdicts}


def test_fabricated_evidence_earns_nothing() -> None:
    result = _grade_with("fabricated-evidence")
    claimed = [v for v in result.verdicts if v.claimed_verdict]
    assert claimed and not any(v.evidence_ok or v.credit for v in claimed)
    assert {v.claimed_evidence for v in claimed} == {
        "This sentence was never written by the assistant."}
    assert not any(v.verdict in ("met", "violated") for v in result.verdicts)
    assert all(v.evidence_ok for v in result.verdicts if v not in claimed)


# -- cost, secrets ----------------------------------------------------------------------------


def test_cost_is_positive_and_written(api: StandIn, tmp_path: Path) -> None:
    result = fast_judge(api).grade("q", ANSWER, ITEMS, seed=1)
    assert result.cost_usd > 0
    # The ledger writes the qdrant-named file next to the run's grades.
    Ledger(tmp_path).save_grades("run-1", [], result.model, result.cost_usd)
    path = tmp_path / "run-1" / "judge_cost.txt"
    assert float(path.read_text()) == pytest.approx(result.cost_usd, abs=1e-6)


def test_api_key_is_never_written_or_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    results = []
    with StandIn(judge=keyword_judge, api_key=KEY,
                 faults=Faults(first_n=2, kinds=("429", "reset"))) as api:
        judge = fast_judge(api)
        results.append(judge.grade("q", ANSWER, ITEMS, seed=1))
    with StandIn(judge=keyword_judge, api_key="other") as api:
        results.append(fast_judge(api).grade("q", ANSWER, ITEMS, seed=1))  # a 401
    for i, result in enumerate(results):
        Ledger(tmp_path).save_grades(f"run-{i}", [], result.model, result.cost_usd)
        (tmp_path / f"run-{i}" / "result.txt").write_text(repr(result))
    written = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert KEY not in written
    assert KEY not in caplog.text
    assert KEY not in repr(judge)


def test_cost_table() -> None:
    usage = {"input_tokens": 1_000_000, "output_tokens": 1_000_000}
    assert estimate_cost("claude-opus-4-5-20251101", usage) == (30.0, None)
    assert estimate_cost("claude-opus-4-1", usage) == (90.0, None)
    assert estimate_cost("claude-sonnet-4-5", usage) == (18.0, None)
    assert estimate_cost("claude-haiku-4-5", usage) == (6.0, None)
    assert estimate_cost("claude-3-5-haiku-20241022", usage) == (4.8, None)
    cached = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 1_000_000,
              "cache_creation_input_tokens": 1_000_000}
    assert estimate_cost("claude-sonnet-4", cached)[0] == pytest.approx(3 * 1.25 + 3 * 0.1)
    cost, note = estimate_cost("some-local-model", usage)
    assert cost == 30.0 and note and "newest Opus" in note
    cost, note = estimate_cost("claude-opus-5-5", usage)  # newer than the table: assumed
    assert cost == 30.0 and note and "newer than the price table" in note


def test_default_judge_model_is_pinned_in_the_option_table() -> None:
    """The default judge is a literal id in ``config.OPTIONS`` (not "the newest Opus the
    installed SDK lists", read from the SDK's source): one that the SDK's public ``Model``
    type names, used by the client when no model is given."""
    import typing

    from anthropic.types.model import Model

    from pytest_skilllift.config import OPTIONS

    pinned = next(o.default for o in OPTIONS if o.name == "judge-model")
    assert pinned == default_judge_model() == Judge().model
    assert pinned in {a for arg in typing.get_args(Model) for a in typing.get_args(arg)}


def test_keyword_rule() -> None:
    assert decide("must", "Recommends RRF fusion by default", ANSWER) == (
        "met", "Use RRF fusion by default, because dense and sparse score scales differ.")
    assert decide("avoid", "Recommends tuning HNSW ef", ANSWER) == ("clean", "")
    assert decide("bonus", "the of and", ANSWER) == ("absent", "")  # no content words


@pytest.mark.slow  # a fresh interpreter importing the SDK: over a second
def test_prepare_imports_the_sdk_ahead_of_the_first_grade() -> None:
    """The judge service builds its judge ahead of use (``warm_judge``): ``prepare`` imports
    the anthropic SDK then, so the workers' first grades do not wait for its ~3,500 modules
    (benchmarks/README.md, the parallel week). A fresh interpreter: this one has the SDK."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from pytest_skilllift.judge.client import Judge\n"
            "judge = Judge(None, api_key='not-a-key', base_url='http://127.0.0.1:9')\n"
            "before = 'anthropic' in sys.modules\n"
            "judge.prepare()\n"
            "print(before, 'anthropic' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.split() == ["False", "True"]
