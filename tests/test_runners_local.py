"""LocalRunner with the real bundled Claude Code CLI against the loopback stand-in.

Every CLI run here is real and offline (``ANTHROPIC_BASE_URL`` points at 127.0.0.1). Runs are
made once per module and shared by the assertions, since each costs about a second.
"""

from __future__ import annotations

import os
import stat
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.model import AgentConfig, PromptSpec, RunOutcome, RunSpec, Signals
from pytest_skilllift.runners.base import Runner
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.runners.local import LocalRunner
from pytest_skilllift.runners.redaction import redact, secret_values
from pytest_skilllift.testing import Faults, Reply, StandIn
from pytest_skilllift.testing.agent_script import make_agent, skill_agent
from pytest_skilllift.trace.audit import audit_invocation
from pytest_skilllift.trace.transcript import Transcript, extract_signals, parse_transcript
from pytest_skilllift.week.columns import VERIFIED
from pytest_skilllift.week.files import STDERR_FILE, STDOUT_FILE

SKILLS = Path(__file__).parent / "fixtures" / "skills"
SECRET = "sk-ant-test-SECRET-" + uuid.uuid4().hex
FAMILY = "demo-widgets"
LEAF = "demo-widgets/calibration/SKILL.md"
PROMPT = "How do I calibrate widget torque?"
CLAUDE = bundled_claude()

needs_cli = pytest.mark.skipif(CLAUDE is None, reason="claude-agent-sdk's bundled CLI missing")


def _spec(condition: str, run_id: str, prompt: str = PROMPT, skill_path: str = LEAF,
          model: str = "claude-haiku-4-5") -> RunSpec:
    ps = PromptSpec(path=Path("demo.json"), name="demo", product_area="demo", prompt=prompt,
                    rubric=(), skill_path=skill_path)
    return RunSpec(prompt=ps, model_label="haiku", model_id=model, condition=condition, rep=1,
                   run_id=run_id)


def _cfg(api: StandIn | None, **kw: Any) -> AgentConfig:
    env = {"ANTHROPIC_API_KEY": SECRET}
    if api is not None:
        env["ANTHROPIC_BASE_URL"] = api.base_url
    kw.setdefault("timeout_s", 120.0)
    return AgentConfig(claude_path=str(kw.pop("claude_path", CLAUDE)), skills_root=SKILLS,
                       env=env, **kw)


@dataclass
class Run:
    outcome: RunOutcome
    run_dir: Path
    transcript: Transcript
    signals: Signals
    agent_requests: int


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    """The real CLI, once per scenario, against one key-checking stand-in."""
    if CLAUDE is None:
        pytest.skip("claude-agent-sdk's bundled CLI missing")
    out = tmp_path_factory.mktemp("cli-runs")
    runner = LocalRunner()
    scenarios: list[tuple[str, str, Any, dict[str, Any]]] = [
        ("with", "with-skill", skill_agent, {}),
        ("without", "no-skill", skill_agent, {}),
        ("read", "with-skill", make_agent("read"), {}),
        ("budget", "no-skill", make_agent("loop"), {"max_budget_usd": 0.05}),
        ("turns", "no-skill", make_agent("loop"), {"max_turns": 2}),
        ("denied", "with-skill", make_agent("read"), {"allowed_tools": ("Skill", "Bash")}),
    ]
    runs: dict[str, Run] = {}
    with StandIn(api_key=SECRET) as api:
        for name, condition, agent, cfg_kw in scenarios:
            api.agent = agent
            before = api.count("agent")
            run_dir = out / name
            outcome = runner.run(_spec(condition, name), _cfg(api, **cfg_kw), run_dir)
            tr = parse_transcript(run_dir / STDOUT_FILE)
            sig = extract_signals(tr, family=FAMILY, leaf=LEAF, site_host="skills.example.com")
            runs[name] = Run(outcome, run_dir, tr, sig, api.count("agent") - before)
        assert api.count("judge", ok_only=False) == 0
        # QUIET_ENV keeps the CLI to the Messages API: no probes, no side calls.
        assert api.count("aux", ok_only=False) == 0, [r.path for r in api.requests]
        assert all(r.status != 401 for r in api.requests)  # the key reached the CLI intact
    runner.close()
    yield runs


def test_runner_satisfies_the_protocol() -> None:
    runner: Runner = LocalRunner()
    assert runner.name == "local"


@pytest.mark.cli
@needs_cli
def test_with_skill_arm(cli_runs: dict[str, Run]) -> None:
    run = cli_runs["with"]
    assert run.outcome.exit_code == 0 and not run.outcome.timed_out and run.outcome.error is None
    assert run.outcome.cli_version and run.outcome.cli_version == run.signals.cli_version
    sig = run.signals
    assert sig.signals_ok and sig.result_subtype == "success" and not sig.is_error
    assert sig.skill_available and FAMILY in sig.skills_listed
    assert sig.skill_activation == "skill_tool"
    assert sig.reached_leaf  # the agent followed the body's link to calibration/SKILL.md
    assert sig.permission_denials == 0  # dontAsk + allow-list lets Skill and Read run
    # The answer carries content only the installed skill (and its leaf) contains.
    assert "reference spring R-12" in sig.final_answer
    assert "WX-7 torque profile" in sig.final_answer
    assert sig.total_cost_usd is not None and sig.total_cost_usd > 0
    assert sig.num_turns is not None and sig.num_turns >= 3
    assert sig.model_snapshot == "claude-haiku-4-5"
    assert (run.transcript.init or {}).get("permissionMode") == "dontAsk"
    assert audit_invocation(run.transcript, family=FAMILY).status == VERIFIED


@pytest.mark.cli
@needs_cli
def test_no_skill_arm(cli_runs: dict[str, Run]) -> None:
    sig = cli_runs["without"].signals
    assert sig.signals_ok and sig.result_subtype == "success"
    assert not sig.skill_available and FAMILY not in sig.skills_listed
    assert sig.skill_activation == "none" and not sig.reached_leaf
    assert "R-12" not in sig.final_answer and "WX-7" not in sig.final_answer
    assert "torque" in sig.final_answer  # a generic answer about the question
    assert sig.total_cost_usd is not None and sig.total_cost_usd > 0


@pytest.mark.cli
@needs_cli
def test_file_read_activation(cli_runs: dict[str, Run]) -> None:
    sig = cli_runs["read"].signals
    assert sig.skill_available and sig.skill_activation == "file_read" and sig.reached_leaf
    assert sig.permission_denials == 0 and "R-12" in sig.final_answer
    reads = [u.file_path for u in cli_runs["read"].transcript.calls("Read")]
    assert reads[0] == "~/.claude/skills/demo-widgets/SKILL.md"


@pytest.mark.cli
@needs_cli
def test_denied_read_is_netted_out(cli_runs: dict[str, Run]) -> None:
    run = cli_runs["denied"]
    sig = run.signals
    assert sig.skill_available and sig.permission_denials >= 1
    denied = [u for u in run.transcript.calls("Read") if u.denied]
    assert denied and sig.skill_activation == "none" and not sig.reached_leaf


@pytest.mark.cli
@needs_cli
def test_budget_and_max_turns_stops(cli_runs: dict[str, Run]) -> None:
    budget = cli_runs["budget"].signals
    assert budget.budget_hit and budget.result_subtype == "error_max_budget_usd"
    assert budget.is_error and budget.signals_ok
    assert budget.total_cost_usd is not None and budget.total_cost_usd > 0.05
    turns = cli_runs["turns"].signals
    assert turns.result_subtype == "error_max_turns" and not turns.budget_hit
    assert cli_runs["turns"].outcome.exit_code != 0


@pytest.mark.cli
@needs_cli
def test_run_dir_holds_only_the_transcript_and_no_secret(cli_runs: dict[str, Run]) -> None:
    for name, run in cli_runs.items():
        files = sorted(p.name for p in run.run_dir.rglob("*"))
        assert files == [STDERR_FILE, STDOUT_FILE], name
        for p in run.run_dir.rglob("*"):
            assert SECRET.encode() not in p.read_bytes(), p
            assert b"sk-ant-test-SECRET" not in p.read_bytes(), p


# -- runner mechanics with a fake CLI (fast, no model) -------------------------------------


def _fake_cli(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-claude"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_secrets_are_redacted_from_output(tmp_path: Path) -> None:
    fake = _fake_cli(tmp_path, 'echo "key=$ANTHROPIC_API_KEY home=$HOME"\n'
                               'echo "err $ANTHROPIC_API_KEY" >&2\nls -a "$HOME"')
    out = LocalRunner().run(_spec("no-skill", "r"), _cfg(None, claude_path=fake), tmp_path / "r")
    assert out.exit_code == 0 and out.error is None
    stdout = (tmp_path / "r" / STDOUT_FILE).read_text()
    assert "key=[REDACTED]" in stdout and SECRET not in stdout
    assert (tmp_path / "r" / STDERR_FILE).read_text() == "err [REDACTED]\n"
    assert redact(b"a sk-ant-x-123456789 b", secret_values({"MY_TOKEN": "sk-ant-x-123456789"})
                  ) == b"a [REDACTED] b"


def test_fresh_home_and_empty_cwd_per_run(tmp_path: Path) -> None:
    fake = _fake_cli(tmp_path, 'pwd; ls -A; echo "HOME=$HOME"; '
                               'find "$HOME" -name SKILL.md | sort; touch "$HOME/leftover"')
    runner = LocalRunner(tmp_root=tmp_path / "tmp")
    (tmp_path / "tmp").mkdir()
    out = runner.run(_spec("with-skill", "w"), _cfg(None, claude_path=fake), tmp_path / "w")
    assert out.exit_code == 0
    lines = (tmp_path / "w" / STDOUT_FILE).read_text().splitlines()
    cwd, home = lines[0], lines[1][len("HOME="):]
    assert cwd.endswith("/work") and home.endswith("/home")
    installed = [ln[len(home):] for ln in lines[2:]]
    assert installed == ["/.claude/skills/demo-widgets/SKILL.md",
                         "/.claude/skills/demo-widgets/calibration/SKILL.md"]
    assert list((tmp_path / "tmp").iterdir()) == []  # temp tree removed
    runner.run(_spec("no-skill", "n"), _cfg(None, claude_path=fake), tmp_path / "n")
    n_lines = (tmp_path / "n" / STDOUT_FILE).read_text().splitlines()
    assert n_lines[1] != lines[1] and len(n_lines) == 2  # a new HOME, nothing installed


@pytest.mark.slow
def test_stdout_is_streamed_while_running(tmp_path: Path) -> None:
    fake = _fake_cli(tmp_path, "echo first; sleep 1.5; echo second")
    seen: list[str] = []
    target = tmp_path / "s" / STDOUT_FILE

    done = threading.Event()

    def watch() -> None:
        # Until the run ends (not a fixed 1.2 s from here: under load the CLI may not have
        # started by then): what the file held the first time it held anything.
        while not done.is_set():
            if target.exists() and "first" in target.read_text():
                seen.append(target.read_text())
                return
            time.sleep(0.05)

    th = threading.Thread(target=watch)
    th.start()
    try:
        LocalRunner().run(_spec("no-skill", "s"), _cfg(None, claude_path=fake),
                          tmp_path / "s")
    finally:
        done.set()
        th.join()
    assert seen and "second" not in seen[0]
    assert target.read_text() == "first\nsecond\n"


def _alive(marker: str) -> list[int]:
    """PIDs whose command line contains ``marker``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _running_in(root: Path) -> list[int]:
    """PIDs whose working directory is under ``root``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(root) in os.readlink(entry / "cwd"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


@pytest.mark.slow
def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    # A unique sleep length marks our processes in /proc.
    marker = f"{600 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6:06d}"
    # A child and a grandchild that would outlive a plain kill of the parent.
    fake = _fake_cli(tmp_path, f'sh -c "sleep {marker}; true" &\n'
                               f'sleep {marker} &\necho started\nwait')
    if not Path("/proc").is_dir():
        pytest.skip("needs /proc")
    t0 = time.monotonic()
    out = LocalRunner(kill_grace_s=0.5).run(
        _spec("no-skill", "t"), _cfg(None, claude_path=fake, timeout_s=1.0), tmp_path / "t")
    assert out.timed_out and out.error and "timed out" in out.error
    assert time.monotonic() - t0 < 10
    assert (tmp_path / "t" / STDOUT_FILE).read_text() == "started\n"
    # SIGKILLed processes leave /proc when the kernel has torn them down (and their parent
    # or init reaped them): wait for that with a deadline rather than a fixed 0.2 s.
    deadline = time.monotonic() + 10
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alive(marker) == []


@pytest.mark.cli
@needs_cli
def test_real_cli_timeout(tmp_path: Path) -> None:
    def slow(body: dict[str, Any]) -> Reply:
        time.sleep(20)
        return Reply.text("too late")

    # The prompt is on stdin, not in argv: find the CLI by its working directory, which is
    # under this test's own temp root.
    tmp_root = tmp_path / f"slow-{uuid.uuid4().hex}"
    tmp_root.mkdir()
    seen: list[int] = []

    def note_then_slow(body: dict[str, Any]) -> Reply:
        seen.extend(_running_in(tmp_root))
        return slow(body)

    with StandIn(agent=note_then_slow) as api:
        out = LocalRunner(kill_grace_s=1.0, tmp_root=tmp_root).run(
            _spec("no-skill", "slow"), _cfg(api, timeout_s=3.0), tmp_path / "slow")
        assert out.timed_out and 3000 <= out.wall_ms < 10000
        assert seen  # the probe does find the running CLI ...
        assert _running_in(tmp_root) == []  # ... and nothing of it survives the timeout
        tr = parse_transcript(tmp_path / "slow" / STDOUT_FILE)
        assert tr.result is None and not tr.ok  # killed before the result event


def test_missing_family_and_unstartable_cli(tmp_path: Path) -> None:
    spec = _spec("with-skill", "m", skill_path="no-such-family/SKILL.md")
    out = LocalRunner().run(spec, _cfg(None, claude_path="/bin/true"), tmp_path / "m")
    assert out.exit_code is None and out.error and "no-such-family" in out.error
    assert (tmp_path / "m" / STDOUT_FILE).read_bytes() == b""
    out = LocalRunner().run(_spec("no-skill", "x"),
                            _cfg(None, claude_path=str(tmp_path / "nope")), tmp_path / "x")
    assert out.exit_code is None and out.error and "could not start" in out.error
    assert not out.timed_out


def test_outcome_timestamps(tmp_path: Path) -> None:
    out = LocalRunner().run(_spec("no-skill", "ts"), _cfg(None, claude_path="/bin/true"),
                            tmp_path / "ts")
    assert out.exit_code == 0 and out.runner == "local" and out.cli_version == ""
    assert len(out.started_utc) == 16 and out.started_utc.endswith("Z")
    assert out.ended_utc >= out.started_utc and out.wall_ms >= 0
    assert replace(out, wall_ms=0).wall_ms == 0  # a frozen dataclass, as the contract says


@pytest.mark.cli
@needs_cli
def test_real_cli_retries_through_faults_and_reports_exhaustion(tmp_path: Path) -> None:
    # Transient faults: the CLI retries (api_retry events) and the run still succeeds.
    faults = Faults(first_n=3, kinds=("529", "truncate", "reset"))
    with StandIn(agent=skill_agent, faults=faults) as api:
        LocalRunner().run(_spec("no-skill", "f"), _cfg(api), tmp_path / "f")
        assert [r.fault for r in api.requests[:4]] == ["529", "truncate", "reset", None]
    tr = parse_transcript(tmp_path / "f" / STDOUT_FILE)
    assert tr.ok and tr.api_retries == 3 and tr.api_error_status is None
    assert extract_signals(tr, family=FAMILY, leaf=LEAF, site_host=None).result_subtype == (
        "success")

    # Persistent 500s with retries capped: the run ends on the API error, flagged is_error
    # even though the CLI's subtype still reads "success".
    cfg = _cfg(None)
    with StandIn(agent=skill_agent, faults=Faults(rate=1.0, kinds=("500",))) as api:
        cfg = replace(cfg, env={**cfg.env, "ANTHROPIC_BASE_URL": api.base_url,
                                "CLAUDE_CODE_MAX_RETRIES": "1"})
        out = LocalRunner().run(_spec("no-skill", "e"), cfg, tmp_path / "e")
    tr = parse_transcript(tmp_path / "e" / STDOUT_FILE)
    sig = extract_signals(tr, family=FAMILY, leaf=LEAF, site_host=None)
    assert out.exit_code != 0 and sig.is_error and tr.api_error_status == 500
    assert sig.final_answer.startswith("API Error")
