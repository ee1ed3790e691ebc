"""Drawing the scorecard's plots beside the rest of the summary.

matplotlib costs a one-shot ``skilllift summarize`` ≈ 0.35 s to import and ≈ 0.3 s to draw a
large week's forest plot: Python work that a thread cannot overlap with the summarizer's own
(the GIL).  So when matplotlib is not loaded yet, the plots are drawn by a second Python
process (``python -m pytest_skilllift.report.plot_worker``), started before the CSVs are
read: it imports matplotlib on the other core while this process computes the week, then
draws while this one renders scorecard.md and scorecard.json.  When matplotlib is loaded
already (a pytest session imports it while its runs go) the plots are drawn in this process.

Either way the caller gets, per requested plot, ``None`` (drawn) or the error that stopped it:
a picture never costs the numbers.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import orjson

from pytest_skilllift.week.history import HistoryRow

if TYPE_CHECKING:
    from pytest_skilllift.report.card import Scorecard

#: The plots module (matplotlib: ≈ 0.35 s to import).
PLOTS_MODULE = "pytest_skilllift.report.plots"
#: The scorecard keys the forest plot reads (the rest of the card stays in this process).
FOREST_KEYS = ("model_order", "models", "prompts", "week", "banner")
#: Drawing two figures takes about a second; a worker silent for this long is stuck.
WORKER_TIMEOUT_S = 120.0
#: Environment variables never handed to the worker: it needs no credentials.
_SECRET_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


@dataclass(frozen=True)
class PlotJob:
    """What to draw, and where: a path per plot, None for a plot this week does not get."""

    forest: Path | None
    trend: Path | None

    def requested(self) -> dict[str, Path]:
        """Plot name → path, for the plots to draw."""
        return {name: path for name, path in (("forest", self.forest), ("trend", self.trend))
                if path is not None}


class Drawer(Protocol):
    """Draws one job's plots; ``finish`` returns plot name → error for the plots not drawn."""

    def submit(self, job: PlotJob, data: Scorecard, history: Sequence[HistoryRow],
               models: Sequence[str]) -> None:
        """Start drawing ``job``'s plots of the week's card and history."""
        ...

    def finish(self) -> dict[str, str]:
        """Wait for the plots; plot name → error for each one not drawn."""
        ...

    def cancel(self) -> None:
        """No plots this time: release whatever was started to draw them."""
        ...


def draw(job: PlotJob, data: Scorecard, history: Sequence[HistoryRow],
         models: Sequence[str]) -> dict[str, str]:
    """Draw ``job``'s plots here; plot name → error for each one that failed."""
    from pytest_skilllift.report import plots

    errors: dict[str, str] = {}
    for name, path in job.requested().items():
        try:
            if name == "forest":
                plots.forest_plot(data, path)
            else:
                plots.trend_plot(history, models, path)
        except Exception as exc:  # a picture must never cost the numbers
            errors[name] = f"{type(exc).__name__}: {exc}"
    return errors


class InProcessDrawer:
    """Draws on ``submit``, in this process (matplotlib is loaded already)."""

    def __init__(self) -> None:
        self._errors: dict[str, str] = {}

    def submit(self, job: PlotJob, data: Scorecard, history: Sequence[HistoryRow],
               models: Sequence[str]) -> None:
        """Draw the job's plots now, in this process."""
        self._errors = draw(job, data, history, models)

    def finish(self) -> dict[str, str]:
        """The plots that failed, with their errors."""
        return self._errors

    def cancel(self) -> None:
        """Nothing was started."""


def worker_env() -> dict[str, str]:
    """The worker's environment: this one without credentials, this package first on the path
    (it must import this very package, also from a source checkout that is not installed)."""
    env = {k: v for k, v in os.environ.items() if k not in _SECRET_VARS}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (root, env.get("PYTHONPATH"))))
    return env


class ProcessDrawer:
    """Draws in ``python -m pytest_skilllift.report.plot_worker``, started on construction."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "pytest_skilllift.report.plot_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=worker_env())
        self._job: PlotJob | None = None
        self._sender: threading.Thread | None = None
        self._errors: dict[str, str] = {}

    def submit(self, job: PlotJob, data: Scorecard, history: Sequence[HistoryRow],
               models: Sequence[str]) -> None:
        """Send the job to the drawing process (it draws while the caller goes on)."""
        self._job = job
        try:
            payload = orjson.dumps(
                {"forest": str(job.forest) if job.forest else None,
                 "trend": str(job.trend) if job.trend else None,
                 "data": {k: data[k] for k in FOREST_KEYS if k in data},  # type: ignore[literal-required]
                 "history": [asdict(r) for r in history], "models": list(models)},
                option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
        except TypeError as exc:  # not JSON: told per plot by finish(), the worker told to stop
            self._errors = dict.fromkeys(job.requested(), f"cannot hand the plots over: {exc}")
            payload = b""
        # The worker reads once matplotlib is imported; a large week's payload would fill
        # the pipe and block this process until then, so a thread sends it.
        self._sender = threading.Thread(target=self._send, args=(payload,), daemon=True)
        self._sender.start()

    def _send(self, payload: bytes) -> None:
        stdin = self._proc.stdin
        assert stdin is not None
        # A worker that died makes these raise: finish() reports its exit and stderr.
        with contextlib.suppress(OSError):
            stdin.write(payload)
        with contextlib.suppress(OSError):
            stdin.close()

    def finish(self) -> dict[str, str]:
        """Wait for the drawing process; the plots not drawn, with their errors."""
        assert self._job is not None, "finish() before submit()"
        requested = self._job.requested()
        if self._errors:
            self.cancel()
            return self._errors
        try:
            self._stop_sending()
            out, err = self._proc.communicate(timeout=WORKER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.communicate()
            return dict.fromkeys(requested, f"the plot worker did not finish within "
                                 f"{WORKER_TIMEOUT_S:.0f} s")
        try:
            errors = orjson.loads(out) if self._proc.returncode == 0 else None
        except orjson.JSONDecodeError:
            errors = None
        if not isinstance(errors, dict):
            tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
            return dict.fromkeys(requested, f"the plot worker exited {self._proc.returncode}"
                                 f" ({tail[0]})")
        return {str(k): str(v) for k, v in errors.items() if k in requested}

    def _stop_sending(self) -> None:
        """Wait for the job to be handed over (the sender closes stdin); raises
        TimeoutExpired when the worker does not take it."""
        if self._sender is not None:
            self._sender.join(WORKER_TIMEOUT_S)
            if self._sender.is_alive():
                raise subprocess.TimeoutExpired(self._proc.args, WORKER_TIMEOUT_S)
        elif self._proc.stdin is not None:
            self._proc.stdin.close()
        # Closed either way; communicate() would flush it again.
        self._proc.stdin = None

    def cancel(self) -> None:
        """No plots this time: the worker reads an empty job and exits."""
        try:
            self._stop_sending()
            self._proc.communicate(timeout=WORKER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.communicate()


def start_drawer(*, process: bool | None = None) -> Drawer:
    """A drawer for this summary: in a worker process unless matplotlib is loaded already
    (``process`` forces either way)."""
    if process is None:
        process = PLOTS_MODULE not in sys.modules
    if process:
        try:
            return ProcessDrawer()
        except OSError:  # no way to start Python again (an embedded interpreter): draw here
            pass
    return InProcessDrawer()
