"""The session's concurrency limit (``run.concurrency``) and the rate-limit retries an agent's
output reports (``run.ratelimits``): unit tests, no CLI."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.run.concurrency import (
    CLAUDE_CODE_DEFAULT,
    MAX_PAUSE_S,
    ConcurrencyLimit,
    StreamWatch,
    default_cap,
    summary_line,
)
from pytest_skilllift.run.ratelimits import (
    RateLimits,
    Retry,
    count_run,
    stderr_retry,
    stdout_retry,
)

#: Claude Code 2.1's event for a 429 answered with ``retry-after: 3`` (captured from the
#: bundled CLI against the stand-in; the delay is the retry-after, plus jitter).
CLAUDE_429 = ('{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,'
              '"retry_delay_ms":3054,"error_status":429,"error":"rate_limit",'
              '"session_id":"49e2b4f5","uuid":"62891d00"}')
CLAUDE_529 = CLAUDE_429.replace("429", "529").replace("rate_limit", "overloaded")
CLAUDE_RESET = ('{"type":"system","subtype":"api_retry","attempt":1,"retry_delay_ms":500,'
                '"error_status":null,"error":"unknown"}')
CODEX_429 = ('{"type":"error","message":"Reconnecting... 1/5 (unexpected status 429 Too Many '
             'Requests: slow down)"}')
CODEX_401 = CODEX_429.replace("429 Too Many Requests", "401 Unauthorized")
GEMINI_429 = "Attempt 1 failed with status 429. Retrying with backoff... Error: quota"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rate_limit_retries_are_read_from_each_cli_and_other_retries_are_not() -> None:
    assert stdout_retry(CLAUDE_429) == Retry(429, 3054)
    assert stdout_retry(CLAUDE_529) == Retry(529, 3054)
    assert stdout_retry(CLAUDE_RESET) is None  # a dropped connection is not a rate limit
    assert stdout_retry(CODEX_429) == Retry(429, 0)
    assert stdout_retry(CODEX_401) is None
    assert stdout_retry('{"type":"assistant","message":{"content":"api_retry"}}') is None
    assert stdout_retry("not json api_retry") is None
    assert stderr_retry(GEMINI_429) == Retry(429, 0)
    assert stderr_retry("Attempt 1 failed with status 500. Retrying with backoff...") is None


def test_a_runs_count_and_wait_come_from_its_transcript_and_stderr(tmp_path: Path) -> None:
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    out.write_text("\n".join([CLAUDE_429, CLAUDE_RESET, CLAUDE_529, '{"type":"result"}']) + "\n")
    err.write_text(GEMINI_429 + "\n")
    assert count_run(out, err) == RateLimits(retries=3, wait_ms=2 * 3054)
    assert count_run(tmp_path / "missing.txt") == RateLimits(0, 0)


def test_limit_halves_once_per_burst_pauses_for_retry_after_and_grows_back_by_one(
        tmp_path: Path) -> None:
    clock = Clock()
    limit = ConcurrencyLimit(tmp_path, 4, clock=clock)
    slots = [limit.try_acquire(f"r{i}") for i in range(5)]
    assert all(slots[:4]) and slots[4] is None  # the cap
    limit.signal(2.0, run_id="r0")
    limit.signal(2.0, run_id="r1")  # the same burst (within the announced wait): one cut
    assert limit.summary()["limit"] == 2 and limit.summary()["cuts"] == 1
    for slot in slots[:3]:
        assert slot is not None
        limit.release(slot, throttled=True)
    assert limit.try_acquire("x") is None  # 1 in flight < 2, but retry-after is not over
    clock.now += 2.0
    second = limit.try_acquire("r5")
    assert second is not None
    assert limit.try_acquire("r6") is None  # 2 in flight: the limit
    clock.now += 5.0
    limit.signal(0.0)  # a later burst: halves again, to 1
    assert limit.summary()["limit"] == 1 and limit.summary()["min_limit"] == 1
    limit.signal(0.0, source="judge")  # same instant: the same burst
    assert limit.summary()["cuts"] == 2 and limit.summary()["signals"] == 4
    # runs in flight across a cut end clean but say nothing about the lower limit
    last = slots[3]
    assert last is not None
    limit.release(last, throttled=False)  # started before both cuts
    limit.release(second, throttled=False)  # started before the second cut
    assert limit.summary()["limit"] == 1 and limit.summary()["raises"] == 0
    # additive increase: after `limit` clean runs started under it, one more (up to the cap)
    clock.now += 1.0
    s = limit.try_acquire("r7")
    assert s is not None
    limit.release(s, throttled=False)  # 1 clean run at limit 1 → 2
    assert limit.summary()["limit"] == 2
    s = limit.try_acquire("r8")
    assert s is not None
    limit.release(s, throttled=False)
    assert limit.summary()["limit"] == 2  # 1 clean of 2 needed
    s = limit.try_acquire("r9")
    assert s is not None
    limit.release(s, throttled=False)
    assert limit.summary()["limit"] == 3 and limit.summary()["raises"] == 2
    events = [e["event"] for e in limit.events()]
    assert events.count("cut") == 2 and events.count("raise") == 2
    assert limit.summary()["max_inflight"] == 4


def test_a_huge_retry_after_is_clipped_and_counted(tmp_path: Path) -> None:
    clock = Clock()
    limit = ConcurrencyLimit(tmp_path, 2, clock=clock)
    limit.signal(3600.0)
    clock.now += MAX_PAUSE_S
    assert limit.try_acquire("r") is not None
    assert limit.summary()["pause_clipped"] == 1


def _hold(root: str, cap: int, queue: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    limit = ConcurrencyLimit(Path(root), cap)
    queue.put(limit.try_acquire("other-process") is not None)


def test_slots_are_shared_across_processes_and_a_dead_holders_slot_is_freed(
        tmp_path: Path) -> None:
    limit = ConcurrencyLimit(tmp_path, 2)
    assert limit.try_acquire("here") is not None
    queue: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()  # type: ignore[type-arg]
    proc = multiprocessing.get_context("fork").Process(target=_hold,
                                                        args=(str(tmp_path), 2, queue))
    proc.start()
    proc.join(10)
    assert queue.get(timeout=5) is True  # the other process took the second slot
    # that process has exited: its slot is not in flight any more
    assert limit.try_acquire("again") is not None
    assert limit.try_acquire("full") is None


def test_the_watch_signals_each_retry_as_the_cli_writes_it(tmp_path: Path) -> None:
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    seen: list[Retry] = []
    watch = StreamWatch(out, err, seen.append)
    watch.start()
    with out.open("w") as fh:
        fh.write(CLAUDE_429 + "\n" + CLAUDE_429[:20])  # a line cut mid-write waits
        fh.flush()
        watch.poll()
        assert seen == [Retry(429, 3054)]
        fh.write(CLAUDE_429[20:] + "\n")
    watch.stop()
    assert seen == [Retry(429, 3054)] * 2 and watch.seen == 2


def test_a_failing_signal_never_fails_the_run(tmp_path: Path) -> None:
    out = tmp_path / "stdout.txt"
    out.write_text(CLAUDE_429 + "\n")

    def boom(_: Retry) -> None:
        raise OSError("disk full")

    watch = StreamWatch(out, tmp_path / "stderr.txt", boom)
    watch.poll()
    assert watch.seen == 1


def test_default_cap_keeps_scoring_md_advice_for_claude_code() -> None:
    assert default_cap(None, claude_code=True, workers=8) == CLAUDE_CODE_DEFAULT == 3
    assert default_cap(None, claude_code=False, workers=8) == 8
    assert default_cap(6, claude_code=True, workers=8) == 6
    with pytest.raises(ValueError, match="at least 1"):
        ConcurrencyLimit(Path("."), 0)


def test_summary_is_written_only_when_a_run_took_a_slot(tmp_path: Path) -> None:
    limit = ConcurrencyLimit(tmp_path / "c", 3)
    limit.write_summary(tmp_path / "concurrency.json")
    assert not (tmp_path / "concurrency.json").exists()
    assert limit.try_acquire("r") is not None
    limit.write_summary(tmp_path / "concurrency.json")
    data = json.loads((tmp_path / "concurrency.json").read_text())
    assert data["cap"] == 3 and data["started"] == 1 and data["events"][0]["run_id"] == "r"
    assert summary_line(tmp_path / "concurrency.json") == ""  # no rate limit: no line
    limit.signal(1.0)
    limit.write_summary(tmp_path / "concurrency.json")
    assert summary_line(tmp_path / "concurrency.json").startswith(
        "rate limits: 1 retry (HTTP 429/529) reported; the concurrency limit was cut 1× from "
        "3 to as low as 1 and ended at 1; at most 1 run(s) in flight")
    assert summary_line(tmp_path / "missing.json") == ""


@pytest.mark.slow  # the anthropic SDK's import: seconds on a loaded machine
def test_the_judges_429s_feed_the_limit_and_its_other_retries_do_not(tmp_path: Path) -> None:
    from pytest_skilllift.judge.client import RATE_LIMIT_LISTENERS
    from pytest_skilllift.testing import Faults, StandIn
    from pytest_skilllift.testing.judge_script import keyword_judge
    from tests.test_judge_client import ANSWER, ITEMS, KEY, fast_judge

    limit = ConcurrencyLimit(tmp_path, 4)
    waits: list[float] = []

    def listener(wait_s: float) -> None:
        waits.append(wait_s)
        limit.signal(wait_s, source="judge")

    RATE_LIMIT_LISTENERS.append(listener)
    try:
        faults = Faults(first_n=2, kinds=("429", "500"), retry_after=0.05, only="judge")
        with StandIn(judge=keyword_judge, faults=faults, api_key=KEY) as api:
            result = fast_judge(api).grade("q", ANSWER, ITEMS, seed="r1")
    finally:
        RATE_LIMIT_LISTENERS.remove(listener)
    assert result.error is None
    assert len(waits) == 1 and waits[0] >= 0.05  # the 429 (with its retry-after), not the 500
    summary = limit.summary()
    assert summary["limit"] == 2 and summary["signals"] == 1
    assert summary["events"][0]["source"] == "judge"


@pytest.mark.slow  # a server, threads and its latency: over a second on a loaded machine
def test_the_stand_in_answers_429_with_retry_after_above_a_concurrency() -> None:
    import threading
    import urllib.error
    import urllib.request

    from pytest_skilllift.testing import Faults, Reply, StandIn

    body = json.dumps({"model": "m", "max_tokens": 10, "tools": [{"name": "t"}],
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    got: list[tuple[int, str | None]] = []

    def call(url: str) -> None:
        req = urllib.request.Request(f"{url}/v1/messages", body,
                                     {"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                got.append((resp.status, None))
        except urllib.error.HTTPError as err:
            got.append((err.code, err.headers.get("retry-after")))

    # The first two are held until the third was answered (not for a latency of 0.3 s: on a
    # loaded machine the third could arrive after they were done, and get a 200).
    release = threading.Event()

    def held(_: Any) -> Reply:
        release.wait(30)
        return Reply.text("ok")

    faults = Faults(max_concurrent=2, retry_after=1.5)
    with StandIn(agent=held, faults=faults) as api:
        first = [threading.Thread(target=call, args=(api.base_url,)) for _ in range(2)]
        for t in first:
            t.start()
        deadline = time.monotonic() + 30
        while api.agent_inflight < 2 and time.monotonic() < deadline:
            time.sleep(0.01)  # both are being answered (held by the stand-in's agent)
        try:
            call(api.base_url)  # a third at once: above the concurrency of 2
        finally:
            release.set()
        def settled() -> int:
            # A request leaves the stand-in's count just after its answer is sent, so the
            # client can see the answer first: wait (bounded) for the count to come down.
            deadline = time.monotonic() + 5
            while api.agent_inflight and time.monotonic() < deadline:
                time.sleep(0.01)
            return api.agent_inflight

        for t in first:
            t.join()
        assert settled() == 0
        call(api.base_url)  # the first two answered: room again
        assert api.peak_agent_inflight == 3 and settled() == 0
        assert got[0] == (429, "1.5") and sorted(got[1:3]) == [(200, None)] * 2
        assert got[3] == (200, None)
        assert [r.fault for r in api.requests].count("429") == 1
    with pytest.raises(ValueError, match="max_concurrent"):
        Faults(max_concurrent=0)
