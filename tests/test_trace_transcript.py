"""Transcript parsing, signal extraction (qdrant/skills SCORING.md) and the invocation
audit (SkillsBench).

Real transcripts from three CLI versions (``shared/data/transcripts``) plus synthetic ones
for the edge cases. Fresh transcripts from the bundled CLI are covered in
``test_runners_local.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.trace.audit import audit_invocation
from pytest_skilllift.trace.transcript import (
    extract_signals,
    leaf_skill_names,
    parse_events,
    parse_text,
    parse_transcript,
)
from pytest_skilllift.week.columns import ACTIVATIONS, NOT_INVOKED, PARTIAL, VERIFIED

SITE = "skills.example.com"


@pytest.fixture(scope="module")
def transcripts(reference_data: Path) -> Path:
    return reference_data / "transcripts"


# -- real transcripts ----------------------------------------------------------------------


def test_cli_2_0_25_full_stream(transcripts: Path) -> None:
    tr = parse_transcript(transcripts / "cli-2.0.25-bypass-tools.jsonl")
    assert tr.ok and tr.bad_lines == 0 and tr.orphan_results == 0
    assert tr.cli_version == "2.0.25" and tr.skills_listed == ()
    assert len(tr.tool_uses) == 21 and all(u.has_result for u in tr.tool_uses)
    errored = [u for u in tr.tool_uses if u.is_error]
    assert [u.name for u in errored] == ["Read"] and "EISDIR" in (errored[0].result or "")
    assert any(u.parent_tool_use_id for u in tr.tool_uses)  # subagent calls are attributed
    sig = extract_signals(tr, family="qdrant-edge", leaf="qdrant-edge/SKILL.md", site_host=SITE)
    assert sig.signals_ok and not sig.skill_available
    assert sig.skill_activation == "none" and not sig.reached_leaf
    assert (sig.fetched_site, sig.fetched_count, sig.fetched_urls) == (False, 0, ())
    assert sig.model_snapshot == "claude-sonnet-4-5-20250929"
    assert sig.total_cost_usd == pytest.approx(0.21085415)
    assert (sig.num_turns, sig.duration_ms, sig.result_subtype) == (19, 42800, "success")
    assert not sig.budget_hit and not sig.is_error and sig.permission_denials == 0
    assert sig.final_answer.startswith("**My question for you:**")
    assert audit_invocation(tr).status == NOT_INVOKED


def test_cli_2_1_212_skill_lines(transcripts: Path) -> None:
    tr = parse_transcript(transcripts / "cli-2.1.212-skill-lines.jsonl")
    # Captured single lines, not one stream: a ToolSearch result has no captured call.
    assert tr.ok and tr.orphan_results == 1
    assert tr.cli_version == "2.1.212" and "debug" in tr.skills_listed
    skill = tr.calls("Skill")[0]
    assert skill.input["skill"] == "review" and skill.result == "Launching skill: review"
    assert skill.effective
    bash = tr.calls("Bash")[0]
    assert bash.is_error and not bash.denied and "command not found" in (bash.result or "")

    sig = extract_signals(tr, family="review", leaf="review/SKILL.md", site_host=SITE)
    assert sig.skill_activation == "skill_tool" and sig.reached_leaf
    # "review" ran as a skill but is not in this init's list: availability is its own check.
    assert not sig.skill_available
    assert sig.model_snapshot == "claude-sonnet-4-6" and sig.cli_version == "2.1.212"
    assert sig.num_turns == 27 and sig.total_cost_usd == pytest.approx(0.50669945)
    assert sig.final_answer.startswith("```REVIEW_FINDINGS")

    other = extract_signals(tr, family="debug", leaf="debug/SKILL.md", site_host=None)
    assert other.skill_available and other.skill_activation == "none"
    assert audit_invocation(tr, family="review").discovery_method == "Skill tool"
    assert audit_invocation(tr, family="debug").status == NOT_INVOKED


@pytest.mark.parametrize(("name", "subtype", "budget_hit", "is_error", "answer"), [
    ("success.json", "success", False, False, "ok"),
    ("turns.json", "error_max_turns", False, True, ""),
    ("budget.json", "error_max_budget_usd", True, True, ""),
])
def test_cli_2_1_220_result_documents(transcripts: Path, name: str, subtype: str,
                                      budget_hit: bool, is_error: bool, answer: str) -> None:
    tr = parse_transcript(transcripts / "cli-2.1.220-result-json" / name)
    assert tr.result is not None and tr.bad_lines == 0
    sig = extract_signals(tr, family="x", leaf="x/SKILL.md", site_host=SITE)
    assert (sig.result_subtype, sig.budget_hit, sig.is_error) == (subtype, budget_hit, is_error)
    assert sig.final_answer == answer
    assert sig.total_cost_usd and sig.total_cost_usd > 0
    # A bare result document has no init event: availability cannot be read from it.
    assert not sig.signals_ok and not sig.skill_available


def test_every_shared_transcript_parses(transcripts: Path) -> None:
    files = [p for p in transcripts.rglob("*") if p.is_file()]
    assert len(files) >= 5
    for path in files:
        tr = parse_transcript(path)
        assert tr.result is not None, path
        sig = extract_signals(tr, family="f", leaf="f/SKILL.md", site_host=SITE)
        assert sig.skill_activation in ACTIVATIONS


# -- robustness ----------------------------------------------------------------------------


def test_truncated_and_garbage_lines_never_raise(transcripts: Path, tmp_path: Path) -> None:
    text = (transcripts / "cli-2.0.25-bypass-tools.jsonl").read_text()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(text[: len(text) - 500])  # killed mid-way through the result line
    tr = parse_transcript(cut)
    assert tr.bad_lines == 1 and tr.result is None and not tr.ok
    sig = extract_signals(tr, family="f", leaf="f/SKILL.md", site_host=SITE)
    assert not sig.signals_ok and sig.total_cost_usd is None and sig.result_subtype == ""
    assert sig.final_answer  # the last assistant text is still there

    noisy = parse_text("\n".join([
        "garbage {", "null", "[1, 2]", '"str"', "", json.dumps({"type": "weird"}),
        json.dumps({"type": "assistant", "message": "not a dict"}),
        json.dumps({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "a", "name": "Read", "input": "not a dict"}, "junk"]}}),
        json.dumps({"type": "user", "message": {"content": "plain string"}}),
        json.dumps({"type": "result", "total_cost_usd": "n/a", "num_turns": True}),
    ]))
    assert noisy.bad_lines == 4 and not noisy.ok
    sig = extract_signals(noisy, family="f", leaf="f/SKILL.md", site_host=None)
    assert sig.total_cost_usd is None and sig.num_turns is None and not sig.signals_ok

    missing = parse_transcript(tmp_path / "nope.jsonl")
    assert not missing.ok and missing.bad_lines == 1
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert not parse_transcript(empty).ok
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage\n")
    assert parse_transcript(binary).bad_lines == 1


def test_verbose_json_array_document() -> None:
    events = [_init(), _result("done")]
    tr = parse_text(json.dumps(events, indent=2))
    assert tr.ok and tr.init is not None and tr.result is not None


# -- semantics on synthetic streams --------------------------------------------------------


def _init(skills: tuple[str, ...] = ("fam", "debug"), model: str = "claude-haiku-4-5"
          ) -> dict[str, Any]:
    return {"type": "system", "subtype": "init", "model": model, "skills": list(skills),
            "claude_code_version": "9.9.9"}


def _result(text: str | None = "answer", **extra: Any) -> dict[str, Any]:
    return {"type": "result", "subtype": "success", "is_error": False, "result": text,
            "total_cost_usd": 0.01, "num_turns": 2, "duration_ms": 1234,
            "permission_denials": [], **extra}


def _call(tid: str, name: str, inp: dict[str, Any], result: str = "ok", *,
          is_error: bool = False, model: str = "claude-haiku-4-5-20251001"
          ) -> list[dict[str, Any]]:
    return [
        {"type": "assistant", "message": {"id": f"m-{tid}", "model": model, "content": [
            {"type": "tool_use", "id": tid, "name": name, "input": inp}]}},
        {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": tid, "content": result,
             "is_error": is_error}]}},
    ]


def _text(text: str, mid: str = "m-final") -> dict[str, Any]:
    return {"type": "assistant", "message": {"id": mid, "model": "claude-haiku-4-5-20251001",
                                             "content": [{"type": "text", "text": text}]}}


def _signals(*events: dict[str, Any], leaf: str = "fam/SKILL.md", **kw: Any) -> Any:
    tr = parse_events(list(events))
    return extract_signals(tr, family="fam", leaf=leaf, site_host=SITE, **kw)


def test_activation_precedence() -> None:
    skill = _call("s", "Skill", {"skill": "fam"}, "Launching skill: fam")
    read = _call("r", "Read", {"file_path": "/h/.claude/skills/fam/SKILL.md"}, "1\t---")
    fetch = _call("f", "WebFetch", {"url": f"https://{SITE}/fam/SKILL.md", "prompt": "x"})
    assert _signals(_init(), *skill, *read, *fetch, _result()).skill_activation == "skill_tool"
    assert _signals(_init(), *fetch, *read, _result()).skill_activation == "file_read"
    assert _signals(_init(), *fetch, _result()).skill_activation == "web_fetch"
    assert _signals(_init(), _result()).skill_activation == "none"
    home = _call("t", "Read", {"file_path": "~/.claude/skills/fam/refs/a.md"})
    assert _signals(_init(), *home, _result()).skill_activation == "file_read"
    other = _call("o", "Read", {"file_path": "/h/.claude/skills/famous/SKILL.md"})
    assert _signals(_init(), *other, _result()).skill_activation == "none"


def test_denied_and_failed_calls_are_netted_out() -> None:
    denied_skill = _call("s", "Skill", {"skill": "fam"}, "Permission to use Skill has been "
                         "denied because Claude Code is running in don't ask mode.",
                         is_error=True)
    unknown = _call("u", "Skill", {"skill": "fam"}, "<tool_use_error>Unknown skill: fam"
                    "</tool_use_error>", is_error=True)
    fetch_denied = _call("f", "WebFetch", {"url": f"https://{SITE}/a"}, "denied",
                         is_error=True)
    fetch_404 = _call("g", "WebFetch", {"url": f"https://docs.{SITE}/b"}, "404", is_error=True)
    fetch_other = _call("h", "WebFetch", {"url": "https://example.org/c"})
    sig = _signals(
        _init(), *denied_skill, *unknown, *fetch_denied, *fetch_404, *fetch_other,
        _result(permission_denials=[{"tool_name": "WebFetch", "tool_use_id": "f",
                                     "tool_input": {}}]),
    )
    # The denied WebFetch is listed in permission_denials; the denied Skill is recognised by
    # its result text even without a listing; an errored fetch still reached for the site.
    assert sig.skill_activation == "web_fetch"
    assert sig.fetched_count == 1 and sig.fetched_site
    assert sig.fetched_urls == (f"https://docs.{SITE}/b", "https://example.org/c")
    assert sig.permission_denials == 1


def test_reached_leaf() -> None:
    leaf = "fam/sub/deep/SKILL.md"
    assert leaf_skill_names("fam", "fam/SKILL.md") == ("fam",)
    assert "deep" in leaf_skill_names("fam", leaf)
    top = _call("s", "Skill", {"skill": "fam"}, "Launching skill: fam")
    assert _signals(_init(), *top, _result()).reached_leaf  # leaf = the family's SKILL.md
    assert not _signals(_init(), *top, _result(), leaf=leaf).reached_leaf
    read_leaf = _call("r", "Read", {"file_path": "/tmp/h/.claude/skills/fam/sub/deep/SKILL.md"})
    sig = _signals(_init(), *top, *read_leaf, _result(), leaf=leaf)
    assert sig.reached_leaf and sig.skill_activation == "skill_tool"
    named = _call("n", "Skill", {"skill": "fam-deep-leaf"}, "Launching skill: fam-deep-leaf")
    assert _signals(_init(), *named, _result(), leaf=leaf,
                    leaf_names=("fam-deep-leaf",)).reached_leaf


def test_result_fields_budget_and_final_answer_fallback() -> None:
    sig = _signals(_init(), _text("partial answer", "m1"), _text("last words", "m2"),
                   _result(None, subtype="error_max_budget_usd", is_error=True,
                           terminal_reason="budget_exhausted"))
    assert sig.budget_hit and sig.is_error and sig.final_answer == "last words"
    assert sig.result_subtype == "error_max_budget_usd"
    assert _signals(_init(), _result(terminal_reason="budget_exhausted")).budget_hit
    ok = _signals(_init(), _text("draft"), _result("the final"))
    assert ok.final_answer == "the final" and not ok.budget_hit
    assert (ok.num_turns, ok.duration_ms, ok.total_cost_usd) == (2, 1234, 0.01)


def test_split_assistant_events_merge_by_message_id() -> None:
    # 2.0.x emits one event per content block of the same message.
    a = {"type": "assistant", "message": {"id": "m", "content": [{"type": "text", "text": "A"}]}}
    b = {"type": "assistant", "message": {"id": "m", "content": [{"type": "text", "text": "B"}]}}
    sub = {"type": "assistant", "parent_tool_use_id": "task1",
           "message": {"id": "x", "content": [{"type": "text", "text": "subagent"}]}}
    tr = parse_events([_init(), a, b, sub])
    assert tr.last_assistant_text() == "A\nB"


def test_model_snapshot_prefers_the_served_snapshot() -> None:
    served = _text("hi")  # served by claude-haiku-4-5-20251001
    assert _signals(_init(model="claude-haiku-4-5"), served, _result()).model_snapshot == (
        "claude-haiku-4-5-20251001")
    assert _signals(_init(model="claude-opus-4-1"), served, _result()).model_snapshot == (
        "claude-opus-4-1")
    assert _signals(served, _result()).model_snapshot == "claude-haiku-4-5-20251001"


# -- audit ---------------------------------------------------------------------------------


def _body_event(base: str, body: str) -> dict[str, Any]:
    return {"type": "user", "message": {"content": [
        {"type": "text", "text": f"Base directory for this skill: {base}\n\n{body}"}]}}


def test_audit_statuses() -> None:
    base = "/h/.claude/skills/fam"
    launch = _call("s", "Skill", {"skill": "fam"}, "Launching skill: fam")
    linking = _body_event(base, "# Fam\n\nSee [details](references/details.md).\n")
    plain = _body_event(base, "# Fam\n\n- Just do it.\n")
    sub = _call("r", "Read", {"file_path": f"{base}/references/details.md"}, "1\tdetails")

    partial = audit_invocation(parse_events([_init(), *launch, linking, _result()]))
    assert partial.status == PARTIAL and partial.top_level_only
    assert partial.discovery_method == "Skill tool" and partial.skills_read == ("Skill:fam",)

    verified = audit_invocation(parse_events([_init(), *launch, linking, *sub, _result()]))
    assert verified.status == VERIFIED and verified.sub_files_read == (
        f"{base}/references/details.md",)
    assert audit_invocation(parse_events([_init(), *launch, plain, _result()])).status == (
        VERIFIED)

    read_top = _call("t", "Read", {"file_path": f"{base}/SKILL.md"},
                     "1\t---\n2\tname: fam\n3\t---\n4\tSee [x](x/SKILL.md)")
    by_read = audit_invocation(parse_events([_init(), *read_top, _result()]), family="fam")
    assert by_read.discovery_method == "Read SKILL.md" and by_read.status == PARTIAL

    failed = _call("u", "Skill", {"skill": "fam"}, "Unknown skill: fam", is_error=True)
    none = audit_invocation(parse_events([_init(), *failed, _result()]), family="fam")
    assert none.status == NOT_INVOKED and none.failed_invocations == 1
    assert audit_invocation(parse_events([_init(), *launch, plain, _result()]),
                            family="other").status == NOT_INVOKED
