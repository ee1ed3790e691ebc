"""A scripted skill judge (and a Monte Carlo agent) for the stand-in: deterministic, documented.

:func:`make_skill_judge` builds a :data:`~pytest_skilllift.testing.server.Handler` that answers
the three forced-tool requests of :mod:`pytest_skilllift.lint.skill_judge` and hands any other
judge request (the weekly rubric judge) to ``fallback`` (the keyword judge by default), so one
stand-in serves both.

The rules, all read from the request the client actually sent:

**Assessment** (``record_skill_assessment``). From the SKILL.md block:

* trigger prompts — the description's contexts after "use when" / "use this skill when"
  (split on commas, semicolons and " or ") become five should-trigger prompts
  ``"Request <i>: <context>"`` (cycling); five fixed unrelated prompts
  (:data:`UNRELATED_PROMPTS`) should not. A prompt is predicted to trigger when the
  description has a trigger phrase and shares at least two content stems with it
  (:func:`pytest_skilllift.testing.judge_script.content_stems`).
* orchestration fitness — 1.0, −0.4 when the body says orchestrate/coordinate/dispatch/
  delegate, −0.2 without a heading naming output/return/result, −0.1 without one naming
  input/parameter/argument (floor 0).
* output quality — three tasks scored 0.6, 0.5, 0.4 (simple, moderate, complex), each +0.2
  with an "example" heading, +0.1 with two or more fenced code blocks, +0.1 with a
  troubleshooting / edge-case heading (capped at 1).
* scope calibration — by body lines: < 20 → 0.3, < 100 → 0.55, ≤ 600 → 0.75, else 0.5;
  +0.1 when reference files were sent (capped at 1).

``overrides={judge_number: {...}}`` replaces any of ``orchestration``, ``scope``, ``tasks``
(three scores), ``would`` (ten booleans) or ``mode`` for one judge (the request says "judge
k of n").

**Quality** (``record_output_quality``) — with a rubric: the share of its items the answer
matches by the keyword judge's overlap rule; without: ``min(1, content stems / 30)``.

**Preference** (``record_preference``) — each skill's merit is its H2/H3 headings plus fenced
code blocks, plus 3 with a trigger phrase in the description; the higher wins, equal is a tie.
Skills named in ``biased`` are judged with position bias: the first shown always wins.

``mode``: ``"rules"`` (default) or a misbehaviour for the assessment — ``"prose"`` (no tool
call, a text reply), ``"nine-prompts"``, ``"out-of-range"`` (orchestration 1.3),
``"string-bool"`` (``"true"`` instead of true), ``"six-should"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from pytest_skilllift.lint.skill_judge import ASSESS_TOOL, PREFERENCE_TOOL, QUALITY_TOOL
from pytest_skilllift.testing.judge_script import content_stems, decide, keyword_judge
from pytest_skilllift.testing.replies import Handler, Reply

__all__ = ["ASSESS_MODES", "UNRELATED_PROMPTS", "make_skill_judge", "mc_agent", "skill_judge"]

UNRELATED_PROMPTS: tuple[str, ...] = (
    "Write a limerick about a sleepy cat.",
    "What is the boiling point of water at sea level?",
    "Translate 'good morning' into Portuguese.",
    "Summarise the plot of Hamlet in two sentences.",
    "Plan a three-day walking trip in Lisbon.",
)
ASSESS_MODES: tuple[str, ...] = (
    "rules", "prose", "nine-prompts", "out-of-range", "string-bool", "six-should",
)
_TRIGGER = re.compile(r"\b(?:use this skill when|use when|use proactively|trigger when)\b", re.I)
_HEADING = re.compile(r"^#{2,3}\s+(.*)$", re.M)
_FENCE = re.compile(r"^\s*```", re.M)
_JUDGE_NO = re.compile(r"You are judge (\d+) of (\d+)")


def _texts(body: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for m in body.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [str(b.get("text", "")) for b in content
                    if isinstance(b, dict) and b.get("type") == "text"]
    return out


def _forced_tool(body: Mapping[str, Any]) -> str | None:
    choice = body.get("tool_choice")
    return str(choice.get("name")) if isinstance(choice, dict) else None


def _between(text: str, tag: str) -> str | None:
    m = re.search(rf"<{tag}>\n(.*)\n</{tag}>", text, re.S)
    return m.group(1) if m else None


def _split_skill(md: str) -> tuple[dict[str, Any], str]:
    if md.startswith("---"):
        parts = md.split("\n---", 1)
        if len(parts) == 2:
            try:
                fm = yaml.safe_load(parts[0][3:]) or {}
            except yaml.YAMLError:
                fm = {}
            return (fm if isinstance(fm, dict) else {}), parts[1].split("\n", 1)[-1]
    return {}, md


def _contexts(description: str) -> list[str]:
    m = _TRIGGER.search(description)
    if not m:
        return []
    tail = description[m.end():]
    pieces = re.split(r",|;|\bor\b|\.\s", tail)
    return [p.strip(" .") for p in pieces if len(p.strip(" .")) > 3]


def _headings(body: str) -> list[str]:
    return [h.lower() for h in _HEADING.findall(body)]


def _clamp(x: float) -> float:
    return max(0.0, min(1.0, round(x, 4)))


def rule_assessment(md: str, has_references: bool) -> dict[str, Any]:
    """The assessment the rules give a SKILL.md (see the module docstring)."""
    fm, body = _split_skill(md)
    desc = str(fm.get("description") or "")
    name = str(fm.get("name") or "skill")
    contexts = _contexts(desc) or [f"something about {name}"]
    should = [f"Request {i + 1}: {contexts[i % len(contexts)]}" for i in range(5)]
    has_trigger = bool(_TRIGGER.search(desc))
    desc_stems = content_stems(desc)

    def would(prompt: str) -> bool:
        return has_trigger and len(content_stems(prompt) & desc_stems) >= 2

    prompts = [{"prompt": p, "should_trigger": True, "would_trigger": would(p)} for p in should]
    prompts += [{"prompt": p, "should_trigger": False, "would_trigger": would(p)}
                for p in UNRELATED_PROMPTS]
    heads = _headings(body)
    lower = body.lower()
    orch = 1.0
    if re.search(r"\b(orchestrat\w*|coordinat\w*|dispatch\w*|delegat\w*)\b", lower):
        orch -= 0.4
    if not any(re.search(r"output|return|result", h) for h in heads):
        orch -= 0.2
    if not any(re.search(r"input|parameter|argument", h) for h in heads):
        orch -= 0.1
    bonus = 0.0
    if any("example" in h for h in heads):
        bonus += 0.2
    if len(_FENCE.findall(body)) // 2 >= 2:
        bonus += 0.1
    if any(re.search(r"troubleshoot|edge case|pitfall|gotcha", h) for h in heads):
        bonus += 0.1
    tasks = [{"task": f"{level} task for {name}", "score": _clamp(base + bonus)}
             for level, base in (("simple", 0.6), ("moderate", 0.5), ("complex", 0.4))]
    lines = len(body.splitlines())
    scope = 0.3 if lines < 20 else 0.55 if lines < 100 else 0.75 if lines <= 600 else 0.5
    if has_references:
        scope += 0.1
    return {
        "trigger_prompts": prompts,
        "orchestration_fitness": {"score": _clamp(orch), "evidence": f"{len(heads)} headings"},
        "output_quality": {"tasks": tasks},
        "scope_calibration": {"score": _clamp(scope), "evidence": f"{lines} body lines"},
    }


def _merit(md: str) -> int:
    fm, body = _split_skill(md)
    merit = len(_HEADING.findall(body)) + len(_FENCE.findall(body)) // 2
    if _TRIGGER.search(str(fm.get("description") or "")):
        merit += 3
    return merit


def _name(md: str) -> str:
    return str(_split_skill(md)[0].get("name") or "")


def make_skill_judge(
    mode: str = "rules",
    *,
    overrides: Mapping[int, Mapping[str, Any]] | None = None,
    biased: Iterable[str] = (),
    quality_mode: str = "rules",
    fallback: Handler | None = keyword_judge,
) -> Handler:
    """A scripted skill judge (module docstring); ``quality_mode="prose"`` makes the quality
    replies unusable."""
    if mode not in ASSESS_MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(ASSESS_MODES)}")
    over = {int(k): dict(v) for k, v in (overrides or {}).items()}
    biased_names = set(biased)

    def assess(body: Mapping[str, Any]) -> Reply:
        texts = _texts(body)
        md = next((t for t in (_between(x, "skill_md") for x in texts) if t is not None), "")
        has_refs = any(x.startswith("<reference ") for x in texts)
        payload = rule_assessment(md, has_refs)
        m = next((m for m in (_JUDGE_NO.search(x) for x in texts) if m), None)
        judge_no = int(m.group(1)) if m else 1
        o = over.get(judge_no, {})
        if "orchestration" in o:
            payload["orchestration_fitness"]["score"] = o["orchestration"]
        if "scope" in o:
            payload["scope_calibration"]["score"] = o["scope"]
        if "tasks" in o:
            for task, score in zip(payload["output_quality"]["tasks"], o["tasks"], strict=True):
                task["score"] = score
        if "would" in o:
            for p, w in zip(payload["trigger_prompts"], o["would"], strict=True):
                p["would_trigger"] = w
        judge_mode = str(o.get("mode", mode))
        if judge_mode == "prose":
            return Reply.text("This skill looks solid overall; I would give it about 0.8.\n"
                              + json.dumps(payload))
        if judge_mode == "nine-prompts":
            payload["trigger_prompts"] = payload["trigger_prompts"][:9]
        elif judge_mode == "out-of-range":
            payload["orchestration_fitness"]["score"] = 1.3
        elif judge_mode == "string-bool":
            payload["trigger_prompts"][0]["would_trigger"] = "true"
        elif judge_mode == "six-should":
            payload["trigger_prompts"][5]["should_trigger"] = True
        return Reply.tool(ASSESS_TOOL, payload)

    def quality(body: Mapping[str, Any]) -> Reply:
        if quality_mode == "prose":
            return Reply.text("A decent answer, I'd say 7/10.")
        joined = "\n".join(_texts(body))
        answer = _between(joined, "answer") or ""
        rubric = _between(joined, "rubric")
        if rubric:
            items = [ln[2:] for ln in rubric.splitlines() if ln.startswith("- ")]
            met = sum(1 for it in items if decide("must", it, answer)[0] == "met")
            score = met / len(items) if items else 0.0
        else:
            score = min(1.0, len(content_stems(answer)) / 30)
        return Reply.tool(QUALITY_TOOL, {"score": round(score, 4),
                                         "evidence": answer[:80]})

    def preference(body: Mapping[str, Any]) -> Reply:
        texts = _texts(body)
        mds = [t for t in (_between(x, "skill_md") for x in texts) if t is not None]
        if len(mds) != 2:
            return Reply.text("I could not find two skills to compare.")
        a, b = mds
        if {_name(a), _name(b)} & biased_names:
            better = "A"
        else:
            ma, mb = _merit(a), _merit(b)
            better = "A" if ma > mb else "B" if mb > ma else "tie"
        return Reply.tool(PREFERENCE_TOOL, {"better": better, "reason": "scripted merit"})

    def handler(body: dict[str, Any]) -> Reply:
        """The reply to one skill-judge request, by the tool it forces."""
        tool = _forced_tool(body)
        if tool == ASSESS_TOOL:
            return assess(body)
        if tool == QUALITY_TOOL:
            return quality(body)
        if tool == PREFERENCE_TOOL:
            return preference(body)
        if fallback is None:
            return Reply.text("no scripted answer for this judge request")
        return fallback(body)

    handler.__name__ = f"skill_judge_{mode.replace('-', '_')}"
    return handler


#: The default scripted skill judge (rules, keyword judge for rubric requests).
skill_judge: Handler = make_skill_judge()


def mc_agent(fail_marker: str = "[fail]") -> Handler:
    """A Monte Carlo agent: the default skill agent, except that a prompt containing
    ``fail_marker`` loops on a tool forever (so ``--max-turns`` ends the run in an error)."""
    from pytest_skilllift.testing.agent_script import make_agent, skill_agent, user_prompt

    loop = make_agent("loop")

    def agent(body: dict[str, Any]) -> Reply:
        if fail_marker in user_prompt(body):
            return loop(body)
        return skill_agent(body)

    return agent
