"""A value built once, ahead of first use in a background thread: the judge client (which
imports the anthropic SDK), the summarizer's imports.  No pytest, no project imports."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Warmed(Generic[T]):
    """A value built once: ahead of first use in a background thread (``warm``), or on first
    use, whichever comes first. Building the judge client imports the anthropic SDK, seconds
    of CPU that should overlap the first CLI run rather than follow it."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._value: T | None = None
        self._lock = threading.Lock()

    def warm(self, name: str) -> None:
        """Start building the value in a daemon thread named ``name``."""
        threading.Thread(target=self._warm, name=name, daemon=True).start()

    def _warm(self) -> None:
        # A failure here (e.g. no credentials) is raised again, properly, by the first get.
        with contextlib.suppress(Exception):
            self.get()

    def get(self) -> T:
        """The value, built now unless warming built it (a warming under way is waited for)."""
        with self._lock:
            if self._value is None:
                self._value = self._factory()
            return self._value
