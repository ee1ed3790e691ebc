"""A scripted judge for the stand-in: deterministic verdicts by keyword overlap.

:func:`keyword_judge` is a :data:`~pytest_skilllift.testing.server.Handler`: it reads the judge
request our protocol sends (:func:`pytest_skilllift.judge.protocol.build_judge_request`), decides
each shown item by a documented word-overlap rule, and replies through the forced
``record_verdicts`` tool when the request offers it, else as JSON text.

The rule (deterministic, no model):

* words are runs of ``[a-z0-9]`` in the lower-cased text; *content words* are those of three
  or more characters that are not in :data:`STOPWORDS`;
* each word is stemmed crudely by stripping one suffix of ``ing``, ``edly``, ``ed``, ``es``,
  ``ly``, ``s`` (the first that leaves at least three characters);
* an item **matches** when at least :data:`MATCH_SHARE` (half) of its distinct content stems
  appear among the answer's stems;
* a matching must/bonus item is ``met``, a matching avoid item is ``violated``; the evidence
  is the answer's sentence sharing the most stems with the item, copied verbatim;
* otherwise ``missing`` / ``absent`` / ``clean`` with empty evidence;
* every ``missing`` / ``absent`` / ``violated`` verdict carries a short ``reason``
  (:func:`reason_for`): the item's content words the answer lacks, or the share of them a
  violating sentence holds. ``met`` and ``clean`` carry an empty reason.

:func:`make_judge` builds misbehaving variants of the same judge for protocol tests;
:func:`flaky_judge` one whose verdict on chosen items flips from one call to the next (the
contested items of multi-sample grading).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

from pytest_skilllift.judge.protocol import (
    ANSWER_TAG,
    RUBRIC_TAG,
    TOOL_NAME,
    parse_rubric_block,
)
from pytest_skilllift.testing.replies import Handler, Reply
from pytest_skilllift.week.columns import VERDICTS

__all__ = [
    "JUDGE_MODES",
    "MATCH_SHARE",
    "STOPWORDS",
    "content_stems",
    "decide",
    "flaky_judge",
    "keyword_judge",
    "make_judge",
    "read_judge_request",
    "reason_for",
    "threshold_judge",
]

#: Share of an item's content stems that must appear in the answer for a match.
MATCH_SHARE = 0.5

#: Function words ignored by the overlap rule (short words are ignored anyway).
STOPWORDS: frozenset[str] = frozenset("""
    about above after again against all also and any are because been before being below
    between both but can could did does doing down during each either else even ever every
    few for from further had has have having her here hers him his how however into its
    itself just least less like many may might more most much must not now off once only
    other our ours out over own per rather same she should since some such than that the
    their theirs them then there these they this those though through thus too under until
    upon use used uses using very was were what when where whether which while who whom
    whose why will with within without would yet you your yours answer answers mention
    mentions mentioned explain explains explained says said gives give given e.g i.e etc
    instead only via
""".split())  # noqa: SIM905 - a word list reads better as prose

_SUFFIXES = ("ing", "edly", "ed", "es", "ly", "s")
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")

#: Variants :func:`make_judge` can build.
JUDGE_MODES: tuple[str, ...] = (
    "keyword", "fenced-text", "prose-text", "bad-json", "wrong-vocab", "missing-index",
    "duplicate-index", "fabricated-evidence", "lenient-liar",
)


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_stems(text: str) -> set[str]:
    """The distinct stemmed content words of ``text`` (see the module docstring)."""
    return {
        _stem(w) for w in _WORD.findall(text.lower())
        if len(w) >= 3 and w not in STOPWORDS
    }


def decide(item_type: str, item_text: str, answer: str,
           match_share: float = MATCH_SHARE) -> tuple[str, str]:
    """``(verdict, evidence)`` for one item by the overlap rule (``match_share``: the share
    of the item's content stems the answer must hold; :data:`MATCH_SHARE` by default)."""
    positive, negative = VERDICTS[item_type]
    wanted = content_stems(item_text)
    if not wanted:
        return negative, ""
    share = len(wanted & content_stems(answer)) / len(wanted)
    if share < match_share:
        return negative, ""
    best, best_overlap = "", -1
    for sentence in _SENTENCE_SPLIT.split(answer):
        sentence = sentence.strip()
        if not sentence:
            continue
        overlap = len(wanted & content_stems(sentence))
        if overlap > best_overlap:  # strict: the first sentence wins ties
            best, best_overlap = sentence, overlap
    return positive, best


def reason_for(item_type: str, item_text: str, answer: str, verdict: str) -> str:
    """The scripted judge's short reason for a verdict ("" for met and clean): for a
    missing/absent item the item's content words whose stem the answer lacks (in the item's
    order, at most six), for a violated one how many of the item's content words the answer
    holds. Deterministic, like the verdict."""
    positive = VERDICTS[item_type][0]
    if (item_type == "avoid") != (verdict == positive):
        return ""
    have = content_stems(answer)
    words: list[str] = []
    for word in _WORD.findall(item_text.lower()):
        if len(word) >= 3 and word not in STOPWORDS and _stem(word) not in have \
                and word not in words:
            words.append(word)
    if item_type == "avoid":
        wanted = content_stems(item_text)
        return (f"the answer does what this item warns against: it holds "
                f"{len(wanted & have)} of the item's {len(wanted)} key words")
    if not words:
        return "the answer does not clearly do what the item asks"
    more = f" (and {len(words) - 6} more)" if len(words) > 6 else ""
    return "the answer never mentions " + ", ".join(words[:6]) + more


def _block_texts(body: dict[str, Any]) -> list[str]:
    texts: list[str] = []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(str(b.get("text", "")) for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return texts


def _opening(tag: str) -> re.Pattern[str]:
    # ``<answer-3f9c…>`` (our protocol: a per-request boundary) or a bare ``<answer>``.
    return re.compile(rf"<{tag}(-[0-9a-f]+)?>\n")


def _between(text: str, tag: str, *, last: bool = False) -> str | None:
    """The body of the ``tag`` section: from its opening tag to the closing tag that carries
    the same boundary (the last one, so a look-alike inside the body cannot end it)."""
    found = list(_opening(tag).finditer(text))
    if not found:
        return None
    m = found[-1] if last else found[0]
    closing = f"\n</{tag}{m.group(1) or ''}>"
    end = text.rfind(closing)
    return text[m.end():end] if end >= m.end() else None


def read_judge_request(body: dict[str, Any]) -> tuple[str, list[tuple[int, str, str]]]:
    """The answer and the shown items ``(shown_index, type, text)`` of a judge request."""
    blocks = _block_texts(body)
    answer: str | None = None
    rubric: str | None = None
    # Our protocol puts each section in its own block; that is the unambiguous path.
    for block in blocks:
        if answer is None and _opening(ANSWER_TAG).match(block):
            answer = _between(block, ANSWER_TAG)
        if _opening(RUBRIC_TAG).match(block):
            rubric = _between(block, RUBRIC_TAG)
    if answer is None or rubric is None:  # one concatenated string (another client)
        whole = "\n\n".join(blocks)
        at = list(_opening(RUBRIC_TAG).finditer(whole))
        rubric_at = at[-1].start() if at else len(whole)
        answer = _between(whole[:rubric_at], ANSWER_TAG) or ""
        rubric = _between(whole[rubric_at:], RUBRIC_TAG) or ""
    rows = [(i, t, text) for i, t, _pos, _neg, text in parse_rubric_block(rubric)]
    return answer, rows


def _verdicts(body: dict[str, Any], match_share: float = MATCH_SHARE,
              ) -> tuple[str, list[dict[str, Any]]]:
    answer, rows = read_judge_request(body)
    out = []
    for index, item_type, text in rows:
        verdict, evidence = decide(item_type, text, answer, match_share)
        out.append({"index": index, "verdict": verdict, "evidence": evidence,
                    "reason": reason_for(item_type, text, answer, verdict)})
    return answer, out


def _offers_tool(body: dict[str, Any]) -> bool:
    return any(t.get("name") == TOOL_NAME for t in body.get("tools") or [])


def _reply(body: dict[str, Any], payload: dict[str, Any]) -> Reply:
    if _offers_tool(body):
        return Reply.tool(TOOL_NAME, payload)
    return Reply.text(json.dumps(payload))


def keyword_judge(request: dict[str, Any]) -> Reply:
    """The well-behaved scripted judge (see the module docstring for the rule)."""
    _answer, verdicts = _verdicts(request)
    return _reply(request, {"verdicts": verdicts})


def threshold_judge(match_share: float) -> Handler:
    """The keyword judge with another match share: a stricter (higher) or more lenient
    (lower) grader of the same answers, so a panel of them disagrees the way real judges of
    different families do, on the items near the threshold."""

    def handler(request: dict[str, Any]) -> Reply:
        _answer, verdicts = _verdicts(request, match_share)
        return _reply(request, {"verdicts": verdicts})

    return handler


def make_judge(mode: str = "keyword") -> Handler:
    """A scripted judge that behaves per ``mode`` (one of :data:`JUDGE_MODES`):

    ``keyword``: :func:`keyword_judge`. ``fenced-text``: the JSON as text inside ```` ```json ````
    fences with prose around, even when the tool is offered. ``prose-text``: bare JSON inside a
    sentence. ``bad-json``: prose with no parseable payload. ``wrong-vocab``: shown item 1 gets
    ``"partial"``. ``missing-index``: the last shown item is left out. ``duplicate-index``:
    shown item 1 is answered twice, with both verdicts. ``fabricated-evidence``: every
    met/violated quote is replaced by a sentence that is not in the answer.
    ``lenient-liar``: every must/bonus item the keyword rule finds missing/absent is claimed
    ``met`` with a quote the answer never contains (honest items keep their real quotes).
    """
    if mode not in JUDGE_MODES:
        raise ValueError(f"unknown judge mode {mode!r}; expected one of {', '.join(JUDGE_MODES)}")
    if mode == "keyword":
        return keyword_judge

    def handler(request: dict[str, Any]) -> Reply:
        _answer, verdicts = _verdicts(request)
        if mode == "bad-json":
            return Reply.text("Overall the answer looks solid; verdicts: {index 1: met, ...")
        if mode == "wrong-vocab" and verdicts:
            verdicts[0]["verdict"] = "partial"
        elif mode == "missing-index" and verdicts:
            verdicts.pop()
        elif mode == "duplicate-index" and verdicts:
            first = verdicts[0]
            verdicts.insert(1, dict(first, verdict=_other_verdict(request, first)))
        elif mode == "fabricated-evidence":
            for entry in verdicts:
                if entry["evidence"]:
                    entry["evidence"] = "This sentence was never written by the assistant."
        elif mode == "lenient-liar":
            for entry in verdicts:
                if entry["verdict"] in ("missing", "absent"):
                    entry["verdict"] = "met"
                    entry["evidence"] = "The answer covers this point in full detail."
                    entry["reason"] = ""
        payload = json.dumps({"verdicts": verdicts}, indent=2)
        if mode == "fenced-text":
            return Reply.text(f"Here is my grading.\n\n```json\n{payload}\n```\n\nDone.")
        if mode == "prose-text":
            return Reply.text(f"My verdicts follow: {payload} (end of verdicts)")
        return _reply(request, json.loads(payload))

    handler.__name__ = f"judge_{mode.replace('-', '_')}"
    return handler


def _other_verdict(request: dict[str, Any], entry: dict[str, Any]) -> str:
    _answer, rows = read_judge_request(request)
    item_type = next(t for i, t, _ in rows if i == entry["index"])
    positive, negative = VERDICTS[item_type]
    return negative if entry["verdict"] == positive else positive


def _flipped(item_type: str, verdict: str, answer: str) -> tuple[str, str]:
    """The other verdict; a positive one quotes the answer's first sentence (a real quote, so
    the flip survives the evidence check: the disagreement is about the verdict)."""
    positive, negative = VERDICTS[item_type]
    if verdict == positive:
        return negative, ""
    first = next((p.strip() for p in _SENTENCE_SPLIT.split(answer) if p.strip()), answer)
    return positive, first


def flaky_judge(flaky: str | Callable[[str], bool]) -> Handler:
    """The keyword judge, except on *flaky* items, whose verdict alternates between calls.

    ``flaky`` is a substring of the item text (or a predicate on it). For each (answer, item)
    the first call gets the keyword verdict, the second the other verdict, the third the
    keyword verdict again, and so on. With two samples per run that is a disagreement, and the
    tie-break (the third call) sides with the keyword verdict: majority = keyword verdict,
    contested. Counters are per answer, so runs with different answers do not interfere.
    """
    matches = flaky if callable(flaky) else (lambda text: flaky in text)
    calls: dict[tuple[str, str], int] = {}
    lock = threading.Lock()

    def handler(request: dict[str, Any]) -> Reply:
        answer, rows = read_judge_request(request)
        out = []
        for index, item_type, text in rows:
            verdict, evidence = decide(item_type, text, answer)
            if matches(text):
                with lock:
                    n = calls.get((answer, text), 0)
                    calls[(answer, text)] = n + 1
                if n % 2 == 1:
                    verdict, evidence = _flipped(item_type, verdict, answer)
            out.append({"index": index, "verdict": verdict, "evidence": evidence,
                        "reason": reason_for(item_type, text, answer, verdict)})
        return _reply(request, {"verdicts": out})

    handler.__name__ = "flaky_judge"
    return handler
