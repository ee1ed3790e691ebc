"""The plot worker: ``python -m pytest_skilllift.report.plot_worker`` (see ``plot_drawing``).

Imports matplotlib first — what it exists to take off the summarizer's path — then reads one
job from stdin (JSON: the plots' paths, the scorecard's forest keys, the history rows) and
draws it.  It writes ``{plot name: error}`` for the plots it could not draw as JSON to stdout.
An empty stdin means "no plots this time".
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson

#: How much lower the worker's priority is than the summarizer's (``os.nice`` increment).
NICENESS = 10


def main() -> int:
    """Run one job from stdin; exit 0 when the job was read (plot errors are in the output)."""
    # The summarizer parses the CSVs on every core meanwhile: the pictures wait for the
    # numbers, not the other way round.
    if hasattr(os, "nice"):
        os.nice(NICENESS)
    from pytest_skilllift.report import plots  # noqa: F401  (the import, ahead of the job)
    from pytest_skilllift.report.plot_drawing import PlotJob, draw
    from pytest_skilllift.week.history import HistoryRow

    raw = sys.stdin.buffer.read()
    if not raw:
        return 0
    job = orjson.loads(raw)
    errors = draw(
        PlotJob(forest=Path(job["forest"]) if job["forest"] else None,
                trend=Path(job["trend"]) if job["trend"] else None),
        job["data"], [HistoryRow(**row) for row in job["history"]], job["models"])
    sys.stdout.buffer.write(orjson.dumps(errors))
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    # The summarizer waits for this process to end; tearing down matplotlib's objects and
    # the interpreter would only make it wait longer.
    os._exit(code)
