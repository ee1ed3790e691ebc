"""One limit on the agent runs in flight, shared by every process of a session, that backs
off when the API rate-limits and creeps back up when it does not.

qdrant/skills SCORING.md: "Keep concurrency at 2–3 for Claude Code; at 4+ a rate-limited run
can change results". ``-n`` decides how many workers there are; this decides how many of
them may have an agent CLI running at once:

- every run takes a **slot** before its CLI starts and gives it back when the CLI ends; a
  slot is a small file in the session's directory (the same one the interrupt registry uses,
  ``runners.inflight``), so all xdist workers of the session count the same slots — the way
  the spend cap reads one week directory (``week.spend``);
- the **limit** starts at ``--skill-lift-max-concurrency`` (the cap) and is kept in
  ``limit.json`` beside the slots, changed under a file lock;
- while a run is in flight its transcript and stderr are tailed (:class:`StreamWatch`): each
  rate-limit retry its CLI reports (``run.ratelimits``: a 429 or 529 ``api_retry``, with the
  delay the CLI took from ``retry-after``) is a **signal**. A signal **halves** the limit
  (multiplicative decrease, never below 1) — once per burst: signals within the announced
  wait (at least :data:`MIN_CUT_GAP_S`) of the last cut are the same burst — and no new run
  starts before the announced wait is over (``retry-after`` honoured);
- each run that started after the last cut and ends without a signal counts as clean; after
  ``limit`` clean runs in a row the limit grows by one (additive increase), up to the cap. A
  run already in flight when the limit was cut says nothing about the lower limit (it may
  simply have been between requests during the burst), so it never raises it: the limit
  grows only from runs started under it.

Runs already in flight are never stopped: in flight drops as they end and no new one starts
above the limit. The judge's 429s are handled by its client (``judge.client``, which honours
``retry-after`` itself) and feed the same limit through :meth:`ConcurrencyLimit.signal`.

Every change is appended to ``events.jsonl``; :meth:`ConcurrencyLimit.summary` is what the
session writes into the week (``concurrency.json``). No pytest here.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilllift.run.ratelimits import Retry, stderr_retry, stdout_retry
from pytest_skilllift.week.files import atomic_write_json, file_lock

#: qdrant/skills SCORING.md's advice for Claude Code ("keep concurrency at 2–3"): the cap
#: when ``--skill-lift-max-concurrency`` is not given and a Claude Code label runs.
CLAUDE_CODE_DEFAULT = 3
#: The shortest gap between two cuts of the limit (seconds): one burst of 429s — every run
#: in flight hit at once — halves it once, not once per run.
MIN_CUT_GAP_S = 1.0
#: How often a waiting run looks for a free slot, and a watch reads the run's output.
POLL_S = 0.1
#: The longest start pause a ``retry-after`` may impose (a misbehaving proxy's "3600" must
#: not stall a week for an hour; named in the summary when it was clipped).
MAX_PAUSE_S = 120.0

LIMIT_FILE = "limit.json"
LOCK_FILE = "limit.lock"
EVENTS_FILE = "events.jsonl"
SLOTS_DIR = "slots"


@dataclass(frozen=True)
class Slot:
    """A run's place among the runs in flight (its file)."""

    path: Path
    run_id: str
    #: When it took the slot (the limit's clock): runs started before the last cut do not
    #: count as clean evidence for the lower limit.
    started: float = 0.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ConcurrencyLimit:
    """The session's limit on agent runs in flight (file-backed under ``root``)."""

    def __init__(self, root: Path, cap: int, *, clock: Callable[[], float] = time.time,
                 check: Callable[[], None] | None = None) -> None:
        if cap < 1:
            raise ValueError(f"a concurrency cap is at least 1 run, not {cap}")
        self.root = Path(root)
        self.cap = cap
        self.clock = clock
        #: Called while a run waits for a slot; raises to give up (the session is stopping).
        self.check = check

    # -- state ------------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        try:
            data = json.loads((self.root / LIMIT_FILE).read_text())
            if isinstance(data, dict):
                return data
        except (OSError, ValueError):
            pass
        return {"cap": self.cap, "limit": self.cap, "clean": 0, "not_before": 0.0,
                "cut_until": 0.0, "cuts": 0, "raises": 0, "signals": 0,
                "min_limit": self.cap, "max_inflight": 0, "pause_clipped": 0,
                "started": 0}

    def _save(self, state: dict[str, Any]) -> None:
        atomic_write_json(self.root / LIMIT_FILE, state)

    def _log(self, event: str, state: dict[str, Any], inflight: int, **extra: Any) -> None:
        line = {"t": round(self.clock(), 3), "event": event, "limit": state["limit"],
                "inflight": inflight, **extra}
        with open(self.root / EVENTS_FILE, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")

    def _slots(self) -> list[Path]:
        """The live slots (a slot whose process died is removed: its run is not in flight)."""
        folder = self.root / SLOTS_DIR
        live = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            try:
                pid = int(json.loads(path.read_text())["pid"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if _alive(pid):
                live.append(path)
            else:
                with contextlib.suppress(OSError):
                    path.unlink()
        return live

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        with file_lock(self.root / LOCK_FILE):
            state = self._state()
            yield state
            self._save(state)

    # -- a run's side -------------------------------------------------------------------------
    def try_acquire(self, run_id: str) -> Slot | None:
        """A slot when a run may start now (below the limit, no pause), else None."""
        with self._locked() as state:
            inflight = len(self._slots())
            if self.clock() < float(state["not_before"]) or inflight >= int(state["limit"]):
                return None
            folder = self.root / SLOTS_DIR
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{uuid.uuid4().hex}.json"
            path.write_text(json.dumps({"pid": os.getpid(), "run_id": run_id}))
            state["max_inflight"] = max(int(state["max_inflight"]), inflight + 1)
            state["started"] = int(state["started"]) + 1
            self._log("start", state, inflight + 1, run_id=run_id)
            return Slot(path, run_id, self.clock())

    def acquire(self, run_id: str, *, check: Callable[[], None] | None = None) -> Slot:
        """Wait for a slot; ``check`` is called while waiting (it raises to give up, e.g. the
        session is stopping)."""
        while True:
            if check is not None:
                check()
            slot = self.try_acquire(run_id)
            if slot is not None:
                return slot
            time.sleep(POLL_S)

    def release(self, slot: Slot, *, throttled: bool) -> None:
        """The run's CLI ended; ``throttled``: it reported rate-limit retries."""
        with self._locked() as state:
            with contextlib.suppress(OSError):
                slot.path.unlink()
            inflight = len(self._slots())
            if throttled:
                state["clean"] = 0
            elif slot.started < float(state.get("last_cut", 0.0)):
                pass  # in flight across a cut: no evidence either way
            else:
                state["clean"] = int(state["clean"]) + 1
                if state["clean"] >= state["limit"] and state["limit"] < self.cap:
                    state["limit"] = int(state["limit"]) + 1  # additive increase
                    state["clean"] = 0
                    state["raises"] = int(state["raises"]) + 1
                    self._log("raise", state, inflight)
            self._log("end", state, inflight, run_id=slot.run_id, throttled=throttled)

    def signal(self, wait_s: float, *, source: str = "agent", run_id: str = "") -> None:
        """A rate-limit retry was reported (``wait_s``: the wait it announced)."""
        now = self.clock()
        pause = min(max(wait_s, 0.0), MAX_PAUSE_S)
        with self._locked() as state:
            state["signals"] = int(state["signals"]) + 1
            if wait_s > MAX_PAUSE_S:
                state["pause_clipped"] = int(state["pause_clipped"]) + 1
            inflight = len(self._slots())
            if now >= float(state["cut_until"]):
                state["limit"] = max(1, int(state["limit"]) // 2)  # multiplicative decrease
                state["min_limit"] = min(int(state["min_limit"]), state["limit"])
                state["cuts"] = int(state["cuts"]) + 1
                state["clean"] = 0
                state["last_cut"] = now
                state["cut_until"] = now + max(pause, MIN_CUT_GAP_S)
                self._log("cut", state, inflight, source=source, run_id=run_id,
                          wait_s=round(wait_s, 3))
            state["not_before"] = max(float(state["not_before"]), now + pause)
            self._log("signal", state, inflight, source=source, run_id=run_id,
                      wait_s=round(wait_s, 3))

    @contextlib.contextmanager
    def running(self, run_id: str, stdout: Path, stderr: Path,
                agent: str | None = None) -> Iterator[StreamWatch]:
        """Hold a slot for one run while its CLI runs, watching its output for signals
        (read by ``agent``'s readers; None: every agent's)."""
        slot = self.acquire(run_id, check=self.check)
        watch = StreamWatch(stdout, stderr, lambda r: self.signal(
            r.wait_ms / 1000, source="agent", run_id=run_id), agent)
        watch.start()
        try:
            yield watch
        finally:
            watch.stop()
            self.release(slot, throttled=watch.seen > 0)

    # -- the session's side ---------------------------------------------------------------------
    def events(self) -> list[dict[str, Any]]:
        """Every event so far, in order."""
        try:
            text = (self.root / EVENTS_FILE).read_text(encoding="utf-8")
        except OSError:
            return []
        out = []
        for line in text.splitlines():
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
        return out

    def summary(self) -> dict[str, Any]:
        """What the week keeps of the session's limit (``concurrency.json``)."""
        state = self._state()
        keys = ("cap", "limit", "min_limit", "max_inflight", "cuts", "raises", "signals",
                "pause_clipped", "started")
        return {**{k: state[k] for k in keys}, "events": self.events()}

    def write_summary(self, path: Path) -> None:
        """Write :meth:`summary` to ``path`` (only when some run took a slot)."""
        if (self.root / LIMIT_FILE).exists():
            atomic_write_json(path, self.summary())


class StreamWatch:
    """Tails a run's ``stdout.txt`` and ``stderr.txt`` while its CLI runs (the runners write
    them line by line), calling ``on_retry`` for each rate-limit retry reported."""

    def __init__(self, stdout: Path, stderr: Path, on_retry: Callable[[Retry], None],
                 agent: str | None = None) -> None:
        self.files = ((Path(stdout), stdout_retry), (Path(stderr), stderr_retry))
        #: Whose readers read the lines (None: every agent's).
        self.agent = agent
        self.on_retry = on_retry
        self.seen = 0
        self._offsets = [0, 0]
        self._rest = [b"", b""]
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start watching, in a daemon thread."""
        self._thread = threading.Thread(target=self._loop, name="skilllift-ratewatch",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop tailing, after one last read (what the CLI wrote just before it ended)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.poll()

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            self.poll()

    def poll(self) -> None:
        """Read what was written since the last poll; complete lines only."""
        for i, (path, parse) in enumerate(self.files):
            try:
                with open(path, "rb") as fh:
                    fh.seek(self._offsets[i])
                    chunk = fh.read()
            except OSError:
                continue
            if not chunk:
                continue
            self._offsets[i] += len(chunk)
            *lines, self._rest[i] = (self._rest[i] + chunk).split(b"\n")
            for line in lines:
                hit = parse(line, self.agent)
                if hit is not None:
                    self.seen += 1
                    with contextlib.suppress(Exception):  # a signal must never fail a run
                        self.on_retry(hit)


def summary_line(path: Path) -> str:
    """One line on what rate limits did to a session's limit (``concurrency.json``); empty
    when no rate-limit retry was reported."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        signals, cuts = int(data["signals"]), int(data["cuts"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    if not signals:
        return ""
    clipped = data.get("pause_clipped") or 0
    return (f"rate limits: {signals} retr{'y' if signals == 1 else 'ies'} (HTTP 429/529) "
            f"reported; the concurrency limit was cut {cuts}× from {data['cap']} to as low as "
            f"{data['min_limit']} and ended at {data['limit']}; at most "
            f"{data['max_inflight']} run(s) in flight"
            + (f"; {clipped} retry-after(s) over {MAX_PAUSE_S:.0f}s were clipped" if clipped
               else "") + " (per run: the manifest's rate_limit_retries; Run health)")


def default_cap(max_concurrency: int | None, *, claude_code: bool, workers: int) -> int:
    """The cap in force: ``--skill-lift-max-concurrency`` when given; else SCORING.md's 3
    when a Claude Code label runs; else one per worker (nothing to keep below)."""
    if max_concurrency is not None:
        return max_concurrency
    return CLAUDE_CODE_DEFAULT if claude_code else max(1, workers)
