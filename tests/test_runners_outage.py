"""Outages: named from the CLI's own events within seconds; the circuit breaker stops the rest.

The real bundled CLI against a port with nothing listening (connection refused), and against
the stand-in refusing the key (401); the judge side with a fake grader whose every call fails
the same way. The watch itself is fed real ``api_retry`` event lines.
"""

from __future__ import annotations

import contextlib
import csv
import http.server
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.run.breaker import CircuitBreaker, judge_cause
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.runners.outage import OutageWatch, probe
from pytest_skilllift.testing.agent_script import skill_agent
from pytest_skilllift.testing.judge_script import keyword_judge
from pytest_skilllift.testing.server import StandIn

PROMPTS = ("git-bisect-regression.json", "python-packaging-pyproject.json")
KEY = "sk-ant-test-outage-0123456789"
needs_cli = pytest.mark.skipif(bundled_claude() is None,
                               reason="claude-agent-sdk (bundled CLI) missing")


def dead_port() -> int:
    """A loopback port with nothing listening (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_project(root: Path) -> None:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    (root / "evals" / "test-prompts").mkdir(parents=True)
    for name in PROMPTS:
        shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / name, root / "evals" / "test-prompts")
    (root / "pytest.ini").write_text("[pytest]\nskill_lift_models = haiku=claude-haiku-4-5\n"
                                     "skill_lift_reps = 1\nskill_lift_out = week\n"
                                     "skill_lift_timeout = 300\n")


def session(root: Path, base_url: str, *args: str, key: str = KEY,
            ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": key}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--skill-lift", "-p", "no:cacheprovider", "-p",
         "no:xdist", "-rs", "--skill-lift-progress-interval=0",
         "--skill-lift-preflight=off",  # the runs' own outage handling is what is tested
         *args], cwd=root, env=env,
        capture_output=True, text=True, timeout=600)


def manifest(root: Path) -> list[dict[str, str]]:
    with (root / "week" / "manifest.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


@needs_cli
@pytest.mark.cli
def test_unreachable_api_is_named_in_seconds_and_the_breaker_stops_the_rest(
        tmp_path: Path) -> None:
    make_project(tmp_path)
    port = dead_port()
    result = session(tmp_path, f"http://127.0.0.1:{port}")
    out = result.stdout
    cause = (f"API unreachable at 127.0.0.1:{port}: connection refused; check "
             "ANTHROPIC_BASE_URL")
    runs = manifest(tmp_path)
    # Three runs errored with the cause in words, each well within 30 s (not the 300 s
    # timeout), then the breaker: the fourth is not run, counted and named.
    assert len(runs) == 3, out
    assert all(r["run_status"] == "errored" and r["run_error"] == cause for r in runs), runs
    assert all(int(r["wall_ms"]) < 30_000 for r in runs), [r["wall_ms"] for r in runs]
    assert f"circuit breaker: 1 run(s) not run: {cause}" in out, out
    assert "not run 1" in out  # the progress line
    assert f"not run: {cause}" in out  # the items' skip reason
    assert result.returncode == 1, out
    records = [json.loads(p.read_text()) for p in (tmp_path / "week").glob("*/run.json")]
    assert all(r["outage"] == cause for r in records)
    # the held-back run is in the week's coverage, not only in the terminal
    spend = json.loads((tmp_path / "week" / "spend.json").read_text())
    assert len(spend["not_run_outage"]) == 1
    card = json.loads((tmp_path / "week" / "scorecard.json").read_text())
    assert card["coverage"]["not_run_outage"] == 1
    assert "runs graded: **0 of 3** run (4 planned, 1 not run)" in (
        tmp_path / "week" / "scorecard.md").read_text()
    # The next session, with the API back, retries them: the whole week is graded.
    with StandIn(agent=skill_agent, judge=keyword_judge) as api:
        again = session(tmp_path, api.base_url)
    assert again.returncode == 0, again.stdout
    runs = manifest(tmp_path)
    assert len(runs) == 4 and all(r["run_status"] == "ok" for r in runs)
    card = json.loads((tmp_path / "week" / "scorecard.json").read_text())
    assert card["coverage"]["not_run_outage"] == 0


@needs_cli
@pytest.mark.cli
def test_a_refused_key_is_named_not_timed_out(tmp_path: Path) -> None:
    make_project(tmp_path)
    with StandIn(agent=skill_agent, judge=keyword_judge, api_key="the-right-key-123456") as api:
        result = session(tmp_path, api.base_url, "--skill-lift-breaker=0", "-k",
                         "git-bisect and no-skill")
        port = api.base_url.rsplit(":", 1)[1]
    runs = manifest(tmp_path)
    assert len(runs) == 1, result.stdout
    assert runs[0]["run_status"] == "errored"
    assert runs[0]["run_error"].startswith(
        f"API refused the key at 127.0.0.1:{port} (HTTP 401 authentication_failed); check "
        "ANTHROPIC_API_KEY")
    assert int(runs[0]["wall_ms"]) < 30_000


@needs_cli
@pytest.mark.cli
def test_an_invoked_item_of_a_run_the_breaker_holds_back_is_skipped_with_the_reason(
        tmp_path: Path) -> None:
    """Serially, with only ``invoked`` items selected, the item that meets the open breaker is
    the first of its run: it skips with the breaker's reason, as rubric items do (it was a
    FAILED item with the engine's traceback)."""
    make_project(tmp_path)
    port = dead_port()
    result = session(tmp_path, f"http://127.0.0.1:{port}", "--skill-lift-breaker=1",
                     "-k", "invoked")
    out = result.stdout
    assert "FAILED" not in out and "Traceback" not in out and "NotStarted" not in out, out
    assert "SKIPPED [1]" in out and "not run: API unreachable at" in out, out
    assert "circuit breaker: 1 run(s) not run" in out, out


# -- the watch, fed real event lines --------------------------------------------------------

def retry(status: Any, error: str, attempt: int) -> bytes:
    return json.dumps({"type": "system", "subtype": "api_retry", "attempt": attempt,
                       "max_retries": 10, "retry_delay_ms": 600, "error_status": status,
                       "error": error}).encode() + b"\n"


def test_watch_names_a_missing_model_after_two_retries() -> None:
    watch = OutageWatch("https://api.example.invalid", "claude-nope-9")
    assert watch.feed(retry(404, "not_found_error", 1)) is None
    assert watch.feed(retry(404, "not_found_error", 2)) == (
        "model 'claude-nope-9' not found at api.example.invalid:443 (HTTP 404 "
        "not_found_error); check skill_lift_models")


def test_watch_ignores_rate_limits_and_overload() -> None:
    watch = OutageWatch("http://127.0.0.1:1", "m")
    for n, status in enumerate([429, 529, 500, 429, 529, 500, 429], 1):
        assert watch.feed(retry(status, "rate_limit", n)) is None


def test_connection_failures_are_an_outage_only_when_the_host_is_down() -> None:
    with StandIn() as api:  # something listens: a reset is the network's passing fault
        watch = OutageWatch(api.base_url, "m")
        assert all(watch.feed(retry(None, "unknown", n)) is None for n in range(1, 8))
    port = dead_port()
    watch = OutageWatch(f"http://127.0.0.1:{port}", "m")
    causes = [watch.feed(retry(None, "unknown", n)) for n in range(1, 4)]
    assert causes[:2] == [None, None]
    assert causes[2] == (f"API unreachable at 127.0.0.1:{port}: connection refused; check "
                         "ANTHROPIC_BASE_URL")


def test_a_silent_cli_has_the_host_probed_and_only_an_unreachable_one_is_an_outage(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenCode retries a refused connection without a word: after SILENT_PROBE_S without
    a line the host is probed (in a thread); a host that answers leaves the run alone."""
    import types

    from pytest_skilllift.runners import outage

    monkeypatch.setattr(outage, "SILENT_PROBE_S", 0.2)
    # The watch's own clock, moved by hand: with real sleeps a loaded machine overshot the
    # 0.15 s after a line past the 0.2 s of silence (a probe, an outage, where none was).
    now = [1000.0]
    monkeypatch.setattr(outage, "time", types.SimpleNamespace(monotonic=lambda: now[0]))

    def silent_cause(watch: OutageWatch, *, feed: bool = False) -> str | None:
        assert watch.tick() is None  # not silent long enough yet
        now[0] += 0.1
        if feed:
            watch.feed(b'{"type":"step_start"}')  # a line: the silence starts again
        now[0] += 0.15
        watch.tick()
        if watch._silent_probe is not None:
            watch._silent_probe.join(10)
        return watch.cause

    with StandIn() as api:  # a model thinking: the host answers
        assert silent_cause(OutageWatch(api.base_url, "m")) is None
    port = dead_port()
    assert silent_cause(OutageWatch(f"http://127.0.0.1:{port}", "m"), feed=True) is None
    assert silent_cause(OutageWatch(f"http://127.0.0.1:{port}", "m", url_hint="X_URL")) == (
        f"API unreachable at 127.0.0.1:{port}: connection refused; check X_URL")


def test_probe_names_a_dns_failure() -> None:
    why = probe("https://no-such-host.invalid")
    assert why is not None and why.startswith("DNS lookup of no-such-host.invalid failed")


def test_breaker_opens_after_n_same_causes_and_only_then(tmp_path: Path) -> None:
    breaker = CircuitBreaker(tmp_path / "log", threshold=3)
    breaker.record("")
    assert not (tmp_path / "log").exists()  # a clean session writes nothing
    for cause in ["down", "", "down", "down"]:
        breaker.record(cause)
        assert breaker.open_cause() is None
    breaker.record("down")
    assert breaker.reason() == "not run: down"
    assert CircuitBreaker(tmp_path / "log", threshold=0).open_cause() is None


def test_judge_causes() -> None:
    assert judge_cause("judge call failed: HTTP 401 authentication_error (not retryable)")
    assert judge_cause("judge call failed after 7 attempts; last error: connection error "
                       "(ConnectError)").startswith("the judge's API is unreachable")
    assert judge_cause("judge call failed after 7 attempts; last error: HTTP 429 x") == ""


# -- the other agents' words, and stderr (lines as the real CLIs printed them) ---------------

CODEX_DOWN = (b'{"type":"error","message":"Reconnecting... waiting for network (Connection '
              b'failed: error sending request)"}\n')
CODEX_401 = (b'{"type":"error","message":"Reconnecting... 1/5 (unexpected status 401 '
             b'Unauthorized: invalid API key, url: http://127.0.0.1:9/v1/responses)"}\n')
GEMINI_DOWN = (b"Attempt 2 failed. Retrying with backoff... Error: exception TypeError: fetch "
               b"failed sending request\n")
GEMINI_401 = [b"Error when talking to Gemini API Full report available at: /tmp/x.json "
              b'_ApiError: {"type":"error","error":{"type":"authentication_error",'
              b'"message":"invalid API key"}}\n', b"  status: 401\n"]
OPENCODE_401 = (b'{"type":"error","timestamp":1,"sessionID":"s","error":{"name":"APIError",'
                b'"data":{"message":"invalid x-api-key","statusCode":401,"isRetryable":false}}}\n')


def test_codex_reconnects_to_nothing_are_an_outage() -> None:
    port = dead_port()
    watch = OutageWatch(f"http://127.0.0.1:{port}/v1", "gpt-5.5", key_hint="OPENAI_API_KEY",
                        url_hint="OPENAI_BASE_URL")
    causes = [watch.feed(CODEX_DOWN) for _ in range(3)]
    assert causes == [None, None, f"API unreachable at 127.0.0.1:{port}: connection refused; "
                                  "check OPENAI_BASE_URL"]


def test_codex_refused_key_is_named_after_two_reconnects() -> None:
    watch = OutageWatch("http://127.0.0.1:9/v1", "gpt-5.5", key_hint="OPENAI_API_KEY")
    assert watch.feed(CODEX_401) is None
    assert watch.feed(CODEX_401) == ("API refused the key at 127.0.0.1:9 (HTTP 401); check "
                                     "OPENAI_API_KEY")


def test_gemini_retries_on_stderr_are_an_outage() -> None:
    port = dead_port()
    watch = OutageWatch(f"http://127.0.0.1:{port}", "gemini-2.5-flash",
                        url_hint="GOOGLE_GEMINI_BASE_URL")
    assert watch.feed(GEMINI_DOWN) is None  # stdout never carries these
    causes = [watch.feed_stderr(GEMINI_DOWN) for _ in range(3)]
    assert causes[2] == (f"API unreachable at 127.0.0.1:{port}: connection refused; check "
                         "GOOGLE_GEMINI_BASE_URL")


@pytest.mark.parametrize("lines,stream,said", [(GEMINI_401, "stderr", "HTTP 401"),
                                              ([OPENCODE_401], "stdout",
                                               "HTTP 401 invalid x-api-key")],
                         ids=["gemini-stderr", "opencode"])
def test_a_refused_key_the_cli_gave_up_on_is_named_when_it_ends(lines: list[bytes],
                                                                 stream: str, said: str) -> None:
    watch = OutageWatch("http://127.0.0.1:9", "m", key_hint="KEY_VAR")
    for line in lines:
        (watch.feed_stderr if stream == "stderr" else watch.feed)(line)
    assert watch.cause is None  # one final error: said when the CLI has ended
    assert watch.ended(0) is None  # it ended well after all
    assert watch.ended(1) == f"API refused the key at 127.0.0.1:9 ({said}); check KEY_VAR"


def test_probe_names_a_server_that_does_not_speak_tls() -> None:
    with StandIn() as api:  # plain HTTP
        why = probe(api.base_url.replace("http://", "https://"))
    assert why is not None and why.startswith("TLS failure: the server does not speak TLS"), why
    assert "is the URL http://, not https://?" in why


@needs_cli
@pytest.mark.cli
def test_a_tls_failure_is_named_in_seconds_and_retried_next_session(tmp_path: Path) -> None:
    """The real CLI against https:// on a port that speaks plain HTTP (the stand-in)."""
    make_project(tmp_path)
    with StandIn(agent=skill_agent, judge=keyword_judge) as api:
        https = api.base_url.replace("http://", "https://")
        result = session(tmp_path, https, "-k", "git-bisect and no-skill")
        runs = manifest(tmp_path)
        assert len(runs) == 1, result.stdout
        at = https.removeprefix("https://")
        assert runs[0]["run_status"] == "errored"
        assert runs[0]["run_error"].startswith(
            f"API unreachable at {at}: TLS failure: the server does not speak TLS"), runs
        assert runs[0]["run_error"].endswith("check ANTHROPIC_BASE_URL")
        assert int(runs[0]["wall_ms"]) < 30_000
        assert api.count("agent", ok_only=False) == 0  # no request ever got through
        again = session(tmp_path, api.base_url, "-k", "git-bisect and no-skill")
    assert again.returncode == 0, again.stdout
    assert [r["run_status"] for r in manifest(tmp_path)] == ["ok"]


UNTRUSTED_PEM = Path(__file__).parent / "fixtures" / "tls" / "untrusted-self-signed.pem"


@contextlib.contextmanager
def untrusted_tls_server() -> Iterator[str]:
    """An https:// base URL whose server presents a self-signed certificate (a test-only key,
    ``tests/fixtures/tls``): what a TLS-inspecting proxy or a private gateway looks like."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(UNTRUSTED_PEM)

    class Quiet(http.server.HTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # the client rejects the certificate: expected

    server = Quiet(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    server.socket = ctx.wrap_socket(server.socket, server_side=True,
                                    do_handshake_on_connect=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


UNTRUSTED = ("TLS failure: the server's certificate is not trusted (self-signed "
             "certificate); point SSL_CERT_FILE / NODE_EXTRA_CA_CERTS at its CA")


def test_claude_giving_up_on_an_untrusted_certificate_is_an_outage() -> None:
    """Claude Code does not retry a certificate it does not trust: one result event (the
    line as the bundled CLI 2.1 wrote it), exit status 1."""
    result = json.dumps({
        "type": "result", "subtype": "success", "is_error": True, "api_error_status": None,
        "api_error": "tls_untrusted_ca", "terminal_reason": "api_error",
        "result": "API Error: Unable to connect to API: Self-signed certificate detected "
                  "(DEPTH_ZERO_SELF_SIGNED_CERT). The certificate comes from an authority "
                  "Claude Code doesn't trust · see https://code.claude.com/docs"}).encode()
    with untrusted_tls_server() as url:
        watch = OutageWatch(url, "m")
        assert watch.feed(result + b"\n") is None
        assert watch.ended(0) is None
        cause = watch.ended(1)
    at = url.removeprefix("https://")
    assert cause is not None and cause.startswith(f"API unreachable at {at}: {UNTRUSTED}"), cause
    assert cause.endswith("; check ANTHROPIC_BASE_URL")
    # With the host gone by then, the CLI's own words.
    watch = OutageWatch(f"https://127.0.0.1:{dead_port()}", "m")
    watch.feed(result)
    assert "connection refused" in str(watch.ended(1))


@needs_cli
@pytest.mark.cli
def test_an_untrusted_certificate_is_named_and_opens_the_breaker(tmp_path: Path) -> None:
    """The real CLI against a self-signed TLS server: it gives up at once, which the old code
    recorded as "CLI exit 1, result success", four times over, with no breaker."""
    make_project(tmp_path)
    with untrusted_tls_server() as url:
        result = session(tmp_path, url)
    out = result.stdout
    cause = f"API unreachable at {url.removeprefix('https://')}: {UNTRUSTED}"
    runs = manifest(tmp_path)
    assert len(runs) == 3, out
    assert all(r["run_status"] == "errored" and r["run_error"].startswith(cause)
               for r in runs), runs
    assert "circuit breaker: 1 run(s) not run: " + cause in out, out
    assert result.returncode == 1, out
    with StandIn(agent=skill_agent, judge=keyword_judge) as api:
        again = session(tmp_path, api.base_url)
    assert again.returncode == 0, again.stdout
    assert [r["run_status"] for r in manifest(tmp_path)] == ["ok"] * 4


@needs_cli
@pytest.mark.cli
def test_trigger_runs_have_the_circuit_breaker_too(tmp_path: Path) -> None:
    from pytest_skilllift.testing.trigger_script import explore_first
    from tests.test_run_triggers import GIT_BISECT_QUERIES
    from tests.test_run_triggers import make_project as trigger_project

    trigger_project(tmp_path, {"git-bisect": {"skill": "git-bisect",
                                              "queries": GIT_BISECT_QUERIES[:4]}},
                    "skill_lift_timeout = 300\n")
    port = dead_port()
    result = session(tmp_path, f"http://127.0.0.1:{port}")
    out = result.stdout
    cause = (f"API unreachable at 127.0.0.1:{port}: connection refused; check "
             "ANTHROPIC_BASE_URL")
    with (tmp_path / "week" / "triggers" / "triggers.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3, out  # three errored with the cause, then the breaker
    assert all(r["run_status"] == "errored" and r["run_error"] == cause for r in rows), rows
    assert all(int(r["wall_ms"]) < 30_000 for r in rows)
    assert (f"circuit breaker: 1 run(s) (1 of them trigger runs) not run: {cause}"
            in out), out
    assert f"not run: {cause}" in out  # the item's skip reason
    assert result.returncode == 1, out
    with StandIn(agent=explore_first()) as api:
        again = session(tmp_path, api.base_url)
    assert again.returncode == 0, again.stdout
    with (tmp_path / "week" / "triggers" / "triggers.csv").open(newline="") as fh:
        assert [r["run_status"] for r in csv.DictReader(fh)] == ["ok"] * 4


@pytest.mark.cli
@pytest.mark.parametrize("model_id,url_var,mode", [
    ("codex:gpt-5.5", "OPENAI_BASE_URL", "dead"),  # Codex: its stdout error events
    ("gemini-cli:gemini-2.5-flash", "GOOGLE_GEMINI_BASE_URL", "dead"),  # Gemini: stderr
    ("opencode:anthropic/claude-sonnet-4-5", "ANTHROPIC_BASE_URL", "401"),  # it gives up
    ("opencode:anthropic/claude-sonnet-4-5", "ANTHROPIC_BASE_URL", "dead"),  # silent: probed
], ids=["codex-unreachable", "gemini-unreachable-stderr", "opencode-bad-key",
        "opencode-unreachable-silent"])
def test_the_other_agents_outages_are_named_from_their_own_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_id: str, url_var: str,
        mode: str) -> None:
    """The real Codex, Gemini CLI and OpenCode, through the local runner: a port with nothing
    listening (Codex and Gemini CLI retry it for minutes) or the stand-in refusing the key."""
    from pytest_skilllift.agents.registry import agent as defn
    from pytest_skilllift.model import AgentConfig, PromptSpec, RubricItem, RunSpec
    from pytest_skilllift.runners.agents import find_cli
    from pytest_skilllift.runners.local import LocalRunner

    agent = model_id.partition(":")[0]
    if find_cli(agent) is None:
        pytest.skip(f"the {agent} CLI is not installed")
    with StandIn(agent=skill_agent, api_key="the-right-key-123456") as api:
        base = f"http://127.0.0.1:{dead_port()}" if mode == "dead" else api.base_url
        monkeypatch.setenv(url_var, base + ("/v1" if agent == "codex" else ""))
        monkeypatch.setenv(defn(agent).key_var, "a-wrong-key-123456")
        prompt = PromptSpec(path=Path("p.json"), name="p", product_area="x", prompt="say hi",
                            rubric=(RubricItem("must", "x", 1),),
                            skill_path="git-bisect/SKILL.md")
        run = RunSpec(prompt=prompt, model_label="l", model_id=model_id, condition="no-skill",
                      rep=1, run_id="r")
        cfg = AgentConfig(claude_path="claude", skills_root=DEMO_PROJECT / "skills",
                          timeout_s=150.0)
        outcome = LocalRunner().run(run, cfg, tmp_path / "run")
    at = base.removeprefix("http://")
    if mode == "dead":
        assert outcome.outage == (f"API unreachable at {at}: connection refused; check "
                                  f"{url_var}"), outcome
    else:
        assert outcome.outage.startswith(f"API refused the key at {at} (HTTP 401"), outcome
        assert outcome.outage.endswith(f"check {defn(agent).key_var}")
    assert outcome.error == outcome.outage and not outcome.timed_out
    assert outcome.wall_ms < 90_000  # the listing command included, under this machine's load


def test_runs_the_breaker_held_back_are_counted_in_the_scorecards_coverage(
        tmp_path: Path) -> None:
    """A week whose circuit breaker stopped runs: spend.json lists them (not_run_outage,
    beside not_run_spend_cap) and the coverage says how many were planned, not "0 of 3"."""
    from pytest_skilllift.report.summarize import summarize_week
    from pytest_skilllift.week.spend import read_spend, update_spend

    from .test_week_io import write_week

    week = write_week(tmp_path / "20260808")
    held = ["p-a-sonnet-with-skill-r3-x", "p-b-sonnet-with-skill-r3-x",
            "p-c-sonnet-with-skill-r3-x"]
    record = update_spend(week, None, [], held)
    assert record.not_run_outage == tuple(held) and record.cap_usd is None
    again = read_spend(week)
    assert again is not None and again.not_run_outage == tuple(held)
    s = summarize_week(week, write=False, plots=False)
    cov = s.data["coverage"]
    assert cov["not_run_outage"] == 3 and cov["not_run_spend_cap"] == 0
    total = cov["total_runs"]
    assert f"- runs graded: **{cov['graded_runs']} of {total}** run ({total + 3} planned, 3 not " \
        "run)" in s.markdown
    assert "not run: outage" in s.markdown
    # nothing held back and no cap: spend.json is not written
    other = write_week(tmp_path / "20260815")
    assert update_spend(other, None, [], []).not_run_outage == ()
    assert read_spend(other) is None
