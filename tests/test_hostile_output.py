"""Hostile output: secrets never reach a run's files, model output stays data, calls end.

- a password in a URL (``ANTHROPIC_BASE_URL=https://user:pass@…``, ``HTTPS_PROXY``) is
  redacted from ``stdout.txt``, ``stderr.txt`` and ``run.json``, like a key;
- an answer holding U+2028 / U+2029 / U+0085 (Node's ``JSON.stringify`` writes them raw) is
  still the run's answer, never ``no_answer``;
- model text reaches scorecard.md only through one escaping function (no heading, no HTML,
  no table cell left), and a terminal or CI log only without control characters or GitHub
  workflow commands;
- a judge endpoint that trickles its headers forever does not hold a judge call forever.
"""

from __future__ import annotations

import json
import socket
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_skilllift.judge.client import Judge
from pytest_skilllift.model import AgentConfig, PromptSpec, RubricItem, RunSpec
from pytest_skilllift.report.markdown import untrusted
from pytest_skilllift.report.sections import improvements
from pytest_skilllift.report.terminal_text import terminal_safe
from pytest_skilllift.runners.local import LocalRunner
from pytest_skilllift.trace.transcript import extract_signals, parse_transcript
from pytest_skilllift.week.files import RUN_FILE, STDERR_FILE, STDOUT_FILE
from tests.test_run_engine import Canned, CountingGrader, FakeRunner, engine, spec

PASSWORD = "hunter2-" + "x" * 6  # short and unmarked: found only as URL userinfo
PROXY_PASSWORD = "pr0xy-pw"


def _fake_cli(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-claude"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def _url_env() -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": f"https://alice:{PASSWORD}@api.example.test/v1",
            "HTTPS_PROXY": f"http://bob:{PROXY_PASSWORD}@proxy.example.test:3128"}


def test_url_credentials_never_reach_the_transcript_or_stderr(tmp_path: Path) -> None:
    fake = _fake_cli(tmp_path, 'echo "connecting to $ANTHROPIC_BASE_URL via $HTTPS_PROXY"\n'
                               'echo "proxy auth failed: $HTTPS_PROXY" >&2')
    prompt = PromptSpec(path=Path("demo.json"), name="demo", product_area="demo",
                        prompt="hi", rubric=(), skill_path="demo/SKILL.md")
    run = RunSpec(prompt=prompt, model_label="haiku", model_id="claude-haiku-4-5",
                  condition="no-skill", rep=1, run_id="r")
    cfg = AgentConfig(claude_path=fake, skills_root=tmp_path, env=_url_env(), timeout_s=60)
    LocalRunner().run(run, cfg, tmp_path / "r")
    written = (tmp_path / "r" / STDOUT_FILE).read_text() + (tmp_path / "r" / STDERR_FILE
                                                            ).read_text()
    assert "connecting to https://[REDACTED]@api.example.test/v1" in written
    assert PASSWORD not in written and PROXY_PASSWORD not in written
    assert "proxy.example.test:3128" in written  # only the credentials go


def test_url_credentials_never_reach_run_json(tmp_path: Path) -> None:
    week = tmp_path / "weekly" / "20260808"
    error = f"could not reach https://alice:{PASSWORD}@api.example.test/v1 (HTTP 502)"
    e = engine(week, FakeRunner([Canned(error=error, exit_code=None)]), CountingGrader())
    e.agent = AgentConfig(claude_path="unused", skills_root=tmp_path, env=_url_env())
    e.result(spec())
    record = (week / spec().run_id / RUN_FILE).read_text()
    assert PASSWORD not in record
    assert "could not reach https://[REDACTED]@api.example.test/v1" in record


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\u0085"], ids=["LS", "PS", "NEL"])
def test_an_answer_with_a_unicode_line_separator_is_still_the_answer(
        tmp_path: Path, sep: str) -> None:
    answer = f"Use executemany{sep}inside one transaction."
    events = [
        {"type": "system", "subtype": "init", "skills": [], "model": "m"},
        {"type": "assistant", "message": {"id": "m1", "model": "m",
                                          "content": [{"type": "text", "text": answer}]}},
        {"type": "result", "subtype": "success", "is_error": False, "result": answer},
    ]
    path = tmp_path / STDOUT_FILE
    # As Node writes it: the separator raw inside the JSON string, "\n" between events.
    path.write_text("\n".join(json.dumps(e, ensure_ascii=False) for e in events) + "\n",
                    encoding="utf-8")
    assert sep in path.read_text(encoding="utf-8")
    signals = extract_signals(parse_transcript(path), family="", leaf="", site_host=None)
    assert signals.final_answer == answer


HOSTILE = ("# Owned\n<img src=x onerror=alert(1)> <!-- hide the rest | of the table "
           "[click](https://evil.test) `code")


def test_markdown_escaping_keeps_untrusted_text_inside_its_cell() -> None:
    out = untrusted(HOSTILE)
    assert "\n" not in out and "<" not in out and ">" not in out
    assert not out.startswith("#") and "\\|" in out and "\\[click\\]" in out
    assert "\\`code" in out


def test_improvements_never_render_a_heading_or_html_from_model_text() -> None:
    card = {"improvements": {"strongest_model": "sonnet", "items": [
        {"skill": "s", "prompt": "p", "pattern": "hurt on every model",
         "suggestion": "rewrite it",
         "evidence": f"must lift -0.5; misled quote: must “x” (with-skill r1: “{HOSTILE}”)"}]}}
    lines = "\n".join(improvements.render(card)).split("\n")  # type: ignore[arg-type]
    assert not any(line.lstrip().startswith("# Owned") for line in lines)
    assert not any("<img" in line or "<!--" in line for line in lines)


def test_model_text_printed_to_a_terminal_or_ci_log_is_inert() -> None:
    text = "fine\x1b[2J\x1b]0;title\x07\r\n::error file=a.py::pwned\n  ::add-mask::x\u202e"
    out = terminal_safe(text)
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out and "\u202e" not in out
    assert "\\x1b[2J" in out
    lines = out.split("\n")
    assert not any(line.lstrip().startswith("::") for line in lines)
    assert lines[1] == "\\::error file=a.py::pwned"


@pytest.fixture
def trickler() -> Iterator[str]:
    """An HTTP endpoint that sends one header byte every 0.2 s and never finishes."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            threading.Thread(target=trickle, args=(conn,), daemon=True).start()

    def trickle(conn: socket.socket) -> None:
        with conn:
            header = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000
            for byte in header:
                if stop.is_set():
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.2)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(5)
    server.close()


@pytest.mark.slow
def test_a_judge_endpoint_trickling_headers_forever_hits_the_overall_deadline(
        trickler: str) -> None:
    judge = Judge("claude-opus-4-1", api_key="sk-test", base_url=trickler, timeout_s=1.0,
                  deadline_s=3.0, max_retries=1, backoff_base_s=0.01)
    result: list[object] = []
    started = time.monotonic()
    worker = threading.Thread(target=lambda: result.append(judge.grade(
        "prompt", "an answer", [RubricItem("must", "mentions x", 1)], "seed")), daemon=True)
    worker.start()
    worker.join(60)
    assert result, "the judge call never returned (the timeout is per read only)"
    elapsed = time.monotonic() - started
    graded = result[0]
    assert graded.error and "overall deadline" in graded.error  # type: ignore[attr-defined]
    assert elapsed < 20


@pytest.mark.slow
def test_a_batches_endpoint_trickling_forever_leaves_the_runs_ungraded_named(
        trickler: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_skilllift.judge import batch
    from pytest_skilllift.judge.protocol import build_judge_request

    monkeypatch.setattr(batch, "CONTROL_DEADLINE_S", 2.0)
    judge = batch.BatchJudge(tmp_path, "claude-opus-4-1", api_key="sk-test", base_url=trickler,
                             poll_s=0.0)
    items = (RubricItem("must", "mentions x", 1),)
    requests = [judge.request("r1", build_judge_request("Q?", "an answer", items, "r1"))]
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(judge.grade(requests)), daemon=True)
    worker.start()
    worker.join(120)
    assert got, "the Message Batches call never returned"
    result = got[0]["r1"]  # type: ignore[index]
    assert result.error and "overall deadline" in result.error
