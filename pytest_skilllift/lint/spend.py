"""What each model layer of a depth run cost, the ``--max-spend`` cap, and the resume store.

Costs come from the API's own ``usage``: the judge's replies are priced with
:func:`pytest_skilllift.judge.client.estimate_cost`, the CLI's runs by the ``total_cost_usd``
and ``usage`` of their result event. Work that is already on disk (the store) is reused and
never paid twice; work skipped because the cap was reached is counted and named.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.week.files import atomic_write_json, file_lock


@dataclass
class LayerCost:
    """Tokens and dollars one layer spent in this run (reused results cost nothing)."""

    calls: int = 0
    reused: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    #: calls or runs not made because ``--max-spend`` was reached.
    not_run_spend_cap: int = 0
    #: runs not started because the last ones all failed with the same outage (the circuit
    #: breaker); a rerun starts them.
    not_run_outage: int = 0
    notes: list[str] = field(default_factory=list)

    def add_usage(self, usage: Any, usd: float) -> None:
        """Count one paid call with its ``usage`` (SDK object or dict) and price."""
        self.calls += 1
        self.usd += usd
        self.input_tokens += _field(usage, "input_tokens") + _field(
            usage, "cache_creation_input_tokens") + _field(usage, "cache_read_input_tokens")
        self.output_tokens += _field(usage, "output_tokens")

    def to_json(self) -> dict[str, Any]:
        """The ``cost`` object of a layer in the JSON report."""
        return {
            "calls": self.calls,
            "reused": self.reused,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "usd": round(self.usd, 6),
            "not_run_spend_cap": self.not_run_spend_cap,
            "not_run_outage": self.not_run_outage,
        }


def _field(usage: Any, name: str) -> int:
    if usage is None:
        return 0
    value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


class Budget:
    """``--max-spend``: one dollar cap shared by every paid call of a depth run.

    A call's price is only known after it returns, so the cap is checked before each call:
    once the spend reaches the cap no further call starts (the last one may overshoot it by
    its own price; the report says so).
    """

    def __init__(self, cap_usd: float | None) -> None:
        if cap_usd is not None and cap_usd < 0:
            raise ValueError(f"--max-spend must be >= 0, not {cap_usd}")
        self.cap = cap_usd
        self.spent = 0.0

    def exhausted(self) -> bool:
        """True when no further paid call may start."""
        return self.cap is not None and self.spent >= self.cap

    def remaining(self) -> float | None:
        """Dollars left under the cap (None: no cap)."""
        return None if self.cap is None else max(0.0, self.cap - self.spent)

    def charge(self, usd: float) -> None:
        """Record a paid call."""
        self.spent += max(0.0, usd)


def tree_hash(path: Path) -> str:
    """A short content hash of every file under ``path`` (names and bytes, sorted).

    Keys the store: results made for an older version of the skill are never reused.
    """
    digest = hashlib.sha256()
    base = Path(path)
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in (".git", "__pycache__"))
        files.extend(Path(dirpath) / f for f in filenames)
    for f in sorted(files):
        try:
            data = f.read_bytes()
        except OSError:
            data = b"<unreadable>"
        digest.update(f.relative_to(base).as_posix().encode("utf-8", "surrogateescape"))
        digest.update(b"\0")
        digest.update(data)
    return digest.hexdigest()[:16]


def slug(text: str) -> str:
    """``text`` as one safe part of a :class:`Store` key: every run of other characters
    than letters, digits and dots becomes one dash (``claude-opus-4-7``, ``v1.2``)."""
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


class Store:
    """JSON results of a depth run under ``root`` (``--out``), for resuming without paying
    twice. Keys are relative paths; writes are atomic so an interrupted run leaves either
    the old or the new result, never half a file."""

    def __init__(self, root: Path | None) -> None:
        self.root = None if root is None else Path(root)

    def path(self, key: str) -> Path | None:
        """Where ``key`` lives (None when the run keeps nothing)."""
        return None if self.root is None else self.root / key

    def get(self, key: str) -> Any | None:
        """The stored value, or None (absent, unreadable, or no store)."""
        p = self.path(key)
        if p is None:
            return None
        try:
            return json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """Exclusive lock across processes (xdist workers, concurrent commands): the first
        holder does the paid work and stores it; the next finds it stored."""
        if self.root is None:
            yield
            return
        with file_lock(self.root / "locks" / f"{name}.lock"):
            yield

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` (no-op without a store)."""
        p = self.path(key)
        if p is not None:
            atomic_write_json(p, value)
