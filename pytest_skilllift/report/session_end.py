"""The scorecard a pytest session ends with (controller): the week's CSVs rebuilt from its
run files, the custom checks' outcomes merged, the week summarized under the session's
banner; then the sections of ``pytest_skilllift_scorecard_sections`` appended and the
session's coverage judged. The pytest glue (``plugin/session.py``) calls these; nothing here
imports pytest.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_skilllift.week.checks import merge_checks
from pytest_skilllift.week.files import RUN_FILE
from pytest_skilllift.week.ledger import Ledger

if TYPE_CHECKING:
    from pytest_skilllift.report.extra_sections import Section
    from pytest_skilllift.report.summarize import Summary

DEMO_BANNER = ("DEMO — scripted models: every answer and grade below comes from the package's "
               "scripted stand-in of the models' APIs, not from Claude, GPT or Gemini. Numbers "
               "show the pipeline, not a skill's real value.")

DRY_RUN_BANNER = ("DRY RUN — simulated: your prompts were answered and graded by the package's "
                  "scripted stand-in of the models' APIs, not by Claude, GPT or Gemini, and no "
                  "dollar was paid. It checks your prompt files and the pipeline; no number "
                  "below is a measurement of your skills.")


def banner(*, demo: bool, dry_run: bool) -> str | None:
    """The line above a scripted week's scorecard (a dry run is a demo on the user's files)."""
    return DRY_RUN_BANNER if dry_run else DEMO_BANNER if demo else None


def write_card(week: Ledger, checks: Iterable[dict[str, str]], *, has_triggers: bool,
               banner: str | None, note: str | None) -> Summary | None:
    """Rebuild the week's CSVs, merge the custom checks' outcomes, write the scorecard; None
    (nothing written) when the week holds neither a run nor a trigger run. ``note``: one
    plain line under the banner (the labels left out), never in the plots."""
    from pytest_skilllift.report.summarize import summarize_week

    if not any(week.root.glob(f"*/{RUN_FILE}")) and not has_triggers:
        return None
    week.rebuild_csvs()
    merge_checks(week.root, checks)
    return summarize_week(week.root, banner=banner, note=note)


def add_sections(week_dir: Path, summary: Summary, sections: list[Section]) -> None:
    """Sections from ``pytest_skilllift_scorecard_sections``, appended to the summary and
    its scorecard.md / scorecard.json rewritten (nothing when there are none)."""
    from pytest_skilllift.report.extra_sections import append_sections

    if sections:
        summary.data, summary.markdown = append_sections(
            week_dir, summary.data, summary.markdown, sections)


def coverage(graded: int, n_runs: int, min_coverage: float) -> tuple[bool, str]:
    """Whether a session graded enough of its runs, and the coverage line that says so
    (no line for a session that made no run)."""
    if not n_runs:
        return True, ""
    share = graded / n_runs
    enough = share >= min_coverage
    return enough, (
        f"graded {graded} of {n_runs} runs this session ({share:.0%}; minimum "
        f"{min_coverage:.0%})"
        + ("" if enough else " — below the minimum: the week is incomplete, exit status 1"))
