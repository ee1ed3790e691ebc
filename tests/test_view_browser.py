"""``skilllift view`` in a real browser: Debian's Chromium driven by Playwright.

One demo week is made per module by a real ``pytest --skill-lift-demo`` session (the bundled
Claude Code CLI against the package's scripted Messages API, one rep, the demo's two Claude
Code labels these tests were written for: twelve runs), which also
writes the viewer and prints its path. The browser is the system's ``/usr/bin/chromium``
(``.ci/run`` installs it with apt; Playwright never downloads one). Select these tests with
``-m browser``.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.cli import main as cli
from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.view.data import page_name
from pytest_skilllift.view.site import build_site

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
HOSTILE = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
           '<a href="javascript:window.__pwned=3">x</a>')

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed "
                                     "(pip install -e '.[dev]')")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.cli,
    pytest.mark.skipif(not CHROMIUM.is_file(), reason="no /usr/bin/chromium (apt-get install "
                       "chromium; .ci/run does)"),
    pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing"),
]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A demo week made by ``pytest --skill-lift-demo`` (one rep) and that session's output.

    Made once per test session, also under xdist: the workers share pytest's base temporary
    folder, and the first to take the lock makes the week the others then read."""
    from pytest_skilllift.week.files import file_lock

    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "view-demo"
    with file_lock(root.with_suffix(".lock")):
        if not (root / "session.out").is_file():
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
            shutil.copytree(DEMO_PROJECT / "evals" / "test-prompts",
                            root / "evals" / "test-prompts")
            (root / "pytest.ini").write_text(
                "[pytest]\nskill_lift_reps = 1\nskill_lift_out = week\n"
                "skill_lift_models = sonnet=demo-sonnet,haiku=demo-haiku\n")
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", "--skill-lift-demo", "-p", "no:cacheprovider",
                 "-p", "no:xdist", "-q"], cwd=root, capture_output=True, text=True,
                timeout=600)
            assert (root / "week" / "scorecard.json").is_file(), proc.stdout + proc.stderr
            (root / "session.out").write_text(proc.stdout)
    return root / "week", (root / "session.out").read_text()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page that records every request it makes and every script error."""
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    pg = context.new_page()
    pg.requests = []
    pg.errors = []
    context.on("request", lambda r: pg.requests.append(r.url))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    context.close()


def open_page(pg: Any, url: str) -> None:
    pg.goto(url)
    pg.wait_for_selector("body[data-ready='1']", timeout=5000)


def scores(week: Path) -> list[dict[str, str]]:
    with (week / "scores.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_the_session_writes_the_view_and_prints_its_path(demo: tuple[Path, str]) -> None:
    week, out = demo
    index = week / "view" / "index.html"
    assert f"viewer: {index} (3 prompt pages; open it from disk)" in out
    assert index.is_file() and len(list((week / "view" / "prompts").glob("*.html"))) == 3


def test_overview_lift_is_the_scorecards(demo: tuple[Path, str], page: Any) -> None:
    week, _ = demo
    card = json.loads((week / "scorecard.json").read_text())
    open_page(page, (week / "view" / "index.html").as_uri())
    shown = {el.get_attribute("data-model"): el for el in page.query_selector_all("span.lift")}
    assert set(shown) == set(card["models"]) == {"sonnet", "haiku"}
    for model, m in card["models"].items():
        assert float(shown[model].get_attribute("data-value")) == m["must_lift"]
        assert shown[model].inner_text() == f"{m['must_lift']:+.3f}"
    assert page.errors == []


def test_tables_sort(demo: tuple[Path, str], page: Any) -> None:
    week, _ = demo
    open_page(page, (week / "view" / "index.html").as_uri())

    def lifts() -> list[float]:
        return [float(t) for t in page.eval_on_selector_all(
            "#prompt-table tbody tr td:nth-child(5)", "els => els.map(e => e.textContent)")]

    page.click("#prompt-table th:nth-child(5) button")
    assert lifts() == sorted(lifts()) and len(set(lifts())) > 1
    page.click("#prompt-table th:nth-child(5) button")
    assert lifts() == sorted(lifts(), reverse=True)


def test_prompt_to_answer_marks_the_judges_quote(demo: tuple[Path, str], page: Any) -> None:
    week, _ = demo
    open_page(page, (week / "view" / "index.html").as_uri())
    page.click("#prompt-table a:text('sqlite-bulk-insert')")
    page.wait_for_selector("body[data-ready='1'][data-page='prompt']")
    row = next(r for r in scores(week) if r["prompt"] == "sqlite-bulk-insert"
               and r["model"] == "sonnet" and r["condition"] == "with-skill"
               and r["verdict"] == "met" and r["evidence_quote"])
    item = f"{row['item_type']}-{row['item_index']}"
    page.click(f"section[data-model='sonnet'] tr[data-item='{item}'] button.cell[data-col='1']")
    active = page.locator("section[data-model='sonnet'] .answer.active")
    assert active.get_attribute("data-run-id") == row["run_id"]
    assert active.locator("mark.evidence").inner_text() == row["evidence_quote"].strip()
    # the other arm of the same rep beside it, and the run's tool calls in order
    other = page.locator("section[data-model='sonnet'] .answer:not(.active)")
    assert other.get_attribute("data-condition") == "no-skill"
    steps = active.locator(".trajectory li code").all_inner_texts()
    assert steps and steps[0] == "Skill"
    assert page.errors == []


def test_a_hostile_answer_is_text(demo: tuple[Path, str], page: Any, tmp_path: Path) -> None:
    week = tmp_path / "week"
    shutil.copytree(demo[0], week, ignore=shutil.ignore_patterns("view"))
    rows = scores(week)
    target = next(r for r in rows if r["prompt"] == "sqlite-bulk-insert" and r["model"] ==
                  "sonnet" and r["condition"] == "with-skill" and r["verdict"] == "met")
    run_file = week / target["run_id"] / "run.json"
    record = json.loads(run_file.read_text())
    record["final_answer"] = f"Intro. {HOSTILE} Outro."
    run_file.write_text(json.dumps(record))
    target["evidence_quote"] = HOSTILE
    for r in rows:  # the item's text, in every run that grades it
        if (r["prompt"], r["item_type"], r["item_index"]) == (
                target["prompt"], target["item_type"], target["item_index"]):
            r["item_text"] = f"rubric {HOSTILE}"
    with (week / "scores.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    site = build_site(week)
    open_page(page, (site.index.parent / "prompts" / page_name("sqlite-bulk-insert")).as_uri())
    item = f"{target['item_type']}-{target['item_index']}"
    page.click(f"section[data-model='sonnet'] tr[data-item='{item}'] button.cell[data-col='1']")
    active = page.locator("section[data-model='sonnet'] .answer.active")
    assert active.locator("mark.evidence").inner_text() == HOSTILE
    assert HOSTILE in active.locator("pre.answer-text").inner_text()
    assert page.locator(f"section[data-model='sonnet'] tr[data-item='{item}'] th").inner_text(
    ).endswith(HOSTILE)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img").count() == 0 and page.locator("main script").count() == 0


def _missing_row(rows: list[dict[str, str]]) -> dict[str, str]:
    """A sonnet no-skill must item the scripted judge found missing (it gives a reason)."""
    return next(r for r in rows if r["prompt"] == "sqlite-bulk-insert" and r["model"] ==
                "sonnet" and r["condition"] == "no-skill" and r["verdict"] == "missing")


def _open_cell(page: Any, week: Path, row: dict[str, str]) -> Any:
    site = build_site(week)
    open_page(page, (site.index.parent / "prompts" / page_name(row["prompt"])).as_uri())
    item = f"{row['item_type']}-{row['item_index']}"
    page.click(f"section[data-model='sonnet'] tr[data-item='{item}'] button.cell[data-col='0']")
    active = page.locator("section[data-model='sonnet'] .answer.active")
    assert active.get_attribute("data-run-id") == row["run_id"]
    return active


def _write_scores(week: Path, rows: list[dict[str, str]], columns: list[str]) -> None:
    with (week / "scores.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def test_the_judges_reason_is_shown_beside_a_missing_item(demo: tuple[Path, str],
                                                          page: Any) -> None:
    week, _ = demo
    row = _missing_row(scores(week))
    assert row["judge_reason"].startswith("the answer never mentions ")  # the scripted judge
    open_page(page, (week / "view" / "prompts" / page_name(row["prompt"])).as_uri())
    item = f"{row['item_type']}-{row['item_index']}"
    cell = page.locator(f"section[data-model='sonnet'] tr[data-item='{item}'] "
                        "button.cell[data-col='0']")
    assert cell.get_attribute("title") == f"Judge's reason: {row['judge_reason']}"
    cell.click()
    active = page.locator("section[data-model='sonnet'] .answer.active")
    assert active.locator(".judge-reason q").inner_text() == row["judge_reason"]
    assert page.errors == []


def test_a_hostile_reason_is_text(demo: tuple[Path, str], page: Any, tmp_path: Path) -> None:
    week = tmp_path / "week"
    shutil.copytree(demo[0], week, ignore=shutil.ignore_patterns("view"))
    rows = scores(week)
    target = _missing_row(rows)
    target["judge_reason"] = HOSTILE
    _write_scores(week, rows, list(rows[0]))
    active = _open_cell(page, week, target)
    assert active.locator(".judge-reason q").inner_text() == HOSTILE
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img").count() == 0 and page.locator("main script").count() == 0
    assert page.errors == []


def test_a_week_graded_before_reasons_says_none_was_recorded(
        demo: tuple[Path, str], page: Any, tmp_path: Path) -> None:
    # A week graded by judge prompt skilllift-judge/2: scores.csv has no judge_reason column.
    week = tmp_path / "week"
    shutil.copytree(demo[0], week, ignore=shutil.ignore_patterns("view"))
    rows = scores(week)
    _write_scores(week, rows, [c for c in rows[0] if c != "judge_reason"])
    active = _open_cell(page, week, _missing_row(rows))
    assert active.locator(".judge-reason").inner_text() == "Judge's reason: no reason recorded"
    assert active.locator(".judge-reason q").count() == 0
    assert page.errors == []


def test_no_request_leaves_the_site(demo: tuple[Path, str], page: Any) -> None:
    week, _ = demo
    open_page(page, (week / "view" / "index.html").as_uri())
    for link in page.eval_on_selector_all("#prompt-table a", "els => els.map(e => e.href)"):
        open_page(page, link)
        page.click("section[data-model='haiku'] button.cell >> nth=0")
    site = (week / "view").as_uri()
    assert page.requests and all(u.startswith(site + "/") for u in page.requests), page.requests


@pytest.fixture
def served(demo: tuple[Path, str], tmp_path: Path) -> Iterator[tuple[Path, str]]:
    from pytest_skilllift.view.serve import make_server
    from pytest_skilllift.view.site import CSP_SERVED

    week = tmp_path / "week"
    shutil.copytree(demo[0], week, ignore=shutil.ignore_patterns("view"))
    site = build_site(week, csp=CSP_SERVED)
    server = make_server(week, site.index.parent, sample=6, seed="3")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield week, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_label_three_items_then_judge_check(served: tuple[Path, str], page: Any,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    week, base = served
    open_page(page, base + "/index.html")
    page.click("a:text('Label a sample (blind)')")
    page.wait_for_selector("button.choice")
    seen = page.locator("#label-item").inner_text()
    for model in ("sonnet", "haiku", "with-skill", "no-skill"):
        assert model not in seen  # blind: neither the model nor the arm
    for n in range(1, 4):
        assert page.locator(".progress").inner_text() == f"Item {n} of 6"
        page.click("button.choice >> nth=0")
        # (expect, not wait_for_function: the page's CSP forbids evaluating strings)
        playwright_api.expect(page.locator(".progress")).to_have_text(f"Item {n + 1} of 6")
    stats = page.locator("#agreement").inner_text()
    assert "labelled\n3" in stats and "Cohen's kappa" in stats
    with (week / "labels.csv").open() as fh:
        labelled = list(csv.DictReader(fh))
    assert len(labelled) == 3
    assert cli.main(["judge-check", str(week), "--labels", str(week / "labels.csv"),
                     "--output", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["overall"]["n"] == 3 and report["unmatched"] == []
    kappa = report["overall"]["kappa"]
    assert (f"Cohen's kappa\n{kappa:.3f}" if kappa is not None else "undefined") in stats
    assert all(u.startswith(base + "/") for u in page.requests), page.requests


def test_a_label_from_another_origin_is_refused(served: tuple[Path, str]) -> None:
    import urllib.error
    import urllib.request

    week, base = served
    req = urllib.request.Request(base + "/api/label", data=b'{"id": 1, "verdict": "met"}',
                                 headers={"Content-Type": "application/json",
                                          "Origin": "http://evil.example"}, method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 403 and not (week / "labels.csv").exists()


def test_compare_links_both_weeks(demo: tuple[Path, str], page: Any, tmp_path: Path) -> None:
    week_a = tmp_path / "20261101"
    week_b = tmp_path / "20261108"
    for w in (week_a, week_b):
        shutil.copytree(demo[0], w, ignore=shutil.ignore_patterns("view"))
    assert cli.main(["view", str(week_a), "--compare", str(week_b)]) == 0
    open_page(page, (week_a / "view" / "compare.html").as_uri())
    rows = page.locator("#compare-prompts tbody tr")
    assert rows.count() == 6  # 3 prompts × 2 models, each "unchanged" (the same runs)
    assert set(page.locator("#compare-prompts tbody td:nth-child(3)").all_inner_texts()) == {
        "unchanged"}
    page.click("#compare-prompts tbody tr >> nth=0 >> a:text('20261108')")
    page.wait_for_selector("body[data-ready='1'][data-page='prompt']")
    assert "/view/b/prompts/" in page.url
    assert page.errors == []


def test_recorded_gates_are_measured_as_skilllift_gate_does(
        demo: tuple[Path, str], page: Any, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    week = tmp_path / "week"
    shutil.copytree(demo[0], week, ignore=shutil.ignore_patterns("view"))
    record = json.loads((week / "week.json").read_text())
    record["gates"] = ["must_lift_ci_low>0", "haiku.with-skill.pass_rate>=0.8:soft"]
    (week / "week.json").write_text(json.dumps(record))
    status = cli.main(["gate", str(week), "--output", "json"])
    expected = json.loads(capsys.readouterr().out)
    site = build_site(week)
    open_page(page, site.index.as_uri())
    shown = [r.split("\t") for r in page.locator("#gate-table tbody tr").all_inner_texts()]
    assert [(r[0], r[1], r[5]) for r in shown] == [
        (g["gate"], g["scope"], "pass" if g["passed"] else "FAIL") for g in expected["gates"]]
    verdict = page.locator("#gate-verdict").inner_text()
    assert verdict.endswith(f"(skilllift gate: exit {status})")


def test_all_prompts_page(demo: tuple[Path, str], page: Any, tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_skilllift.view import site as site_mod

    monkeypatch.setattr(site_mod, "OVERVIEW_PROMPT_ROWS", 2)
    site = build_site(demo[0], tmp_path / "site")
    open_page(page, site.index.as_uri())
    assert page.locator("#prompt-table tbody tr").count() == 2
    page.click("a:text('all prompts →')")
    page.wait_for_selector("body[data-ready='1'][data-page='prompts']")
    assert page.locator("#prompt-table tbody tr").count() == 6
    page.click("#prompt-table a >> nth=0")
    page.wait_for_selector("body[data-ready='1'][data-page='prompt']")
    assert page.errors == []


def test_trigger_misses_are_marked_where_they_occur(demo: tuple[Path, str], page: Any) -> None:
    week, _ = demo
    with (week / "manifest.csv").open(newline="") as fh:
        manifest = list(csv.DictReader(fh))
    missed = {(r["prompt"], r["model"]) for r in manifest
              if r["condition"] == "with-skill" and r["skill_activation"] == "none"}
    assert missed  # the demo's small model misses the git-bisect skill's trigger
    for prompt in {r["prompt"] for r in manifest}:
        open_page(page, (week / "view" / "prompts" / page_name(prompt)).as_uri())
        for model in ("sonnet", "haiku"):
            tags = page.locator(f"section[data-model='{model}'] th .tag.miss").count()
            assert tags == (1 if (prompt, model) in missed else 0), (prompt, model)


def test_history_links_the_previous_weeks_compare_page(
        demo: tuple[Path, str], page: Any, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_skilllift.report.summarize import summarize_week

    weekly = tmp_path / "weekly"
    before, week = weekly / "20261101", weekly / "20261108"
    for w in (before, week):  # two weeks of one history, summarized in turn
        shutil.copytree(demo[0], w, ignore=shutil.ignore_patterns("view"))
        summarize_week(w, plots=False)
    assert cli.main(["view", str(week)]) == 0
    assert "compare: compare.html: week 20261101 → week 20261108" in capsys.readouterr().out
    site = week / "view"
    open_page(page, (site / "index.html").as_uri())
    link = page.locator("#history-compare a")
    assert link.inner_text() == ("Compare with the previous comparable week 20261101 "
                                 "(20261101 → 20261108) →")
    link.click()
    page.wait_for_selector("body[data-ready='1'][data-page='compare']")
    assert page.url == (site / "compare.html").as_uri()
    assert page.locator("h1").inner_text() == "Week 20261101 → week 20261108"
    assert page.locator("#compare-prompts tbody tr").count() == 6
    page.click("#compare-prompts tbody tr >> nth=0 >> a:text('20261101')")
    page.wait_for_selector("body[data-ready='1'][data-page='prompt']")
    assert page.url.startswith((site / "b" / "prompts").as_uri() + "/")
    assert page.locator("header.top span").inner_text().endswith("week 20261101")
    assert page.errors == [] and all(u.startswith(site.as_uri() + "/") for u in page.requests)

    # The previous week gone from beside it: no link, the words say which week and why.
    shutil.rmtree(before)
    shutil.rmtree(site)
    assert cli.main(["view", str(week)]) == 0
    capsys.readouterr()
    open_page(page, (site / "index.html").as_uri())
    note = page.locator("#history-compare")
    assert note.locator("a").count() == 0
    assert note.inner_text().startswith(
        "No compare link: the previous comparable week 20261101 (named in "
        "../scorecard-history.csv) is not on disk beside this week (no ../20261101)")
    assert not (site / "compare.html").exists()


def test_prompt_pages_chain_and_filter_to_failures(demo: tuple[Path, str], page: Any) -> None:
    week, _ = demo
    open_page(page, (week / "view" / "index.html").as_uri())
    card = json.loads((week / "scorecard.json").read_text())
    # the verdict sentence at the top agrees with the scorecard
    assert page.locator("p.verdict").inner_text() == card["verdict"]
    page.click("#prompt-table a:text('sqlite-bulk-insert')")
    page.wait_for_selector("body[data-ready='1'][data-page='prompt']")
    # previous / next walk every prompt page once, first to last
    while page.locator("nav.prompt-nav a:has-text('←')").count():  # back to the first
        page.locator("nav.prompt-nav").first.locator("a:has-text('←')").click()
        page.wait_for_selector("body[data-ready='1'][data-page='prompt']")
    seen = [page.locator("h1").inner_text()]
    while page.locator("nav.prompt-nav a:has-text('→')").count():  # forward to the last
        page.locator("nav.prompt-nav").first.locator("a:has-text('→')").click()
        page.wait_for_selector("body[data-ready='1'][data-page='prompt']")
        seen.append(page.locator("h1").inner_text())
    assert len(seen) == len(set(seen)) and set(seen) == {r["prompt"] for r in scores(week)}
    page.click("nav.prompt-nav >> nth=0 >> a:has-text('←')")  # and back from the last
    page.wait_for_selector("body[data-ready='1'][data-page='prompt']")
    assert page.locator("h1").inner_text() == seen[-2]
    # failures only: every row left shows a missed must or a violated avoid
    rows = page.locator("section[data-model] tbody tr")
    total = rows.count()
    page.check("#failures-only")
    visible = [r for r in rows.all() if r.is_visible()]
    assert 0 < len(visible) < total
    for r in visible:
        verdicts = r.locator("button.cell").evaluate_all(
            "bs => bs.map(b => b.getAttribute('data-verdict'))")
        item = r.get_attribute("data-item") or ""
        assert ("missing" in verdicts and item.startswith("must")) or (
            "violated" in verdicts and item.startswith("avoid"))
    page.uncheck("#failures-only")
    assert sum(1 for r in rows.all() if r.is_visible()) == total
    # a demo week's pages carry its notice, and a run's dollars are said to be simulated
    assert page.locator("p.banner").inner_text().startswith("DEMO")
    page.locator("section[data-model] tbody tr button.cell[data-col='1']").first.click()
    active = page.locator(".answer.active").first
    assert active.get_attribute("data-condition") == "with-skill"
    assert "(simulated: nothing was paid)" in active.locator("dl.kv").first.inner_text()
    # each tool call's result sits under it, folded (a with-skill run reads its skill)
    assert active.locator(".trajectory li").count() > 0
    assert active.locator(".trajectory details.result").count() > 0
    assert page.errors == []
