"""Parity with the qdrant pipeline on its real week ``fixtures/data/qdrant-skills/weekly/20260808``.

The expected numbers are parsed from that week's own ``scorecard.md`` (not typed in here), and
compared at the precision the reference prints.

Known, documented differences (docs/methodology-notes.md): judge $ (the week ships without
its ``judge_cost.txt`` files, so it is reported as not recorded), the "sourced from the
published site" count (every with-skill run that fetched the site, not only web_fetch
activations: 11 of 104 here, the reference prints 0), and additive sections/columns.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from pytest_skilllift.report.summarize import Summary, summarize_week
from pytest_skilllift.week.history import read_history, upsert_history

WEEKLY = Path(__file__).resolve().parent / "fixtures" / "data" / "qdrant-skills" / "weekly"
REF_WEEK = WEEKLY / "20260808"


# ----------------------------------------------------------------------------- parsing


def copy_week(dst_weekly: Path) -> Path:
    """Copy the reference week and make the copy writable (copytree keeps the shared
    folder's read-only modes, which a non-root user could not write into)."""
    dst = dst_weekly / "20260808"
    shutil.copytree(REF_WEEK, dst)
    for p in (dst_weekly, dst, *dst.iterdir()):
        p.chmod(p.stat().st_mode | 0o200)
    return dst


def sections(md: str) -> dict[str, str]:
    """'## Title' → body."""
    out: dict[str, str] = {}
    for block in re.split(r"^## ", md, flags=re.M)[1:]:
        title, _, body = block.partition("\n")
        out[title.strip()] = body
    return out


def table(body: str) -> list[dict[str, str]]:
    """The first markdown table of a section body, as dicts keyed by header."""
    lines: list[str] = []
    for ln in body.splitlines():
        if ln.startswith("|"):
            lines.append(ln)
        elif lines:  # the first contiguous block only
            break
    split = [[c.strip() for c in re.split(r"(?<!\\)\|", ln)[1:-1]] for ln in lines]
    head, rows = split[0], split[2:]
    return [dict(zip(head, r, strict=True)) for r in rows]


def bullets(body: str) -> list[str]:
    return [ln[2:] for ln in body.splitlines() if ln.startswith("- ")]


@pytest.fixture(scope="module")
def ref() -> dict[str, str]:
    return sections((REF_WEEK / "scorecard.md").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Summary:
    # A copy: the shared folder is read-only, and the history file next to it must not grow.
    week = copy_week(tmp_path_factory.mktemp("parity") / "weekly")
    return summarize_week(week, plots=False)


@pytest.fixture(scope="module")
def our_md(ours: Summary) -> dict[str, str]:
    return sections(ours.markdown)


# ----------------------------------------------------------------------------- tests


def test_no_input_problems(ours: Summary) -> None:
    assert ours.problems == []


def test_lift_table(ref: dict[str, str], our_md: dict[str, str], ours: Summary) -> None:
    title = "Lift per model (with-skill − no-skill)"
    expected, got = table(ref[title]), table(our_md[title])
    # Every cell: no→with, lift ± SE, CI flag, Δbonus, Δavoid, Δcost, Δturns. Deliberate
    # change (issue: Δcost and Δturns get a paired ± SE and the CI flag like the lift): the
    # two Δ cells carry "± SE (≠ 0: yes|no)" after the reference's value, which is unchanged.
    paired = ("Δcost ($)", "Δturns")
    assert [{k: (v.split(" ± ")[0] if k in paired else v) for k, v in r.items()}
            for r in got] == expected
    for r in got:
        for k in paired:
            assert re.fullmatch(r"[+-][0-9.]+ ± [0-9.]+ \(≠ 0: (yes|no)\)", r[k]), r[k]
    for row in expected:  # and the JSON carries the same numbers unrounded
        m = ours.data["models"][row["model"]]
        lift, se = row["must lift ± SE"].split(" ± ")
        assert m["must_lift"] == pytest.approx(float(lift), abs=5e-4)
        assert m["must_lift_se"] == pytest.approx(float(se), abs=5e-4)
        assert m["ci_excludes_zero"] is (row["95% CI != 0?"] == "yes")
        assert m["bonus_delta"] == pytest.approx(float(row["Δbonus"]), abs=5e-4)
        assert m["avoid_delta"] == pytest.approx(float(row["Δavoid"]), abs=5e-3)
        assert m["cost_delta"] == pytest.approx(float(row["Δcost ($)"]), abs=5e-5)
        assert m["turns_delta"] == pytest.approx(float(row["Δturns"]), abs=5e-2)
        assert m["n_prompts"] == 26


def test_week_over_week_placeholder(ref: dict[str, str], our_md: dict[str, str]) -> None:
    title = "Week-over-week lift delta"
    assert "**Will be computed after four runs.**" in our_md[title]
    assert our_md[title].strip() == ref[title].strip()


def test_per_cell_table(ref: dict[str, str], our_md: dict[str, str], ours: Summary) -> None:
    assert table(our_md["Per-cell metrics"]) == table(ref["Per-cell metrics"])
    assert len(ours.data["cells"]) == 4 and {c["n"] for c in ours.data["cells"]} == {26}


def test_per_prompt_table(ref: dict[str, str], our_md: dict[str, str]) -> None:
    title = "Per-prompt (must_coverage; with-skill lift)"
    expected = table(ref[title])
    got = table(our_md[title])
    assert len(got) == len(expected) == 52
    keys = ["prompt", "model", "must no→with", "must lift", "comp no→with"]
    assert [{k: r[k] for k in keys} for r in got] == expected


def test_activation_section(ref: dict[str, str], our_md: dict[str, str], ours: Summary) -> None:
    title = "Activation / trigger misses"
    assert table(our_md[title]) == table(ref[title])
    ref_bullets, got = bullets(ref[title]), bullets(our_md[title])
    # The first two bullets match; the third is a deliberate, documented difference
    # (docs/methodology-notes.md): the reference counts only activation=web_fetch runs as
    # "sourced from the published site", we count every with-skill run that fetched it.
    assert got[:2] == ref_bullets[:2] and len(ref_bullets) == 3
    assert "(activation=web_fetch, not the local SKILL.md): **0**" in ref_bullets[2]
    assert got[2].startswith("lift sourced from the published site") and "**11**" in got[2]
    assert "0 of them reached the skill through the site alone" in got[2]
    assert ours.data["activation_summary"]["site_fetch_runs"] == 11
    never = [a["prompt"] for a in ours.data["activation"] if a["never_triggered"]]
    assert never == ["qdrant-monitoring"]
    a = next(a for a in ours.data["activation"] if a["prompt"] == "qdrant-hybrid-search")
    assert a["counts"] == {"skill_tool": 3, "file_read": 0, "web_fetch": 0, "none": 1}
    assert a["activated_runs"] == 3 and a["with_skill_runs"] == 4 and a["reached_leaf"] == 1
    assert a["skill_family"]


def test_baseline_self_served(ref: dict[str, str], our_md: dict[str, str]) -> None:
    title = "Lift caveat — baseline self-served the skill"
    assert bullets(our_md[title]) == bullets(ref[title])


def _rendered(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Cells as a markdown viewer shows them: our scorecard escapes model text (a backslash
    before markdown punctuation renders as the character itself), the reference does not."""
    return [{k: re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", v) for k, v in row.items()}
            for row in rows]


def test_avoid_violations(ref: dict[str, str], our_md: dict[str, str]) -> None:
    title = "`avoid` violations (most damaging failures)"
    assert _rendered(table(our_md[title])) == _rendered(table(ref[title]))


def test_coverage(ref: dict[str, str], our_md: dict[str, str], ours: Summary) -> None:
    assert bullets(our_md["Coverage"]) == bullets(ref["Coverage"])
    assert ours.data["coverage"]["graded_runs"] == ours.data["coverage"]["total_runs"] == 208


def test_cost_and_time(ref: dict[str, str], our_md: dict[str, str]) -> None:
    got, expected = bullets(our_md["Cost & time"]), bullets(ref["Cost & time"])
    # generation $ per model, runs timed, compute-time stats, wall-clock and speedup match;
    # judge $ (and so the total) cannot: the reference week ships without judge_cost.txt.
    assert got[0] == expected[0] == "generation: $11.15  (haiku $1.47, sonnet $9.68)"
    assert expected[1] == "judge (Opus): $17.68"
    assert got[1] == "judge (Opus): not recorded (0 of 208 runs have a judge_cost.txt)"
    assert got[3:] == expected[3:]


def test_run_health(ref: dict[str, str], our_md: dict[str, str]) -> None:
    expected = bullets(ref["Run health"])
    assert bullets(our_md["Run health"])[: len(expected)] == expected


def test_provenance(ref: dict[str, str], our_md: dict[str, str]) -> None:
    # The reference's provenance, line for line; ours adds the judge's lines after it (this
    # week's directory records no judge, and nobody has checked its judge against people).
    expected = ref["Provenance"].rstrip("\n")
    assert our_md["Provenance"].startswith(expected + "\n")
    assert bullets(our_md["Provenance"][len(expected):]) == [
        "judge: not recorded (no run has a grades.json)",
        "judge trust: **unmeasured** — no human labels yet (`skilllift label` then "
        "`skilllift judge-check`)"]


def test_history_row_matches_reference_and_upsert_is_idempotent(tmp_path: Path) -> None:
    weekly = tmp_path / "weekly"
    week = copy_week(weekly)
    hist = weekly / "scorecard-history.csv"
    summarize_week(week, plots=False)
    first = hist.read_bytes()
    # byte-for-byte the reference pipeline's history after the same week
    assert first == (WEEKLY / "scorecard-history.csv").read_bytes()
    summarize_week(week, plots=False)
    assert hist.read_bytes() == first
    # upserting into the reference file itself changes nothing either
    shutil.copyfile(WEEKLY / "scorecard-history.csv", tmp_path / "h.csv")
    rows = read_history(tmp_path / "h.csv")
    upsert_history(tmp_path / "h.csv", rows)
    assert (tmp_path / "h.csv").read_bytes() == first
