"""Calling the plugin's own hooks so that a failing implementation is named, not guessed.

Each implementation is called on its own, in pluggy's order (tryfirst/trylast respected),
with only the arguments it names — what pluggy does — so one that raises does not stop the
others, and the error says which function in which file raised. When someone wraps one of
these hooks (``wrapper=True``), the hook is called through pluggy as usual and the raising
implementation is found in the traceback instead.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pluggy

__all__ = ["HookError", "HookOutcome", "call_hook", "impl_name"]


class HookError(Exception):
    """An implementation of a hook the run cannot do without raised (the message names it)."""


def impl_name(function: Callable[..., object], rootdir: Path | None = None) -> str:
    """``conftest.py:12 pytest_skilllift_run_graded`` (path relative to rootdir when inside)."""
    code = getattr(function, "__code__", None)
    if code is None:
        return repr(function)
    path = Path(code.co_filename)
    if rootdir is not None:
        with contextlib.suppress(ValueError):
            path = path.resolve().relative_to(rootdir.resolve())
    return f"{path.as_posix()}:{code.co_firstlineno} {function.__qualname__}"


@dataclass
class HookOutcome:
    """What the implementations returned (``(name, value)``, non-None only) and the errors,
    each naming its implementation."""

    results: list[tuple[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def first(self) -> Any:  # an implementation's own value: the caller checks its shape
        """The first value returned (None when none was)."""
        return self.results[0][1] if self.results else None


def _error(hook: str, name: str, exc: BaseException) -> str:
    return f"{hook} in {name} raised {type(exc).__name__}: {exc}"


def call_hook(hook_caller: pluggy.HookCaller, rootdir: Path | None, *, firstresult: bool = False,
              **kwargs: Any) -> HookOutcome:
    """Call every implementation of ``hook_caller`` (a pluggy HookCaller) with ``kwargs``."""
    hook = hook_caller.name
    impls = list(reversed(hook_caller.get_hookimpls()))  # pluggy calls the last one first
    out = HookOutcome()
    if any(getattr(i, "hookwrapper", False) or getattr(i, "wrapper", False) for i in impls):
        try:
            value = hook_caller(**kwargs)
        except Exception as exc:
            out.errors.append(_error(hook, _culprit(impls, exc, rootdir), exc))
            return out
        values = [value] if firstresult else list(value or [])
        out.results = [(hook, v) for v in values if v is not None]
        return out
    for impl in impls:
        name = impl_name(impl.function, rootdir)
        try:
            value = impl.function(*[kwargs[a] for a in impl.argnames])
        except Exception as exc:
            out.errors.append(_error(hook, name, exc))
            continue
        if value is not None:
            out.results.append((name, value))
            if firstresult:
                break
    return out


def _culprit(impls: list[Any], exc: BaseException, rootdir: Path | None) -> str:
    codes = {impl.function.__code__: impl for impl in impls
             if hasattr(impl.function, "__code__")}
    # The innermost implementation frame: a wrapper around the raiser is not the raiser.
    found = None
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        if frame.f_code in codes:
            found = codes[frame.f_code]
    return impl_name(found.function, rootdir) if found else "an implementation"
