"""Several judge samples per run: tie-break, majority, contested flag, exact call counts.

The real judge client (the ``anthropic`` SDK) talks to the stand-in; the scripted judge makes
chosen items flaky (their verdict alternates between calls), so disagreements are scripted,
not hoped for.
"""

from __future__ import annotations

import pytest

from pytest_skilllift.judge.client import Judge
from pytest_skilllift.judge.samples import SampledJudge, combine_samples, sample_seed
from pytest_skilllift.model import ItemVerdict, JudgeResult, RubricItem
from pytest_skilllift.testing import Faults, StandIn
from pytest_skilllift.testing.judge_script import flaky_judge, keyword_judge, make_judge

KEY = "sk-ant-test-samples"
ANSWER = ("Use RRF fusion by default, because dense and sparse score scales differ.\n"
          "A formula query allows custom fusion.")
ITEMS = (
    RubricItem("must", "Recommends RRF fusion by default because score scales differ", 1),
    RubricItem("must", "Explains the prefetch limit of each branch", 2),
    RubricItem("bonus", "Mentions a formula query for custom fusion", 1),
    RubricItem("avoid", "Recommends tuning HNSW ef before measuring recall", 1),
)


def judge(api: StandIn, samples: int, **kw: object) -> SampledJudge:
    inner = Judge("claude-opus-4-7", api_key=KEY, base_url=api.base_url, timeout_s=5.0,
                  backoff_base_s=0.001, backoff_max_s=0.005, **kw)  # type: ignore[arg-type]
    return SampledJudge(inner, samples=samples)


def by_key(result: JudgeResult) -> dict[str, ItemVerdict]:
    return {v.item.key: v for v in result.verdicts}


def test_one_sample_is_one_call_and_the_old_shuffle() -> None:
    with StandIn(judge=keyword_judge) as api:
        result = judge(api, 1).grade("q", ANSWER, ITEMS, "run-1")
        assert api.count("judge") == 1
        sent = api.bodies("judge")[0]
    assert (result.calls, result.samples, result.tie_breaks) == (1, 1, 0)
    assert not any(v.contested or v.samples for v in result.verdicts)
    # Sample 1 uses the run's own seed: one sample grades exactly as before.
    from pytest_skilllift.judge.protocol import build_judge_request
    shown = build_judge_request("q", ANSWER, ITEMS, sample_seed("run-1", 1)).shown
    first_line = sent["messages"][0]["content"][2]["text"].splitlines()[1]
    assert first_line.endswith(" ".join(shown[0].text.split()))


def test_agreeing_samples_make_no_tie_break() -> None:
    with StandIn(judge=keyword_judge) as api:
        result = judge(api, 2).grade("q", ANSWER, ITEMS, "run-1")
        assert api.count("judge") == 2
    assert (result.calls, result.samples, result.tie_breaks) == (2, 2, 0)
    assert not any(v.contested for v in result.verdicts)
    assert all(len(v.samples) == 2 for v in result.verdicts)
    assert by_key(result)["must-1"].verdict == "met"


def test_disagreement_gets_one_tie_break_and_the_majority_is_recorded() -> None:
    with StandIn(judge=flaky_judge("prefetch limit")) as api:
        result = judge(api, 2).grade("q", ANSWER, ITEMS, "run-1")
        bodies = api.bodies("judge")
    # 2 samples + 1 tie-break, exactly; the tie-break shows only the disputed item.
    assert len(bodies) == 3 and (result.calls, result.tie_breaks) == (3, 1)
    rubric = bodies[2]["messages"][0]["content"][2]["text"]
    assert "prefetch limit" in rubric and "RRF" not in rubric
    flaky = by_key(result)["must-2"]
    # keyword verdict "missing" (sample 1), flipped "met" (sample 2), "missing" (tie-break)
    assert [s.verdict for s in flaky.samples] == ["missing", "met", "missing"]
    assert [s.tie_break for s in flaky.samples] == [False, False, True]
    assert flaky.samples[1].evidence and flaky.samples[1].evidence_ok  # a real quote
    assert (flaky.verdict, flaky.credit, flaky.contested) == ("missing", 0.0, True)
    others = [v for v in result.verdicts if v.item.key != "must-2"]
    assert others and not any(v.contested for v in others)
    assert all(len(v.samples) == 2 for v in others)


def test_three_samples_take_the_majority_without_a_tie_break() -> None:
    with StandIn(judge=flaky_judge("formula query")) as api:
        result = judge(api, 3).grade("q", ANSWER, ITEMS, "run-1")
        assert api.count("judge") == 3
    bonus = by_key(result)["bonus-1"]
    assert [s.verdict for s in bonus.samples] == ["met", "absent", "met"]
    assert (bonus.verdict, bonus.contested, result.tie_breaks, result.calls) == (
        "met", True, 0, 3)


def test_the_evidence_check_applies_to_every_sample() -> None:
    """A sample that claims met with a quote the answer lacks votes missing, and is named."""
    calls = {"n": 0}
    liar = make_judge("lenient-liar")

    def one_liar(body: dict[str, object]) -> object:
        calls["n"] += 1
        return liar(body) if calls["n"] == 2 else keyword_judge(body)

    with StandIn(judge=one_liar) as api:  # type: ignore[arg-type]
        result = judge(api, 2).grade("q", ANSWER, ITEMS, "run-1")
    must2 = by_key(result)["must-2"]
    assert [s.verdict for s in must2.samples] == ["missing", "missing"]
    assert must2.samples[1].claimed_verdict == "met"
    assert (must2.verdict, must2.credit, must2.contested, must2.evidence_ok) == (
        "missing", 0.0, False, False)
    assert must2.claimed_evidence == "The answer covers this point in full detail."
    assert result.tie_breaks == 0  # the rejected vote agreed with the honest one


def test_a_failed_sample_is_named_and_the_other_counts() -> None:
    with StandIn(judge=keyword_judge, api_key=KEY,
                 faults=Faults(first_n=1, kinds=("500",), only="judge")) as api:
        inner = Judge("claude-opus-4-7", api_key=KEY, base_url=api.base_url, max_retries=0)
        result = SampledJudge(inner, samples=2).grade("q", ANSWER, ITEMS, "run-1")
    assert result.error is None and result.calls == 2
    assert any(n.startswith("sample 1 failed") for n in result.notes)
    assert all(len(v.samples) == 1 and v.samples[0].sample == 2 for v in result.verdicts)


def test_every_sample_failing_is_an_error_never_a_zero() -> None:
    failed = JudgeResult(verdicts=(), cost_usd=0.01, model="m", error="HTTP 500",
                         ungraded=ITEMS, calls=1)
    result = combine_samples(ITEMS, [failed, failed])
    assert result.error and "every judge sample failed" in result.error
    assert result.verdicts == () and result.ungraded == ITEMS
    assert result.calls == 2 and result.cost_usd == pytest.approx(0.02)


def test_a_tie_left_unbroken_is_ungraded() -> None:
    item = ITEMS[0]
    met = ItemVerdict(item, "met", "Use RRF", 1.0, 1.0, True)
    missing = ItemVerdict(item, "missing", "", 0.0, 0.0, True)
    results = [JudgeResult((met,), 0.0, "m", calls=1), JudgeResult((missing,), 0.0, "m", calls=1)]
    tie = JudgeResult((), 0.0, "m", error="HTTP 529", ungraded=(item,), calls=1)
    result = combine_samples((item,), results, tie)
    assert result.verdicts == () and result.ungraded == (item,)
    assert result.calls == 3 and result.tie_breaks == 1
    assert any("no tie-break settled it" in n for n in result.notes)


def test_samples_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        SampledJudge(keyword_judge, samples=0)  # type: ignore[arg-type]
