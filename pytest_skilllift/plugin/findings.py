"""Findings are not broken tests: their own pytest test statuses.

A must item the answer missed, an avoid item it violated, a with-skill run that never reached
its skill, a trigger query that missed (or fired when it should not): each is what the week
measured, not a failure of the test run. Such an item reports with its own category in
pytest's final line (``48 missing, 14 violated`` — yellow, like any category pytest does not
know), its own letter and word (``M`` / ``MISSING`` under ``-v``), a one-line reason per item
in the "skill-lift findings" summary (``-rA`` or ``-v``) instead of a traceback, and it does
not count as failed: ``-x`` does not stop on it, and it never makes the exit status 1.

A real error — a crashed fixture, a custom check whose assertion fails, a hook that raised —
stays a failure. Only the public hooks are used: ``pytest_runtest_makereport`` (a wrapper
that turns the report of a finding into a passed report carrying its category in
``user_properties``, which travel through xdist) and ``pytest_report_teststatus``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

#: ``user_properties`` keys: the finding's category and its one-line reason.
FINDING_PROP = "skilllift_finding"
REASON_PROP = "skilllift_finding_reason"

#: category -> (letter in the progress dots, word under -v). The order is the summary's.
#: One word each, so that tools parsing pytest's final line (``pytester``'s
#: ``parseoutcomes``, CI log scrapers) read ``4 uninvoked`` as one count.
CATEGORIES: dict[str, tuple[str, str]] = {
    "missing": ("M", "MISSING"),  # a must item the answer missed
    "violated": ("V", "VIOLATED"),  # an avoid item the answer violated
    "uninvoked": ("U", "UNINVOKED"),  # a with-skill run that never reached its skill
    "untriggered": ("T", "UNTRIGGERED"),  # a trigger query that should have fired, did not
    "misfired": ("T", "MISFIRED"),  # a trigger query that should not have fired, did
    "unmet": ("N", "UNMET"),  # a task's verifier test that did not pass (or its reward)
}


class Finding(Exception):
    """Raised by an item's ``runtest`` for a measured finding; ``category`` is one of
    :data:`CATEGORIES`. The item's ``repr_failure`` gives the text (its first line is the
    one-line reason)."""

    @property
    def category(self) -> str:  # pragma: no cover - every subclass says
        """One of :data:`CATEGORIES`."""
        raise NotImplementedError


def as_finding(item: pytest.Item, call: pytest.CallInfo[None],
               report: pytest.TestReport) -> pytest.TestReport:
    """The call report of an item that raised a :class:`Finding`, made a finding's report."""
    excinfo = call.excinfo
    if call.when != "call" or excinfo is None or not isinstance(excinfo.value, Finding):
        return report
    text = str(item.repr_failure(excinfo))
    report.outcome = "passed"
    report.longrepr = None
    # A new list: the report shares the item's, and the teardown report would repeat these.
    report.user_properties = [*report.user_properties,
                              (FINDING_PROP, excinfo.value.category), (REASON_PROP, text)]
    return report


def category_of(report: pytest.TestReport | pytest.CollectReport) -> str | None:
    """The finding category of a call report, else None."""
    if getattr(report, "when", None) != "call":
        return None
    for key, value in getattr(report, "user_properties", ()):
        if key == FINDING_PROP and value in CATEGORIES:
            return str(value)
    return None


def teststatus(report: pytest.TestReport | pytest.CollectReport
               ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    """``pytest_report_teststatus``'s answer for a finding: its category, letter and word."""
    category = category_of(report)
    if category is None:
        return None
    letter, word = CATEGORIES[category]
    return category, letter, (word, {"yellow": True})


def reason_lines(stats: dict[str, list[Any]]) -> list[str]:
    """One line per finding, category by category: ``MISSING <id> - <reason>``."""
    lines = []
    for category, (_, word) in CATEGORIES.items():
        for report in stats.get(category, ()):
            lines.append(f"{word} {report.nodeid} - {_reason(report)}")
    return lines


def count_line(stats: dict[str, list[Any]]) -> str:
    """``48 missing, 14 violated`` (empty when the week found nothing)."""
    parts = [f"{len(stats[c])} {c}" for c in CATEGORIES if stats.get(c)]
    return ", ".join(parts)


#: Where a category's findings are read beyond ``-rA`` (the scorecard has every item).
WHERE: dict[str, str] = {
    "uninvoked": "runs whose skill was not VERIFIED: -k invoked",
    "untriggered": "trigger misses and false triggers: the scorecard's Triggering section",
}
WHERE["misfired"] = WHERE["untriggered"]


def summary_line(stats: dict[str, list[Any]]) -> str:
    """The session's one line about its findings (empty when there are none): their counts,
    that they are not failed tests, where each kind is listed, and the exit status rule."""
    counted = count_line(stats)
    if not counted:
        return ""
    where = dict.fromkeys(WHERE[c] for c in CATEGORIES if c in WHERE and stats.get(c))
    return (f"findings: {counted} — what the week measured, not failed tests (scorecard and "
            f"-rA list them{''.join(f'; {w}' for w in where)}); the exit status is 0 when "
            "coverage is enough and no hard gate failed")


def _reason(report: Any) -> str:
    props: Iterable[tuple[str, object]] = report.user_properties
    text = next((str(v) for k, v in props if k == REASON_PROP), "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # The reason's head, then its evidence or query when the item gave one (not the path).
    extra = [ln for ln in lines[1:] if not ln.startswith("transcript:")]
    return " · ".join(lines[:1] + extra)
