"""A week whose labels run on more than one agent: the scorecard groups the labels by agent.

The week is the built-in demo's four-rep week (``tests/fixtures/demo-week-4reps``) with its
labels renamed so that alphabetical order interleaves the agents: ``sonnet-4-5`` stays on
Claude Code, ``gpt`` is requested as ``codex:gpt-5.5``. Ordered by name, ``gpt`` would come
first; grouped by agent, Claude Code's label comes first and every table that lists labels
names each one's agent. The same week with one agent keeps its tables as they were.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

from pytest_skilllift.report.summarize import Summary, summarize_week

DEMO = Path(__file__).resolve().parent / "fixtures" / "demo-week-4reps" / "20261201"
RENAME = {"sonnet": "sonnet-4-5", "haiku": "gpt"}
MODEL_ID = {"haiku": "codex:gpt-5.5"}


def _rewrite(path: Path, agents: bool) -> None:
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        fields, rows = list(reader.fieldnames or []), list(reader)
    for row in rows:
        old = row["model"]
        row["model"] = RENAME[old]
        if agents and "model_id" in row and old in MODEL_ID:
            row["model_id"] = MODEL_ID[old]
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def _week(tmp_path: Path, agents: bool) -> Summary:
    week = tmp_path / ("agents" if agents else "one-agent") / "20261201"
    shutil.copytree(DEMO, week)
    for name in ("manifest.csv", "scores.csv"):
        _rewrite(week / name, agents)
    return summarize_week(week, write=False, plots=False)


def _tables(markdown: str) -> list[list[list[str]]]:
    """Every markdown table: its rows (header first, the --- line left out) as cells."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= {"-"} for c in cells):
                current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


def test_labels_are_grouped_by_agent_and_each_table_names_the_agent(tmp_path: Path) -> None:
    s = _week(tmp_path, agents=True)
    assert s.week.models == ["sonnet-4-5", "gpt"]  # by name: gpt first
    assert s.data["model_order"] == ["sonnet-4-5", "gpt"]
    assert s.data["provenance"]["agents"] == {"claude-code": ["sonnet-4-5"], "codex": ["gpt"]}
    assert list(s.data["models"]) == ["sonnet-4-5", "gpt"]
    with_model = [t for t in _tables(s.markdown) if "model" in t[0]]
    assert len(with_model) >= 8  # lift, uncertainty, sign test, cells, pass rates, …
    for table in with_model:
        at = table[0].index("model")
        assert table[0][at + 1] == "agent", table[0]
        for row in table[1:]:
            assert row[at + 1] == {"sonnet-4-5": "claude-code", "gpt": "codex"}[row[at]], row
    lift = next(t for t in with_model if "must lift ± SE" in t[0])
    assert [r[:2] for r in lift[1:]] == [["sonnet-4-5", "claude-code"], ["gpt", "codex"]]


def test_a_one_agent_week_has_no_agent_column_and_keeps_its_order(tmp_path: Path) -> None:
    s = _week(tmp_path, agents=False)
    assert s.week.models == ["gpt", "sonnet-4-5"]  # conventional order: by name
    tables = _tables(s.markdown)
    assert tables and not [t for t in tables if "agent" in t[0]]
