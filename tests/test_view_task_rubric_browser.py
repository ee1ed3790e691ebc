"""A task's rubric on its viewer page, in Debian's Chromium driven by Playwright: the judge's
verdict per rubric item × run and, in each run's panel, every verdict with its quote — read
from the page and checked against the runs' grades.json; a hostile quote stays text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.cli import main as cli
from pytest_skilllift.testing import StandIn
from pytest_skilllift.testing.judge_script import keyword_judge
from pytest_skilllift.view.site import build_site
from pytest_skilllift.week.ledger import Ledger

from .test_run_tasks_rubric import REPORT, engine, ok_run, spec_of, task_copy
from .test_view_tasks_browser import CHROMIUM, CHROMIUM_ARGS, HOSTILE

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed "
                                     "(pip install -e '.[dev]')")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.is_file(), reason="no /usr/bin/chromium (apt-get install "
                       "chromium; .ci/run does)"),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("rubric")
    folder = task_copy(tmp / "src")
    ledger = Ledger(tmp / "20261203")
    with_spec, no_spec = spec_of(folder), spec_of(folder, "no-skill")
    ok_run(ledger, with_spec, "Done: I followed the skill's steps and ran each of its "
           "commands.", {"report.json": REPORT.encode()})
    # the generic attempt, with hostile text the judge quotes for the avoid item
    ok_run(ledger, no_spec, f"Here is a general approach {HOSTILE}: start from the official "
           "documentation, try a small example, measure.", {}, reward=0.0)
    with StandIn(judge=keyword_judge) as api:
        run = engine(ledger, api)
        run.result(with_spec)
        run.result(no_spec)
    ledger.rebuild_csvs()
    cli.main(["summarize", str(ledger.root)])
    build_site(ledger.root)
    return ledger.root


@pytest.fixture
def page() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        pg = browser.new_page(viewport={"width": 1300, "height": 900})
        pg.errors = []
        pg.on("pageerror", lambda e: pg.errors.append(str(e)))
        yield pg
        browser.close()


def test_the_task_page_shows_each_rubric_verdict_and_its_quote(site: Path, page: Any) -> None:
    page.goto((site / "view" / "index.html").as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=5000)
    page.click("a:text-is('sales-report')")
    page.wait_for_selector("body[data-ready='1'][data-page='task']", timeout=5000)
    section = page.locator("section[data-model='sonnet']")
    grid = section.locator("table.task-rubric-grid")
    heads = grid.locator("thead th[data-col]")
    columns = [heads.nth(i).inner_text() for i in range(heads.count())]
    assert columns == ["no-skill r1", "with-skill r1"]
    run_ids = {"no-skill r1": "sales-report-sonnet-no-skill-r1-w",
               "with-skill r1": "sales-report-sonnet-with-skill-r1-w"}
    for ci, column in enumerate(columns):
        grades = json.loads((site / run_ids[column] / "grades.json").read_text())
        for row in grades["rows"]:
            key = f"{row['item_type']}-{row['item_index']}"
            cell = grid.locator(f"tr[data-item='{key}'] td[data-col='{ci}']")
            assert cell.get_attribute("data-verdict") == row["verdict"], (column, key)
            shown = section.locator(f".task-run[data-run-id='{run_ids[column]}'] "
                                    f".rubric-verdict[data-item='{key}']")
            assert shown.get_attribute("data-verdict") == row["verdict"]
            quote = shown.locator("q.evidence")
            if row["evidence_quote"]:
                assert quote.inner_text() == row["evidence_quote"]
            else:
                assert quote.count() == 0
            # the judge's reason beside each missing/violated verdict, as grades.json has it
            reason = shown.locator(".judge-reason q")
            if row.get("judge_reason"):
                assert reason.inner_text() == row["judge_reason"], (column, key)
            else:
                assert reason.count() == 0
    # the with-skill run's must item, quoted from report.json; the no-skill's violation
    assert grid.locator("tr[data-item='must-1'] td[data-col='1']").inner_text() == "met"
    assert grid.locator("tr[data-item='avoid-1'] td[data-col='0']").inner_text() == "violated"
    violation = section.locator(".rubric-verdict[data-item='avoid-1'][data-verdict='violated'] "
                                "q.evidence")
    assert "<script>window.__pwned = 1</script>" in violation.inner_text()  # text, not markup
    reasons = section.locator(".rubric-verdict[data-verdict='violated'] .judge-reason q")
    assert reasons.count() >= 1 and reasons.first.inner_text()  # the stand-in's judge gave one
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("main img").count() == 0 and page.locator("main script").count() == 0
    assert page.errors == []
