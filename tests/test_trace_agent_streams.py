"""Codex CLI, Gemini CLI and OpenCode event streams → signals and the trajectory audit.

The streams are real captures (tests/fixtures/data/agents/, see its README): a with-skill run
through the agent's skill tool, one through a file read, a no-skill run, and each agent's
pre-flight skill listing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilllift.model import Signals
from pytest_skilllift.trace.agent_streams import listed_skills, parse_agent_stream, price
from pytest_skilllift.trace.audit import audit_invocation
from pytest_skilllift.trace.transcript import Transcript, extract_signals
from pytest_skilllift.week.columns import NOT_INVOKED, VERIFIED

DATA = Path(__file__).parent / "fixtures" / "data" / "agents"
FAMILY = "codeword-skill"
BODY = (DATA / "codex" / "exec-json-stream.jsonl").read_text()  # holds the SKILL.md text
ANSWER = "FINAL ANSWER: the skill says [MAGIC-TOKEN-codeword-skill]"


def listing(agent: str, names: tuple[str, ...]) -> str:
    """A listing in the agent's own format naming ``names`` (the captures list git-bisect)."""
    text = {"codex": (DATA / "codex" / "prompt-input.json").read_text(),
            "gemini-cli": (DATA / "gemini-cli" / "skills-list.txt").read_text(),
            "opencode": (DATA / "opencode" / "debug-skill.json").read_text()}[agent]
    if names:
        return text.replace("git-bisect", names[0])
    if agent == "gemini-cli":
        return "Discovered Agent Skills:\nNo skills discovered.\n"
    if agent == "opencode":
        return "[]"
    return text.replace("git-bisect: ", "not a skill line ")


def signals(agent: str, stream: str, names: tuple[str, ...] = (FAMILY,),
            model: str = "m") -> tuple[Transcript, Signals]:
    text = (DATA / agent / stream).read_text()
    tr = parse_agent_stream(agent, text, listing(agent, names), model=model,
                            cli_version="9.9.9",
                            skill_bodies={FAMILY: "---\nname: codeword-skill\n---\n"
                                          "MAGIC-TOKEN-codeword-skill"})
    return tr, extract_signals(tr, family=FAMILY, leaf=f"{FAMILY}/SKILL.md", site_host=None)


def test_each_listing_command_output_is_read() -> None:
    assert listed_skills("codex", listing("codex", ("git-bisect",))) == ("git-bisect",)
    assert listed_skills("gemini-cli", listing("gemini-cli", ("git-bisect",))) == (
        "git-bisect",)
    assert listed_skills("opencode", listing("opencode", ("git-bisect",))) == (
        "customize-opencode", "git-bisect")
    assert listed_skills("gemini-cli", "No skills discovered.") == ()
    # A failed listing command is unknown availability, not "not listed".
    for agent in ("codex", "gemini-cli", "opencode"):
        assert listed_skills(agent, "Error: something broke") is None


@pytest.mark.parametrize("agent,stream,activation", [
    ("codex", "exec-json-stream.jsonl", "file_read"),
    ("gemini-cli", "stream-json-activate_skill.jsonl", "skill_tool"),
    ("gemini-cli", "stream-json-read_file.jsonl", "file_read"),
    ("opencode", "run-json-skill-tool.jsonl", "skill_tool"),
    ("opencode", "run-json-read.jsonl", "file_read"),
])
def test_with_skill_streams_give_activation_answer_and_audit(agent: str, stream: str,
                                                             activation: str) -> None:
    tr, sig = signals(agent, stream)
    assert sig.signals_ok and tr.agent == agent
    assert sig.skill_available and sig.skills_listed
    assert sig.skill_activation == activation
    assert sig.reached_leaf
    assert sig.final_answer == ANSWER
    assert sig.result_subtype == "success" and not sig.is_error
    assert sig.num_turns == 2
    assert sig.cli_version == "9.9.9"
    audit = audit_invocation(tr, family=FAMILY)
    # The captured SKILL.md links nothing further, so a load is VERIFIED.
    assert audit.status == VERIFIED, audit.evidence


@pytest.mark.parametrize("agent,stream", [
    ("codex", "exec-json-stream-noskill.jsonl"),
    ("gemini-cli", "stream-json-noskill.jsonl"),
    ("opencode", "run-json-noskill.jsonl"),
])
def test_no_skill_streams(agent: str, stream: str) -> None:
    tr, sig = signals(agent, stream, names=())
    assert sig.signals_ok
    assert not sig.skill_available and sig.skill_activation == "none"
    assert sig.final_answer == "FINAL ANSWER: the skill says [nothing]"
    assert audit_invocation(tr, family=FAMILY).status == NOT_INVOKED


@pytest.mark.parametrize("agent,stream", [
    ("codex", "exec-json-stream-noskill.jsonl"),
    ("gemini-cli", "stream-json-noskill.jsonl"),
    ("opencode", "run-json-noskill.jsonl"),
])
@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\u0085"], ids=["LS", "PS", "NEL"])
def test_an_answer_with_a_unicode_line_separator_is_still_the_answer(
        agent: str, stream: str, sep: str) -> None:
    """Node writes U+2028 / U+2029 / U+0085 raw inside JSON strings: the stream is split on
    "\n" only, as Claude Code's is, or the answer's event would be torn and dropped."""
    text = (DATA / agent / stream).read_text().replace(
        "FINAL ANSWER: the skill says", f"FINAL ANSWER:{sep}the skill says")
    assert sep in text
    tr = parse_agent_stream(agent, text, listing(agent, ()), model="m")
    sig = extract_signals(tr, family=FAMILY, leaf=f"{FAMILY}/SKILL.md", site_host=None)
    assert tr.bad_lines == 0
    assert sig.final_answer == f"FINAL ANSWER:{sep}the skill says [nothing]"


def test_cost_reported_else_priced_from_tokens_else_none() -> None:
    _, oc = signals("opencode", "run-json-read.jsonl")
    assert oc.total_cost_usd == pytest.approx(2 * 0.000105)  # OpenCode reports it per step
    _, gem = signals("gemini-cli", "stream-json-read_file.jsonl", model="gemini-2.5-flash")
    assert gem.total_cost_usd == pytest.approx(price("gemini-2.5-flash", 20, 10))
    assert gem.duration_ms == 505
    _, codex = signals("codex", "exec-json-stream.jsonl", model="no-such-model")
    assert codex.total_cost_usd is None  # tokens only: no price listed for this model


def test_a_skill_read_outside_the_install_is_not_activation() -> None:
    text = (DATA / "opencode" / "run-json-read.jsonl").read_text().replace(
        "/.agents/skills/", "/elsewhere/")
    tr = parse_agent_stream("opencode", text, listing("opencode", (FAMILY,)), model="m")
    sig = extract_signals(tr, family=FAMILY, leaf=f"{FAMILY}/SKILL.md", site_host=None)
    assert sig.skill_activation == "none"


def test_truncated_stream_and_missing_listing_are_not_ok() -> None:
    text = (DATA / "gemini-cli" / "stream-json-activate_skill.jsonl").read_text()
    cut = "\n".join(text.splitlines()[:-1]) + '\n{"type":"res'
    tr = parse_agent_stream("gemini-cli", cut, listing("gemini-cli", (FAMILY,)), model="m")
    sig = extract_signals(tr, family=FAMILY, leaf=f"{FAMILY}/SKILL.md", site_host=None)
    assert not sig.signals_ok and tr.bad_lines == 1 and tr.result is None
    tr = parse_agent_stream("gemini-cli", text, None, model="m")
    assert tr.init is None and not tr.ok


def test_failed_turn_is_an_error_result() -> None:
    stream = ('{"type":"thread.started","thread_id":"t"}\n{"type":"turn.started"}\n'
              '{"type":"turn.failed","error":{"message":"stream disconnected"}}\n')
    tr = parse_agent_stream("codex", stream, listing("codex", ()), model="m")
    sig = extract_signals(tr, family=FAMILY, leaf=f"{FAMILY}/SKILL.md", site_host=None)
    assert sig.is_error and sig.result_subtype == "error_during_execution"
    assert "stream disconnected" in sig.final_answer
    assert BODY  # the fixture is the real capture


@pytest.mark.parametrize("agent,model,stream,activation", [
    ("codex", "codex:gpt-5.5", "exec-json-stream.jsonl", "file_read"),
    ("gemini-cli", "gemini-cli:gemini-2.5-flash", "stream-json-activate_skill.jsonl",
     "skill_tool"),
])
def test_a_check_reads_another_agents_run_as_the_manifest_does(
        tmp_path: Path, agent: str, model: str, stream: str, activation: str) -> None:
    """``skill_lift_run.signals`` (custom checks, hooks) parses the run's own agent's stream:
    read as Claude Code's stream-json, a Codex or Gemini CLI run had no turns and no
    activation, so the demo's turn check skipped every such run."""
    from pytest_skilllift.model import PromptSpec, RunSpec
    from pytest_skilllift.run.view import SkillLiftRun
    from pytest_skilllift.week.files import AGENT_SKILLS_FILE

    run_dir = tmp_path / "week" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "stdout.txt").write_text((DATA / agent / stream).read_text())
    (run_dir / AGENT_SKILLS_FILE).write_text(listing(agent, (FAMILY,)))
    (tmp_path / "skills" / FAMILY).mkdir(parents=True)
    (tmp_path / "skills" / FAMILY / "SKILL.md").write_text(
        "---\nname: codeword-skill\n---\nMAGIC-TOKEN-codeword-skill")
    prompt = PromptSpec(path=Path("p.json"), name="p", product_area="", prompt="q",
                        rubric=(), skill_path=f"{FAMILY}/SKILL.md")
    spec = RunSpec(prompt=prompt, model_label="x", model_id=model, condition="with-skill",
                   rep=1, run_id="r1")
    run = SkillLiftRun(spec=spec, week_dir=tmp_path / "week", status="ok", reason="",
                       record={"cli_version": "9.9.9"}, skills_root=tmp_path / "skills")
    assert run.signals.num_turns == 2
    assert run.signals.skill_activation == activation
    assert run.signals.final_answer == ANSWER
