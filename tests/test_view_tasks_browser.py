"""A Harbor task's page in ``skilllift view``, in Debian's Chromium driven by Playwright, on a
mixed week: the rubric prompts of the 4-rep demo week beside the tasks of the Harbor job
fixture imported with ``skilllift import harbor``. What the page shows — the verifier's tests
× runs, the rewards, the files, the verifier's output — is read from the page and checked
against the run folders' files; hostile file names and contents stay text."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.cli import main as cli
from pytest_skilllift.run.tasks.harbor import import_jobs
from pytest_skilllift.view.data import page_name
from pytest_skilllift.view.site import build_site

FIXTURES = Path(__file__).parent / "fixtures"
DEMO_TASKS = Path(__file__).parent.parent / "pytest_skilllift" / "demo" / "evals" / "tasks"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
HOSTILE = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
           '<a href="javascript:window.__pwned=3">x</a>')
HOSTILE_NAME = '<img src=x onerror="window.__pwned=4">.txt'

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed "
                                     "(pip install -e '.[dev]')")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.is_file(), reason="no /usr/bin/chromium (apt-get install "
                       "chromium; .ci/run does)"),
]
MODEL = "claude-haiku-4-5"


def mixed_week(week: Path) -> Path:
    """The Harbor fixture imported, then the demo week's prompt rows added to its CSVs."""
    # sales-report's task directory is the demo's: its instruction comes from there
    jobs = sorted(p for p in (FIXTURES / "harbor-jobs").iterdir() if p.is_dir())
    import_jobs(jobs, week, tasks_dir=DEMO_TASKS)
    demo = FIXTURES / "demo-week-4reps" / "20261201"
    for name in ("manifest.csv", "scores.csv"):
        with (week / name).open(newline="") as fh:
            reader = csv.DictReader(fh)
            columns, rows = list(reader.fieldnames or []), list(reader)
        with (demo / name).open(newline="") as fh:
            rows += list(csv.DictReader(fh))
        with (week / name).open("w", newline="") as fh:
            writer = csv.DictWriter(fh, columns, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    return week


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    week = mixed_week(tmp_path_factory.mktemp("mixed") / "20261120")
    run = week / f"sales-report-{MODEL}-with-skill-r1-20261120"
    (run / "artifacts" / HOSTILE_NAME).write_text(f"data {HOSTILE}\n")
    (run / "artifacts" / "big.txt").write_text("x" * 40_000)
    cli.main(["summarize", str(week)])
    build_site(week)
    return week


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    pg = context.new_page()
    pg.requests = []
    pg.errors = []
    context.on("request", lambda r: pg.requests.append(r.url))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    context.close()


def open_task(pg: Any, week: Path, task: str) -> None:
    pg.goto((week / "view" / "index.html").as_uri())
    pg.wait_for_selector("body[data-ready='1']", timeout=5000)
    pg.click(f"a:text-is('{task}')")
    pg.wait_for_selector("body[data-ready='1'][data-page='task']", timeout=5000)


def test_the_mixed_week_has_prompt_and_task_pages(site: Path, page: Any) -> None:
    pages = sorted(p.name for p in (site / "view" / "prompts").glob("*.html"))
    assert pages == sorted(page_name(p) for p in (
        "fix-dates", "sales-report", "git-bisect-regression", "python-packaging-pyproject",
        "sqlite-bulk-insert"))
    page.goto((site / "view" / "prompts" / page_name("sqlite-bulk-insert")).as_uri())
    page.wait_for_selector("body[data-ready='1'][data-page='prompt']", timeout=5000)
    assert page.locator("tr[data-item]").count() > 0  # a rubric prompt keeps its grid
    assert page.errors == []


def test_the_overview_shows_both_headlines(site: Path, page: Any) -> None:
    card = json.loads((site / "scorecard.json").read_text())
    page.goto((site / "view" / "index.html").as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=5000)
    shown = {e.get_attribute("data-model"): e for e in page.query_selector_all(
        "#reward-table span.reward-lift")}
    assert set(shown) == set(card["rewards"]["models"]) == {MODEL, "codex-gpt-5"}
    for model, m in card["rewards"]["models"].items():
        assert float(shown[model].get_attribute("data-value")) == m["reward_lift"]
        assert shown[model].inner_text() == f"{m['reward_lift']:+.3f}"
    # an exact tie prints as the scorecard prints it: 0.8125 → 0.812 (not toFixed's 0.813)
    haiku = page.locator(f"#reward-table tr:has(span.reward-lift[data-model='{MODEL}'])")
    assert haiku.locator("td").nth(2).inner_text() == "0.812"
    assert card["rewards"]["models"][MODEL]["reward_with"] == 0.8125
    # the prompts' must lift beside it, from the same scorecard
    assert {e.get_attribute("data-model") for e in page.query_selector_all("span.lift")} >= {
        "sonnet", "haiku"}
    assert page.errors == []


def test_verifier_tests_rewards_and_files_are_the_run_folders(site: Path, page: Any) -> None:
    open_task(page, site, "sales-report")
    assert page.locator("#task-instruction pre.prompt-text").inner_text() == (
        DEMO_TASKS / "sales-report" / "instruction.md").read_text()
    section = page.locator(f"section[data-model='{MODEL}']")
    heads = section.locator("thead th[data-run-id]")
    run_ids = [heads.nth(i).get_attribute("data-run-id") for i in range(heads.count())]
    records = {r: json.loads((site / r / "run.json").read_text()) for r in run_ids}
    # no-skill and with-skill of each rep side by side, rep by rep
    assert [(records[r]["rep"], records[r]["condition"]) for r in run_ids] == [
        (1, "no-skill"), (1, "with-skill"), (2, "no-skill"), (2, "with-skill")]
    for i, run_id in enumerate(run_ids):
        shown = heads.nth(i).locator(".reward").get_attribute("data-reward")
        assert float(shown) == records[run_id]["reward"]
    # the verifier's tests as rows, each cell that run's outcome in its ctrf.json
    rows = section.locator("tbody tr[data-test]")
    names = [rows.nth(i).get_attribute("data-test") for i in range(rows.count())]
    assert names == [f"test_outputs.py::{t}" for t in (
        "test_report_exists", "test_report_has_total", "test_totals_per_region")]
    for i, run_id in enumerate(run_ids):
        ctrf = json.loads((site / run_id / "verifier" / "ctrf.json").read_text())
        expected = {t["name"].split("/", 1)[1]: t["status"] for t in ctrf["results"]["tests"]}
        for r, name in enumerate(names):
            cell = rows.nth(r).locator(f"td[data-col='{i}']")
            assert cell.get_attribute("data-outcome") == expected[name]
    # the files: every artefact of the run, text as in the file, the PNG named with its size
    panel = section.locator(f".task-run[data-run-id='{run_ids[1]}']")
    shown = {a.get_attribute("data-path"): a for a in panel.locator(".artifact").all()}
    on_disk = {p.relative_to(site / run_ids[1] / "artifacts").as_posix(): p
               for p in (site / run_ids[1] / "artifacts").rglob("*") if p.is_file()}
    assert set(shown) == set(on_disk) and "chart.png" in shown
    for path, node in shown.items():
        assert int(node.get_attribute("data-bytes")) == on_disk[path].stat().st_size
        if path == "chart.png":
            assert node.get_attribute("data-binary") == "1"
            assert node.locator("pre").count() == 0
        elif path == "big.txt":  # capped, the rest counted
            assert node.locator("pre").inner_text() == "x" * 16384
            assert f"{40_000 - 16384} more bytes not shown" in node.inner_text()
        else:
            assert node.locator("pre").inner_text() == on_disk[path].read_text()
    # the verifier's output, as saved
    assert panel.locator("pre.verifier-text").inner_text() == (
        site / run_ids[1] / "verifier" / "output.txt").read_text()
    # its trajectory: the Skill call first
    assert panel.locator(".trajectory li code").first.inner_text() == "Skill"
    assert page.errors == []
    assert all(u.startswith("file://") for u in page.requests)


def test_hostile_file_names_and_contents_stay_text(site: Path, page: Any) -> None:
    open_task(page, site, "sales-report")
    node = page.locator(f".artifact[data-path='{HOSTILE_NAME}']")
    assert node.locator("code.artifact-path").inner_text() == HOSTILE_NAME
    assert node.locator("pre").inner_text() == f"data {HOSTILE}\n"
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("main img").count() == 0 and page.locator("main script").count() == 0


def test_a_verifier_error_is_named_on_its_column(site: Path, page: Any) -> None:
    open_task(page, site, "fix-dates")
    section = page.locator(f"section[data-model='{MODEL}']")
    head = section.locator("thead th[data-run-id$='with-skill-r3-20261120']")
    assert head.locator(".tag.error").inner_text() == "verifier_error"
    assert head.locator(".reward").inner_text() == "no reward"
    panel = section.locator(".task-run[data-run-id$='with-skill-r3-20261120']")
    assert "RewardFileNotFoundError" in panel.inner_text()
    # no task directory on this machine: said, not guessed
    assert "instruction.md is not on this machine" in page.locator("#task-instruction").inner_text()
    assert page.errors == []
