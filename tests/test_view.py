"""``skilllift view`` without a browser: the pages' data, their escaping, labels.csv, the CLI.

The real week (qdrant/skills week 20260808: 208 runs, 1,512 graded items, no run directories)
is summarized into a temporary copy and viewed; the browser tests are in
``test_view_browser.py``.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.cli import main as cli
from pytest_skilllift.judge.agreement import check_week
from pytest_skilllift.view.data import page_name
from pytest_skilllift.view.labelling import LABEL_COLUMNS, LabellingError, LabelSession
from pytest_skilllift.view.site import CSP_STATIC, build_site, page_html

HOSTILE = '</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


def data_block(page: Path) -> dict[str, Any]:
    text = page.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="skilllift-data">(.*?)</script>', text,
                  re.S)
    assert m, page
    data = json.loads(m.group(1))
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def real_week(tmp_path_factory: pytest.TempPathFactory, ) -> Path:
    from pytest_skilllift.report.summarize import summarize_week

    src = Path(__file__).resolve().parent / "fixtures/data/qdrant-skills/weekly/20260808"
    week = tmp_path_factory.mktemp("real") / "20260808"
    shutil.copytree(src, week)
    summarize_week(week, plots=False)
    return week


def test_embedded_json_cannot_close_its_block() -> None:
    page = page_html("prompt", HOSTILE, {"answer": HOSTILE, "q": "a & b <!-- c"}, "../")
    # One closing tag per real script element: the data block's and viewer.js's.
    assert page.count("</script>") == 2
    assert "<img" not in page and "<!--" not in page
    assert "&lt;/script&gt;" in page  # the title is escaped as HTML
    block = page.split('id="skilllift-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(block) == {"answer": HOSTILE, "q": "a & b <!-- c"}
    assert f'content="{CSP_STATIC}"' in page.replace("&#x27;", "'")
    assert "script-src 'self'" in CSP_STATIC and "unsafe-inline" not in CSP_STATIC
    tags = re.findall(r"<[a-zA-Z][^>]*>", page)
    assert not [t for t in tags if re.search(r"\son[a-z]+=", t)]  # no inline event handler


def test_page_names_stay_in_the_prompts_folder_and_never_collide() -> None:
    names = ["qdrant-edge", "../../etc/passwd", "a/b", "a_b", "<script>", "ÿ" * 200]
    files = [page_name(n) for n in names]
    assert files[0] == "qdrant-edge.html"
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+\.html", f) for f in files), files
    assert len(set(files)) == len(files)


def test_the_real_week_is_viewed_whole(real_week: Path) -> None:
    site = build_site(real_week)
    assert site.index == real_week / "view" / "index.html"
    assert site.pages == 26
    card = json.loads((real_week / "scorecard.json").read_text())
    index = data_block(site.index)
    assert index["models"] == card["models"]  # copied, never recomputed
    assert index["prompts"] == card["prompts"]
    assert len(index["pages"]) == 26
    cells = runs = 0
    for page in index["pages"].values():
        data = data_block(site.index.parent / page)
        for block in data["models"]:
            runs += len(block["columns"])
            cells += sum(c is not None for item in block["items"] for c in item["cells"])
            # no run directories in this week: the page says so instead of failing
            assert all(c["trajectory_note"] == "no run directory in the week"
                       for c in block["columns"] if "trajectory_note" in c)
    assert cells == 1512 and runs == 208
    assert (site.index.parent / "assets" / "viewer.js").is_file()
    # the scorecard's one verdict sentence, copied for the overview's top
    assert card["verdict"].startswith("Verdict, one vote per prompt") and \
        index["verdict"] == card["verdict"]


def test_contested_and_rejected_quotes_reach_the_cell(real_week: Path, tmp_path: Path) -> None:
    week = tmp_path / "w"
    shutil.copytree(real_week, week, ignore=shutil.ignore_patterns("view"))
    rows = list(csv.DictReader((week / "scores.csv").open()))
    header = [*list(rows[0]), "evidence_ok", "claimed_verdict", "claimed_evidence"]
    rows[0].update(contested="1")
    rows[1].update(verdict="missing", credit="0.0", evidence_quote="", evidence_ok="0",
                   claimed_verdict="met", claimed_evidence="a quote the answer lacks")
    with (week / "scores.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, header)
        w.writeheader()
        w.writerows(rows)
    site = build_site(week)
    data = data_block(site.index.parent / "prompts" / page_name(rows[0]["prompt"]))
    cells = [c for b in data["models"] for i in b["items"] for c in i["cells"]
             if isinstance(c, dict)]
    assert sum(1 for c in cells if c.get("c")) == 1
    rejected = [c for c in cells if c.get("rejected")]
    assert rejected == [{"v": "missing", "cv": "met", "cq": "a quote the answer lacks",
                         "rejected": True}]


def test_no_scorecard_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["view", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'scorecard.json'}: not found" in err and "skilllift summarize" in err
    assert cli.main(["view", str(tmp_path / "nope")]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert cli.main(["view", str(tmp_path), "--port", "8000"]) == 2
    assert "--port needs --serve" in capsys.readouterr().err


def test_cli_writes_the_site_where_asked(real_week: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["view", str(real_week), "--out", str(tmp_path / "site")]) == 0
    assert f"wrote {tmp_path / 'site' / 'index.html'} (26 prompt pages)" in capsys.readouterr().out


def test_labels_are_written_as_judge_check_reads_them(real_week: Path, tmp_path: Path) -> None:
    week = tmp_path / "w"
    shutil.copytree(real_week, week, ignore=shutil.ignore_patterns("view"))
    session = LabelSession(week, sample=6, seed="1")
    shown = session.blind(session.items_of())
    assert len(shown) == 6
    assert all(set(s) == {"id", "item_type", "item_text", "choices", "prompt", "prompt_text",
                          "answer", "label"} for s in shown)  # no model, arm or verdict
    first, second = shown[0], shown[1]
    session.save(first["id"], first["choices"][1])
    agreement = session.save(second["id"], second["choices"][0])
    session.save(first["id"], first["choices"][0])  # a changed mind replaces the row
    with (week / "labels.csv").open() as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames or ()) == LABEL_COLUMNS
        rows = list(reader)
    assert len(rows) == 2 and rows[0]["verdict"] == first["choices"][0]
    report = check_week(week, week / "labels.csv")
    assert report["overall"]["n"] == 2 and not report["unmatched"]
    assert agreement is not None and agreement["n"] == 2
    so_far = session.agreement()
    assert so_far is not None and so_far["kappa"] == report["overall"]["kappa"]
    with pytest.raises(LabellingError, match="is not"):
        session.save(first["id"], "violated" if first["item_type"] != "avoid" else "met")
    with pytest.raises(LabellingError, match="no item 999"):
        session.save(999, "met")
    assert session.blind([session.items_of()[0]])[0]["label"] == first["choices"][0]


def test_a_large_weeks_overview_keeps_the_rows_that_moved_most(
        real_week: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_skilllift.view import site as site_mod

    monkeypatch.setattr(site_mod, "OVERVIEW_PROMPT_ROWS", 10)
    site = build_site(real_week, tmp_path / "site")
    card = json.loads((real_week / "scorecard.json").read_text())
    index = data_block(site.index)
    everything = data_block(site.index.parent / "prompts.html")
    assert everything["prompts"] == card["prompts"] and len(everything["pages"]) == 26
    assert index["all_prompts"] == {"href": "prompts.html", "rows": len(card["prompts"]),
                                    "pages": 26}
    lifts = sorted((abs(r["must_lift"]) for r in card["prompts"]
                    if r["must_lift"] is not None), reverse=True)
    assert sorted((abs(r["must_lift"]) for r in index["prompts"]), reverse=True) == lifts[:10]
    assert set(index["pages"]) == {r["prompt"] for r in index["prompts"]}


def test_trajectory_lists_every_call_in_order(tmp_path: Path) -> None:
    from pytest_skilllift.view.runs import trajectory

    src = Path(__file__).resolve().parent / "fixtures/data/transcripts"
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(src / "cli-2.0.25-bypass-tools.jsonl", run / "stdout.txt")
    steps, note = trajectory(run)
    calls = [b for line in (run / "stdout.txt").read_text().splitlines()
             for ev in [json.loads(line)] if ev.get("type") == "assistant"
             for b in ev["message"]["content"] if b.get("type") == "tool_use"]
    assert [s["tool"] for s in steps] == [b["name"] for b in calls] and note == ""
    reads = [s["target"] for s in steps if s["tool"] == "Read"]
    assert reads == [b["input"]["file_path"] for b in calls if b["name"] == "Read"]
    assert any(s["subagent"] for s in steps)  # the Task tool's own calls are marked


def test_a_denied_call_is_marked(tmp_path: Path) -> None:
    from pytest_skilllift.view.runs import trajectory

    events = [
        {"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "git-bisect"}},
            {"type": "tool_use", "id": "t2", "name": "WebFetch",
             "input": {"url": "https://example.org/x", "prompt": "p"}}]}},
        {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "body"},
            {"type": "tool_result", "tool_use_id": "t2", "is_error": True, "content": "no"}]}},
        {"type": "result", "subtype": "success", "result": "answer",
         "permission_denials": [{"tool_name": "WebFetch", "tool_use_id": "t2"}]},
    ]
    (tmp_path / "stdout.txt").write_text("\n".join(map(json.dumps, events)) + "\nnot json\n")
    steps, note = trajectory(tmp_path)
    assert [(s["tool"], s["target"], s["denied"]) for s in steps] == [
        ("Skill", "git-bisect", False), ("WebFetch", "https://example.org/x", True)]
    assert note == "1 line(s) of stdout.txt were not JSON"
    assert [s["result"] for s in steps] == ["body", "no"]


def test_a_tool_result_is_shown_capped_with_its_length(tmp_path: Path) -> None:
    from pytest_skilllift.view.runs import MAX_RESULT, trajectory

    long = "line of a big file\n" * 200
    events = [
        {"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}},
            {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}}]}},
        {"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": long}]}},
        {"type": "result", "subtype": "success", "result": "answer"},
    ]
    (tmp_path / "stdout.txt").write_text("\n".join(map(json.dumps, events)) + "\n")
    steps, _ = trajectory(tmp_path)
    assert steps[0]["result"] == long[:MAX_RESULT] and steps[0]["result_chars"] == len(long)
    assert "result" not in steps[1]  # no result arrived: none shown, none invented


def test_labelling_a_run_the_person_picks(real_week: Path) -> None:
    session = LabelSession(real_week, sample=3)
    run_id = session.items[0].run_id
    picked = session.items_of(run_id)
    assert picked and all(i.run_id == run_id for i in picked)
    assert len(picked) == sum(1 for i in session.items if i.run_id == run_id and i.graded)


@pytest.mark.slow
def test_serve_from_the_command_line(real_week: Path, tmp_path: Path) -> None:
    import subprocess
    import sys
    import urllib.request

    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_skilllift.cli", "view", str(real_week), "--out",
         str(tmp_path / "site"), "--serve", "--port", "0", "--sample", "4"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("wrote ")
        line = proc.stdout.readline()
        url = re.search(r"at (http://127\.0\.0\.1:\d+/)", line)
        assert url, line + proc.stderr.read() if proc.stderr else line
        with urllib.request.urlopen(url.group(1) + "index.html", timeout=10) as resp:
            assert "script-src 'self'" in resp.headers["Content-Security-Policy"]
            assert b'data-page="overview"' in resp.read()
        with urllib.request.urlopen(url.group(1) + "api/sample", timeout=10) as resp:
            items = json.loads(resp.read())["items"]
        assert len(items) == 4 and not any("model" in i or "condition" in i for i in items)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_plots_are_copied_into_the_site_and_nothing_else(real_week: Path, tmp_path: Path) -> None:
    week = tmp_path / "w"
    shutil.copytree(real_week, week, ignore=shutil.ignore_patterns("view"))
    (week / "forest.png").write_bytes(b"\x89PNG fake")
    (tmp_path / "secret.png").write_bytes(b"secret")
    card = json.loads((week / "scorecard.json").read_text())
    card["plots"] = {"forest": "forest.png", "trend": "../secret.png", "other": "scores.csv"}
    (week / "scorecard.json").write_text(json.dumps(card))
    site = build_site(week)
    assert data_block(site.index)["plot_files"] == {"forest": "assets/plots/forest.png"}
    assert sorted(p.name for p in (site.index.parent / "assets" / "plots").iterdir()) == [
        "forest.png"]


def test_merge_does_not_take_the_view_for_a_run(tmp_path: Path) -> None:
    from pytest_skilllift.week.merge import _run_dirs

    (tmp_path / "view" / "prompts").mkdir(parents=True)
    (tmp_path / "view" / "index.html").write_text("x")
    (tmp_path / "a-run").mkdir()
    (tmp_path / "a-run" / "run.json").write_text("{}")
    incomplete: list[tuple[Path, str]] = []
    assert _run_dirs(tmp_path, incomplete) == ["a-run"] and incomplete == []


@pytest.fixture(scope="module")
def two_weeks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The real week twice, as two weeks of one history (``weekly/20260801``, then
    ``weekly/20260808``), each summarized in turn as a weekly session does."""
    from pytest_skilllift.report.summarize import summarize_week

    src = Path(__file__).resolve().parent / "fixtures/data/qdrant-skills/weekly/20260808"
    weekly = tmp_path_factory.mktemp("history") / "weekly"
    weeks = weekly / "20260801", weekly / "20260808"
    for week in weeks:
        shutil.copytree(src, week)
        summarize_week(week, plots=False)
    return weeks


def test_history_links_the_compare_page_of_the_previous_week(
        two_weeks: tuple[Path, Path], tmp_path: Path) -> None:
    before, week = two_weeks
    card = json.loads((week / "scorecard.json").read_text())
    assert [r["run_key"] for r in card["history"]["pooled_runs"]] == ["20260801"]
    site = build_site(week, tmp_path / "site")
    index = data_block(site.index)
    assert index["history_compare"] == {"week": "20260801", "href": "compare.html", "note": ""}
    assert site.history_compare.startswith("compare.html: week 20260801 → week 20260808")
    compare = data_block(site.index.parent / "compare.html")
    # before → this week, as skilllift compare BEFORE THIS reads them
    assert (compare["a_label"], compare["b_label"]) == ("20260801", "20260808")
    assert compare["b"] == str(week) and compare["a"] == str(before)
    assert {r["change"] for r in compare["prompts"]} == {"unchanged"}  # the same runs
    assert len(compare["pages_a"]) == len(compare["pages_b"]) == 26
    for side, prefix in (("pages_a", "b/prompts/"), ("pages_b", "prompts/")):
        for href in compare[side].values():  # relative to compare.html: work from file://
            assert href.startswith(prefix) and (site.index.parent / href).is_file(), href
    earlier = data_block(site.index.parent / "b" / "index.html")
    assert "history_compare" not in earlier  # one compare page, no chain of weeks


def test_a_previous_week_not_on_disk_is_said_in_words(
        two_weeks: tuple[Path, Path], tmp_path: Path) -> None:
    weekly = tmp_path / "weekly"
    week = weekly / "20260808"
    shutil.copytree(two_weeks[1], week, ignore=shutil.ignore_patterns("view"))
    out = tmp_path / "site"
    site = build_site(week, out)
    link = data_block(site.index)["history_compare"]
    assert link["week"] == "20260801" and link["href"] is None
    assert "the previous comparable week 20260801" in link["note"]
    assert "not on disk beside this week (no ../20260801)" in link["note"]
    assert site.history_compare == link["note"]
    assert not (out / "compare.html").exists()
    # beside it, but never summarized: no scorecard.json to show
    (weekly / "20260801").mkdir()
    link = data_block(build_site(week, tmp_path / "site2").index)["history_compare"]
    assert "../20260801 has no scorecard.json" in link["note"] and link["href"] is None


def test_history_names_no_path_and_no_unlike_week(
        two_weeks: tuple[Path, Path], tmp_path: Path) -> None:
    weekly = tmp_path / "weekly"
    week = weekly / "20260808"
    shutil.copytree(two_weeks[1], week, ignore=shutil.ignore_patterns("view"))
    (tmp_path / "outside").mkdir()
    card_file = week / "scorecard.json"
    card = json.loads(card_file.read_text())
    card["history"]["pooled_runs"] = [{"run_key": "../outside", "reason": "hostile"}]
    card_file.write_text(json.dumps(card))
    link = data_block(build_site(week, tmp_path / "a").index)["history_compare"]
    assert link["href"] is None and "'../outside', which is not a week directory" in link["note"]
    card["history"]["pooled_runs"] = []
    card["history"]["not_pooled_runs"] = [{"run_key": "20260725", "reason": "prompt changed"}]
    card_file.write_text(json.dumps(card))
    link = data_block(build_site(week, tmp_path / "b").index)["history_compare"]
    assert link == {"week": "20260725", "href": None, "note": (
        "No compare link: ../scorecard-history.csv names no earlier week measured like this "
        "one: 20260725 (prompt changed).")}
    card["history"] = {}
    card_file.write_text(json.dumps(card))
    assert data_block(build_site(week, tmp_path / "c").index)["history_compare"] is None
