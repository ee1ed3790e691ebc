"""What the task asks of /app/report.json (run inside the task's container, after the agent)."""

import json
from pathlib import Path

REPORT = Path("/app/report.json")


def load():
    return json.loads(REPORT.read_text())


def test_report_exists():
    assert REPORT.is_file(), "no /app/report.json"


def test_report_has_total():
    assert load()["total"] == 1670.35


def test_totals_per_region():
    assert load()["by_region"] == {"east": 250.0, "north": 140.0, "south": 1280.35}
