"""The controller's shared judge: workers grade through it; a stranger cannot."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Sequence

import pytest

from pytest_skilllift.judge.service import (
    TOKEN_HEADER,
    JudgeService,
    RemoteGrader,
    result_from_dict,
    result_to_dict,
)
from pytest_skilllift.model import ItemVerdict, JudgeResult, RubricItem, SampleVote

ITEMS = (RubricItem("must", "does A", 1), RubricItem("avoid", "does B", 1))


class CountingGrader:
    model = "judge-x"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    def grade(self, prompt_text: str, answer: str, items: Sequence[RubricItem],
              seed: int | str) -> JudgeResult:
        self.calls.append((prompt_text, str(seed), len(items)))
        first = ItemVerdict(items[0], "met", "A!", 1.0, 1.0, True)
        return JudgeResult(verdicts=(first,), cost_usd=0.25, model=self.model,
                           ungraded=tuple(items[1:]), notes=("one ungraded",))


def test_result_round_trips_through_json() -> None:
    result = CountingGrader().grade("p", "a", ITEMS, 1)
    assert result_from_dict(result_to_dict(result)) == result


def test_sampled_result_round_trips_through_json() -> None:
    votes = (SampleVote(1, "met", "A!", True), SampleVote(2, "missing", "", True),
             SampleVote(3, "met", "A!", True, tie_break=True))
    verdict = ItemVerdict(ITEMS[0], "met", "A!", 1.0, 1.0, True, contested=True,
                          claimed_verdict="met", claimed_evidence="not there", samples=votes)
    result = JudgeResult(verdicts=(verdict,), cost_usd=0.5, model="m", calls=3, samples=2,
                         tie_breaks=1, evidence_policy="flag")
    assert result_from_dict(result_to_dict(result)) == result


def test_workers_share_one_grader_and_strangers_are_refused() -> None:
    built: list[CountingGrader] = []

    def factory() -> CountingGrader:
        built.append(CountingGrader())
        return built[-1]

    service = JudgeService(factory)
    url = service.start()
    try:
        first = RemoteGrader(url, service.token).grade("prompt", "answer", ITEMS, "run-1")
        second = RemoteGrader(url, service.token).grade("prompt", "answer", ITEMS, "run-2")
        assert first.verdicts[0].verdict == "met" and first.ungraded == ITEMS[1:]
        assert second.cost_usd == 0.25 and second.notes == ("one ungraded",)
        assert len(built) == 1 and [c[1] for c in built[0].calls] == ["run-1", "run-2"]
        stranger = urllib.request.Request(url, data=b"{}", method="POST",
                                          headers={TOKEN_HEADER: "guess"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(stranger, timeout=10)
        assert err.value.code == 403
    finally:
        service.stop()


def test_a_failing_judge_leaves_items_ungraded_never_zero() -> None:
    def broken() -> CountingGrader:
        raise RuntimeError("no ANTHROPIC_API_KEY")

    service = JudgeService(broken)
    url = service.start()
    try:
        result = RemoteGrader(url, service.token).grade("p", "a", ITEMS, 1)
    finally:
        service.stop()
    assert result.verdicts == () and result.ungraded == ITEMS
    assert result.error is not None and "no ANTHROPIC_API_KEY" in result.error


def test_an_unreachable_service_is_an_error_result() -> None:
    result = RemoteGrader("http://127.0.0.1:9", "t", timeout_s=5).grade("p", "a", ITEMS, 1)
    assert result.error is not None and "unreachable" in result.error
    assert result.ungraded == ITEMS
