"""The judge protocol, pure: request building, shuffle, reply parsing, evidence check."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_skilllift.judge.protocol import (
    JUDGE_MARKER,
    TOOL_NAME,
    JudgeReplyError,
    build_judge_request,
    evidence_found,
    extract_payload,
    parse_judge_reply,
    parse_rubric_block,
)
from pytest_skilllift.model import RubricItem
from pytest_skilllift.week.columns import VERDICTS

ITEMS = (
    RubricItem("must", "Recommends RRF as the default because score scales are incomparable", 1),
    RubricItem("must", "Explains how to set the prefetch limit", 2),
    RubricItem("must", "Shows a hybrid query with dense and sparse vectors", 3),
    RubricItem("bonus", "Mentions custom fusion via a formula query", 1),
    RubricItem("bonus", "Notes DBSF as an alternative", 2),
    RubricItem("avoid", "Picks a fusion method without running comparative experiments", 1),
    RubricItem("avoid", "Invents a config key", 2),
)
ANSWER = (
    "Use **RRF** as the default: dense and sparse score scales are incomparable.\n"
    "Set `prefetch.limit` to about 100 per branch.\n"
    "For custom fusion, write a \u201cformula\u201d query."
)


def _order(seed: int | str) -> list[str]:
    return [item.key for item in build_judge_request("q", ANSWER, ITEMS, seed).shown]


def _reply(request: Any, verdicts: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """A forced-tool reply giving ``(item_key, verdict, evidence)`` by *original* item."""
    shown_index = {item.key: i for i, item in enumerate(request.shown, start=1)}
    payload = {"verdicts": [
        {"index": shown_index[key], "verdict": verdict, "evidence": evidence}
        for key, verdict, evidence in verdicts
    ]}
    return [{"type": "tool_use", "id": "toolu_1", "name": TOOL_NAME, "input": payload}]


ALL_GOOD = [
    ("must-1", "met", "Use RRF as the default"),
    ("must-2", "met", "Set prefetch.limit to about 100 per branch."),
    ("must-3", "missing", ""),
    ("bonus-1", "met", 'write a "formula" query'),
    ("bonus-2", "absent", ""),
    ("avoid-1", "clean", ""),
    ("avoid-2", "clean", ""),
]


# -- request ----------------------------------------------------------------------------------


def test_shuffle_is_deterministic_per_seed() -> None:
    assert _order("run-1") == _order("run-1")
    assert _order(7) == _order("7")  # seeded through f"{seed}"


def test_shuffle_differs_across_seeds() -> None:
    orders = {tuple(_order(f"run-{i}")) for i in range(10)}
    assert len(orders) > 5
    assert any(list(o) != [i.key for i in ITEMS] for o in orders)


def test_items_are_numbered_by_shown_position_with_their_vocabulary() -> None:
    request = build_judge_request("q", ANSWER, ITEMS, seed=3)
    rubric = request.messages[0]["content"][2]["text"]
    rows = parse_rubric_block(rubric)
    assert [r[0] for r in rows] == list(range(1, len(ITEMS) + 1))
    for (_i, item_type, positive, negative, text), item in zip(rows, request.shown, strict=True):
        assert (item_type, text) == (item.type, item.text)
        assert (positive, negative) == VERDICTS[item.type]


def test_request_is_blind() -> None:
    secrets = ["claude-haiku-4-5", "with-skill", "no-skill", "20260808-qdrant-edge-haiku-r1"]
    request = build_judge_request("How do I fuse?", ANSWER, ITEMS, seed=secrets[-1])
    sent = json.dumps(request.api_kwargs("claude-opus-4-5", 4096))
    sent_without_model = sent.replace('"claude-opus-4-5"', "")
    for secret in secrets:
        assert secret not in sent_without_model
    # Only the three inputs reach the judge: prompt, answer, rubric.
    assert "How do I fuse?" in request.user_text
    assert ANSWER in request.user_text


def test_system_prompt_carries_marker_and_rules() -> None:
    request = build_judge_request("q", ANSWER, ITEMS, seed=1)
    assert JUDGE_MARKER in request.system
    assert "hunt" in request.system  # adversarial framing for avoid items
    assert "verbatim" in request.system


def test_marker_matches_the_stand_in() -> None:
    server = pytest.importorskip("pytest_skilllift.testing.server")
    assert server.JUDGE_MARKER == JUDGE_MARKER


def test_forced_tool_by_default_and_text_mode() -> None:
    tool = build_judge_request("q", ANSWER, ITEMS, seed=1).api_kwargs("m", 100)
    assert tool["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    assert [t["name"] for t in tool["tools"]] == [TOOL_NAME]
    text = build_judge_request("q", ANSWER, ITEMS, seed=1, reply_mode="text").api_kwargs("m", 1)
    assert "tools" not in text and "tool_choice" not in text


def test_unknown_item_type_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown type 'should'"):
        build_judge_request("q", ANSWER, [RubricItem("should", "x", 1)], seed=1)


# -- reply ------------------------------------------------------------------------------------


def test_index_mapping_round_trip() -> None:
    for seed in range(5):
        request = build_judge_request("q", ANSWER, ITEMS, seed=seed)
        result = parse_judge_reply(request, _reply(request, ALL_GOOD), model="m", cost_usd=0.1)
        assert result.error is None and result.ungraded == ()
        got = [(v.item.key, v.verdict) for v in result.verdicts]
        assert got == [(key, verdict) for key, verdict, _ in ALL_GOOD]  # original order


def test_credit_and_contribution_from_columns() -> None:
    request = build_judge_request("q", ANSWER, ITEMS, seed=1)
    verdicts = [*ALL_GOOD[:-1], ("avoid-2", "violated", "Use RRF as the default")]
    by_key = {v.item.key: v for v in parse_judge_reply(request, _reply(request, verdicts)).verdicts}
    assert (by_key["must-1"].credit, by_key["must-1"].contribution) == (1.0, 1.0)
    assert (by_key["must-3"].credit, by_key["must-3"].contribution) == (0.0, 0.0)
    assert (by_key["avoid-2"].credit, by_key["avoid-2"].contribution) == (1.0, -1.0)
    assert (by_key["avoid-1"].credit, by_key["avoid-1"].contribution) == (0.0, -0.0)


def test_wrong_vocabulary_leaves_item_ungraded() -> None:
    request = build_judge_request("q", ANSWER, ITEMS, seed=1)
    verdicts = [("must-1", "partial", "Use RRF"), ("avoid-1", "met", "Use RRF"),
                ("bonus-2", "missing", ""), *ALL_GOOD[1:3], ALL_GOOD[3], ALL_GOOD[6]]
    result = parse_judge_reply(request, _reply(request, verdicts))
    assert {i.key for i in result.ungraded} == {"must-1", "avoid-1", "bonus-2"}
    assert {v.item.key for v in result.verdicts} == {"must-2", "must-3", "bonus-1", "avoid-2"}
    assert any("partial" in n for n in result.notes)
    assert result.error is None


def test_missing_and_duplicate_indices_are_ungraded_not_zero() -> None:
    request = build_judge_request("q", ANSWER, ITEMS, seed=1)
    content = _reply(request, ALL_GOOD[1:])  # must-1 missing
    first = content[0]["input"]["verdicts"][0]
    content[0]["input"]["verdicts"].append(dict(first, verdict="missing"))  # duplicated
    content[0]["input"]["verdicts"].append({"index": 99, "verdict": "met", "evidence": "x"})
    result = parse_judge_reply(request, content)
    ungraded = {i.key for i in result.ungraded}
    assert "must-1" in ungraded  # no verdict at all
    assert len(ungraded) == 2  # and the item whose index came back twice
    assert not ungraded & {v.item.key for v in result.verdicts}
    assert any("unknown index 99" in n for n in result.notes)


def test_case_and_string_index_are_tolerated() -> None:
    request = build_judge_request("q", ANSWER, ITEMS[:1], seed=1, reply_mode="text")
    content = [{"type": "text", "text": json.dumps(
        {"verdicts": [{"index": "1", "verdict": " MET ", "evidence": "Use RRF"}]})}]
    result = parse_judge_reply(request, content)
    assert [v.verdict for v in result.verdicts] == ["met"]


@pytest.mark.parametrize("wrap", [
    "{payload}",
    "```json\n{payload}\n```",
    "Here is my grading:\n\n```\n{payload}\n```\nThanks.",
    "After careful reading {{not json}} the verdicts are {payload} -- done.",
])
def test_text_replies_fenced_or_in_prose(wrap: str) -> None:
    request = build_judge_request("q", ANSWER, ITEMS, seed=4, reply_mode="text")
    payload = json.dumps(_reply(request, ALL_GOOD)[0]["input"], indent=1)
    result = parse_judge_reply(request, wrap.format(payload=payload))
    assert result.error is None
    assert len(result.verdicts) == len(ITEMS)


def test_tool_input_wins_and_sdk_like_objects_work() -> None:
    request = build_judge_request("q", ANSWER, ITEMS, seed=2)
    tool = _reply(request, ALL_GOOD)[0]

    class Block:  # attribute access, like the SDK's content block models
        def __init__(self, **kw: Any) -> None:
            self.__dict__.update(kw)

    content = [Block(type="text", text='{"verdicts": []}'), Block(**tool)]
    assert len(parse_judge_reply(request, content).verdicts) == len(ITEMS)


def test_unparseable_reply_is_an_error_with_every_item_ungraded() -> None:
    request = build_judge_request("q", ANSWER, ITEMS, seed=1)
    result = parse_judge_reply(request, "The answer is good overall.", cost_usd=0.02)
    assert result.error and "verdicts" in result.error
    assert result.verdicts == ()
    assert result.ungraded == ITEMS
    assert result.cost_usd == 0.02  # the call was still paid for
    with pytest.raises(JudgeReplyError):
        extract_payload([{"type": "tool_use", "name": "other_tool", "input": {"verdicts": []}}])


# -- evidence ---------------------------------------------------------------------------------


@pytest.mark.parametrize("quote", [
    "Use RRF as the default",  # markdown bold in the answer
    "Set `prefetch.limit` to about",
    "Set prefetch.limit   to about\n100 per branch.",  # whitespace
    "\u201cUse RRF as the default\u201d",  # wrapped in curly quotes
    'write a "formula" query',  # straight quotes for curly ones
    "Use RRF as the default ... write a \u201cformula\u201d query",  # elision, in order
])
def test_evidence_found_after_normalisation(quote: str) -> None:
    assert evidence_found(quote, ANSWER)


@pytest.mark.parametrize("quote", [
    "", "   ", "...", "Use DBSF as the default",
    "write a formula query ... Use RRF as the default",  # pieces out of order
    "use rrf as the default",  # case is part of verbatim
])
def test_evidence_not_found(quote: str) -> None:
    assert not evidence_found(quote, ANSWER)


def test_quote_not_in_the_answer_earns_nothing() -> None:
    """The default policy: a met/violated without a verbatim quote is the negative verdict,
    credit 0, with the judge's claim kept beside it."""
    request = build_judge_request("q", ANSWER, ITEMS, seed=1)
    verdicts = [("must-1", "met", ""), ("must-2", "met", "Set the HNSW ef to 512"),
                ("avoid-1", "violated", "Use RRF as the default"), *ALL_GOOD[2:5],
                ("avoid-2", "violated", "uses the key fusion_mode")]
    result = parse_judge_reply(request, _reply(request, verdicts))
    by_key = {v.item.key: v for v in result.verdicts}
    assert (by_key["must-1"].verdict, by_key["must-1"].credit) == ("missing", 0.0)
    assert (by_key["must-1"].claimed_verdict, by_key["must-1"].claimed_evidence) == ("met", "")
    must2 = by_key["must-2"]
    assert (must2.verdict, must2.credit, must2.evidence, must2.evidence_ok) == (
        "missing", 0.0, "", False)
    assert (must2.claimed_verdict, must2.claimed_evidence) == ("met", "Set the HNSW ef to 512")
    avoid2 = by_key["avoid-2"]
    assert (avoid2.verdict, avoid2.credit, avoid2.claimed_verdict) == ("clean", 0.0, "violated")
    assert by_key["avoid-1"].verdict == "violated" and by_key["avoid-1"].evidence_ok is True
    assert by_key["avoid-1"].claimed_verdict == ""
    assert by_key["must-3"].evidence_ok is True  # nothing required for "missing"
    assert any("must-2" in n and "recorded as missing" in n for n in result.notes)


def test_flag_policy_keeps_the_claimed_verdict() -> None:
    request = build_judge_request("q", ANSWER, ITEMS, seed=1)
    verdicts = [("must-1", "met", ""), ("must-2", "met", "Set the HNSW ef to 512"),
                *ALL_GOOD[2:]]
    result = parse_judge_reply(request, _reply(request, verdicts), evidence="flag")
    by_key = {v.item.key: v for v in result.verdicts}
    assert by_key["must-1"].verdict == "met" and by_key["must-1"].evidence_ok is False
    assert by_key["must-2"].verdict == "met" and by_key["must-2"].credit == 1.0
    assert by_key["must-2"].evidence_ok is False and by_key["must-2"].claimed_verdict == ""
    assert result.evidence_policy == "flag"
    with pytest.raises(ValueError, match="evidence policy"):
        parse_judge_reply(request, _reply(request, verdicts), evidence="trust")
