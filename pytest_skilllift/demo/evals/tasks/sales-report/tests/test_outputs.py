"""What the task asks of /app/report.json (run inside the task's container, after the agent)."""

import json
from pathlib import Path
from typing import Any

REPORT = Path("/app/report.json")


def load() -> Any:
    return json.loads(REPORT.read_text())


def test_report_exists() -> None:
    assert REPORT.is_file(), "no /app/report.json"


def test_report_has_total() -> None:
    assert load()["total"] == 1670.35


def test_totals_per_region() -> None:
    assert load()["by_region"] == {"east": 250.0, "north": 140.0, "south": 1280.35}
