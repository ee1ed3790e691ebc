"""The session's one line about its findings (``plugin.findings.summary_line``)."""

from __future__ import annotations

from typing import Any

from pytest_skilllift.plugin.findings import summary_line


def stats(**counts: int) -> dict[str, list[Any]]:
    return {category: [object()] * n for category, n in counts.items()}


def test_no_findings_no_line() -> None:
    assert summary_line({}) == ""
    assert summary_line(stats(passed=3, missing=0)) == ""


def test_rubric_findings_name_the_scorecard_and_minus_ra_only() -> None:
    line = summary_line(stats(passed=9, missing=4, violated=1))
    assert line == ("findings: 4 missing, 1 violated — what the week measured, not failed tests "
                    "(scorecard and -rA list them); the exit status is 0 when coverage is "
                    "enough and no hard gate failed")


def test_each_kind_says_once_where_it_is_listed() -> None:
    line = summary_line(stats(missing=2, uninvoked=1, untriggered=1, misfired=2))
    assert line.startswith("findings: 2 missing, 1 uninvoked, 1 untriggered, 2 misfired — ")
    assert "; runs whose skill was not VERIFIED: -k invoked" in line
    # Misses and false triggers are read in the same section: named once.
    assert line.count("the scorecard's Triggering section") == 1
    assert line.index("-k invoked") < line.index("Triggering section")
