"""Trigger tests: file format, the Triggering numbers, and the real CLI against the stand-in.

The end-to-end weeks run ``pytest --skill-lift`` in a subprocess on a small project (the
repository's example skills and a trigger file), the scripted model deciding from the CLI's
own skill listing whether to call the Skill tool — and, for queries about "our repository",
listing the project's files first (``testing.trigger_script.explore_first``). One week per
module scope serves every assertion about it.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.agents.claude_code import QUIET_ENV
from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.model import RunOutcome
from pytest_skilllift.report.sections.triggering import render_triggering, trigger_data
from pytest_skilllift.run.prompts import PromptError
from pytest_skilllift.run.triggers import (
    TRIGGER_COLUMNS,
    classify_trigger,
    load_trigger_file,
)
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.trace.transcript import parse_text, parse_transcript
from pytest_skilllift.week.columns import VERIFIED
from pytest_skilllift.week.files import INVALID, OK

REPO = Path(__file__).resolve().parents[1]
SKILLS = DEMO_PROJECT / "skills"
KEY = "sk-ant-test-trigger-key-0000"

#: should-trigger: a direct question, one that explores the repository first, and one that
#: never names what the description says (a real miss for a word-matching model).
#: should-not: unrelated, a sibling's question, and one that shares the description's words
#: (a real false trigger).
GIT_BISECT_QUERIES = [
    {"query": "A test started failing in the last 400 commits. How do I find the commit "
              "that introduced the regression with git bisect?", "should_trigger": True},
    {"query": "In our repository a regression appeared between two versions; find the "
              "commit that introduced it with git bisect.", "should_trigger": True},
    {"query": "Something broke last week and nobody can tell which change did it. What is "
              "the quickest way to pin down the culprit?", "should_trigger": True},
    {"query": "What is a good recipe for banana bread?", "should_trigger": False},
    {"query": "Why are my SQLite inserts so slow, and what does database is locked mean?",
     "should_trigger": False, "expected_skill": "sqlite-performance"},
    {"query": "How should I word the commit message for a regression fix between two "
              "versions?", "should_trigger": False},
]

pytestmark = pytest.mark.skipif(bundled_claude() is None,
                                reason="claude-agent-sdk (bundled CLI) missing")


# -- helpers -----------------------------------------------------------------------------------


def make_project(root: Path, triggers: dict[str, Any], ini: str = "") -> Path:
    shutil.copytree(SKILLS, root / "skills")
    (root / "evals" / "triggers").mkdir(parents=True)
    for name, content in triggers.items():
        (root / "evals" / "triggers" / f"{name}.json").write_text(json.dumps(content))
    (root / "pytest.ini").write_text(
        "[pytest]\nskill_lift_models = haiku=claude-haiku-4-5\nskill_lift_reps = 1\n"
        f"skill_lift_out = week\n{ini}")
    return root


def run_pytest(root: Path, server: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "ANTHROPIC_"))}
    env.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY=KEY,
               PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "pytest", "--skill-lift", "-p",
                           "no:cacheprovider", "-rA", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)


def table(week: Path) -> dict[str, dict[str, str]]:
    with (week / "triggers" / "triggers.csv").open(newline="") as fh:
        return {f"q{r['query_index']}": r for r in csv.DictReader(fh)}


@pytest.fixture(scope="module")
def bisect_week(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One week: the git-bisect trigger file (6 queries) against the explore-first agent;
    then the same command again (a rerun must not call the model again)."""
    from pytest_skilllift.testing.server import StandIn
    from pytest_skilllift.testing.trigger_script import explore_first

    root = make_project(tmp_path_factory.mktemp("bisect"),
                        {"git-bisect": {"skill": "git-bisect", "queries": GIT_BISECT_QUERIES}})
    with StandIn(agent=explore_first()) as server:
        first = run_pytest(root, server, "-p", "no:xdist")
        calls = server.count("agent")
        judge = server.count("judge")
        again = run_pytest(root, server, "-p", "no:xdist")
        yield {"root": root, "week": root / "week", "result": first, "again": again,
               "calls": calls, "calls_after_rerun": server.count("agent"), "judge": judge}


# -- trigger files -----------------------------------------------------------------------------


def test_both_file_shapes_load(tmp_path: Path) -> None:
    obj = tmp_path / "anything.json"
    obj.write_text(json.dumps({"skill": "git-bisect", "queries": GIT_BISECT_QUERIES}))
    bare = tmp_path / "python-packaging.json"  # skill-creator's description-eval shape
    bare.write_text(json.dumps([{"query": "How do I publish to PyPI?", "should_trigger": True},
                                {"query": "Fix my bike", "should_trigger": False}]))
    a, b = load_trigger_file(obj, SKILLS), load_trigger_file(bare, SKILLS)
    assert a.family == "git-bisect" and len(a.queries) == 6
    assert a.queries[4].expected_skill == "sqlite-performance"
    assert [q.index for q in a.queries] == [1, 2, 3, 4, 5, 6]
    assert b.family == "python-packaging"  # from the file name
    assert [q.should_trigger for q in b.queries] == [True, False]


@pytest.mark.parametrize(("content", "field", "fix"), [
    ({"skill": "nope", "queries": [{"query": "x", "should_trigger": True}]}, "'skill'",
     "name an installed family"),
    ({"skill": "git-bisect", "queries": [{"query": "x", "should_trigger": "yes"}]},
     "'queries[0].should_trigger'", "a JSON boolean"),
    ({"skill": "git-bisect", "queries": [{"query": " ", "should_trigger": True}]},
     "'queries[0].query'", "user message"),
    ({"skill": "git-bisect", "queries": [{"query": "x", "should_trigger": True,
                                          "expected_skill": "sqlite-performance"}]},
     "'queries[0].expected_skill'", "set should_trigger to false"),
    ({"skill": "git-bisect", "queries": [{"query": "x", "should_trigger": False,
                                          "expected_skill": "nope"}]},
     "'queries[0].expected_skill'", "use one of git-bisect"),
    ({"skill": "git-bisect", "queries": []}, "'queries'", "add should- and should-not"),
    ({"skill": "git-bisect"}, "'queries'", "add \"queries\""),
])
def test_bad_trigger_files_name_file_field_and_fix(tmp_path: Path, content: Any, field: str,
                                                    fix: str) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(content))
    with pytest.raises(PromptError) as err:
        load_trigger_file(path, SKILLS)
    assert str(path) in str(err.value) and field in str(err.value) and fix in str(err.value)


# -- the numbers -------------------------------------------------------------------------------


def _row(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = dict.fromkeys(TRIGGER_COLUMNS, "")
    base.update(family="git-bisect", model="haiku", rep=1, run_status="ok",
                installed="git-bisect")
    base.update(kw)
    base["run_id"] = f"{base['family']}-q{base['query_index']}-{base['model']}-r{base['rep']}"
    return base


def _write_table(week: Path, rows: list[dict[str, Any]]) -> None:
    path = week / "triggers" / "triggers.csv"
    path.parent.mkdir(parents=True)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(TRIGGER_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)


def test_recall_precision_wilson_and_exclusions(tmp_path: Path) -> None:
    rows = []
    # 4 should-trigger queries × 2 reps: q1, q2 always fire; q3 once; q4 never (a miss).
    for q, fired in ((1, (1, 1)), (2, (1, 1)), (3, (1, 0)), (4, (0, 0))):
        for rep, hit in enumerate(fired, start=1):
            rows.append(_row(query_index=q, query=f"should {q}", should_trigger=1, rep=rep,
                             triggered=hit, fired="git-bisect" if hit else "",
                             tools_before_skill=1 if q == 2 and hit else 0))
    # 3 should-not queries × 2 reps: q5 fires once (a false trigger); q6, q7 never.
    for q, fired in ((5, (1, 0)), (6, (0, 0)), (7, (0, 0))):
        for rep, hit in enumerate(fired, start=1):
            rows.append(_row(query_index=q, query=f"not {q}", should_trigger=0, rep=rep,
                             triggered=hit, fired="git-bisect" if hit else ""))
    # An errored run: never counted, listed as not measured.
    rows.append(_row(query_index=4, query="should 4", should_trigger=1, rep=3,
                     run_status="errored", run_error="CLI exit 1, result error_during"))
    _write_table(tmp_path, rows)
    data = trigger_data(tmp_path)
    m = data["triggers"]["haiku"]["git-bisect"]
    assert (m["n_should"], m["n_should_not"]) == (8, 6)
    assert m["recall"] == pytest.approx(5 / 8)
    assert m["precision"] == pytest.approx(5 / 6)
    assert m["false_trigger_rate"] == pytest.approx(1 / 6)
    assert m["miss_rate"] == pytest.approx(3 / 8)
    # Wilson 95% for 5/8 (z = 1.96): centre and half-width by the textbook formula.
    z, n, p = 1.959963984540054, 8, 5 / 8
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    assert m["recall_wilson95"] == pytest.approx([centre - half, centre + half])
    assert m["false_triggers"] == [{"q": 5, "file": "git-bisect", "query": "not 5", "runs": 1,
                                    "of": 2, "fired": ["git-bisect"]}]
    assert [(e["q"], e["runs"], e["of"]) for e in m["misses"]] == [(3, 1, 2), (4, 2, 2)]
    assert m["triggered_after_other_tools"] == 2
    assert [x["status"] for x in m["excluded"]] == ["errored"]
    assert data["trigger_runs"] == {"total": 15, "measured": 14, "excluded": 1,
                                    "max_turns": [], "table": "triggers/triggers.csv"}
    md = "\n".join(render_triggering(data))
    assert "## Triggering" in md and "| haiku | git-bisect | 0.62 [" in md.replace("  ", " ")
    assert 'git-bisect q5: "not 5" — 1 of 2 run(s); fired: git-bisect' in md
    assert "errored — CLI exit 1" in md
    assert data["trigger_confusion"] == {}  # one family installed: no confusion table


def test_dormancy_violations_by_query_per_family_and_as_a_gate(tmp_path: Path) -> None:
    from pytest_skilllift.report import gates
    from pytest_skilllift.report.verdicts import WeekMeasures
    from pytest_skilllift.week.tables import Week

    rows = [_row(query_index=1, query="should 1", should_trigger=1, triggered=1,
                 fired="git-bisect")]
    # should-not: q5 fires in 1 of 2 reps, q6 in both, q7 never → 2 queries violate dormancy
    for q, fired in ((5, (1, 0)), (6, (1, 1)), (7, (0, 0))):
        for rep, hit in enumerate(fired, start=1):
            rows.append(_row(query_index=q, query=f"not {q}", should_trigger=0, rep=rep,
                             triggered=hit, fired="git-bisect" if hit else ""))
    # another family under the same model stays dormant
    rows.append(_row(family="python-packaging", installed="python-packaging", query_index=1,
                     query="not packaging", should_trigger=0, triggered=0))
    _write_table(tmp_path, rows)
    data = trigger_data(tmp_path)
    bisect, packaging = (data["triggers"]["haiku"][f] for f in ("git-bisect", "python-packaging"))
    assert bisect["dormancy_violations"] == 2 and bisect["n_false_triggers"] == 3
    assert [(e["q"], e["runs"], e["of"]) for e in bisect["false_triggers"]] == [(5, 1, 2),
                                                                                  (6, 2, 2)]
    assert packaging["dormancy_violations"] == 0
    md = "\n".join(render_triggering(data))
    assert "dormancy violations" in md and "False triggers — dormancy violations" in md
    assert 'git-bisect q6: "not 6" — 2 of 2 run(s)' in md
    measures = WeekMeasures(Week(week_dir=tmp_path, prompts=[], models=["haiku"]), None, 0.7,
                            card={"triggers": data["triggers"]})
    assert measures.value("dormancy_violations", "haiku", None, None) == 2.0
    scopes = gates.Scopes(models=("haiku",), prompts=())
    loaded, _ = gates.load_gates(["dormancy_violations==0", "dormancy_violations<=2"], scopes)
    report = gates.evaluate(loaded, measures, gates.CoverageGuard(1, 1, 0.5))
    assert [r.passed for r in report.results] == [False, True]
    # a model without trigger runs: not measured, never a pass
    empty = WeekMeasures(Week(week_dir=tmp_path, prompts=[], models=["haiku"]), None, 0.7,
                         card={"triggers": {}})
    assert empty.value("dormancy_violations", "haiku", None, None) is None


def test_two_files_for_one_family_stay_apart(tmp_path: Path) -> None:
    _write_table(tmp_path, [
        _row(query_index=1, query="a", should_trigger=0, triggered=1, fired="git-bisect",
             trigger_set="git-bisect"),
        _row(query_index=1, query="b", should_trigger=0, triggered=1, fired="git-bisect",
             trigger_set="git-bisect-more", run_id="x"),
    ])
    m = trigger_data(tmp_path)["triggers"]["haiku"]["git-bisect"]
    assert [(e["file"], e["q"], e["query"]) for e in m["false_triggers"]] == [
        ("git-bisect", 1, "a"), ("git-bisect-more", 1, "b")]
    md = "\n".join(render_triggering(trigger_data(tmp_path)))
    assert "git-bisect (git-bisect-more.json) q1:" in md and "git-bisect q1:" in md


def test_no_trigger_runs_no_section(tmp_path: Path) -> None:
    data = trigger_data(tmp_path)
    assert data["triggers"] == {} and render_triggering(data) == []


def test_a_run_that_broke_before_any_skill_is_not_a_miss() -> None:
    init = {"type": "system", "subtype": "init", "skills": ["git-bisect"]}
    api_error = {"type": "result", "subtype": "success", "is_error": True,
                 "result": "API Error: 529 overloaded", "api_error_status": 529}
    clean = {"type": "result", "subtype": "error_max_turns", "is_error": True}
    ok_outcome = RunOutcome(exit_code=1, started_utc="", ended_utc="", wall_ms=1)

    def text(*events: dict[str, Any]) -> str:
        return "\n".join(json.dumps(e) for e in events)

    assert classify_trigger(ok_outcome, parse_text(text(init, api_error)), ["git-bisect"],
                            False)[0] == "errored"
    assert classify_trigger(ok_outcome, parse_text(text(init, clean)), ["git-bisect"],
                            False) == (OK, "")  # the planned stop: a measured "no"
    unlisted = {"type": "system", "subtype": "init", "skills": ["other"]}
    assert classify_trigger(ok_outcome, parse_text(text(unlisted, clean)), ["git-bisect"],
                            False)[0] == INVALID
    # A family the runner refused to install (a link leaving it): invalid, not retried.
    refused = RunOutcome(exit_code=None, started_utc="", ended_utc="", wall_ms=1,
                         error="invalid install: symlink git-bisect/x -> /etc leaves",
                         invalid_install=True)
    assert classify_trigger(refused, parse_text(""), ["git-bisect"], False) == (
        INVALID, refused.error)


# -- through the real CLI ------------------------------------------------------------------------


@pytest.mark.cli
def test_items_pass_iff_the_skill_fired_as_it_should(bisect_week: dict[str, Any]) -> None:
    out = bisect_week["result"].stdout
    assert bisect_week["result"].returncode == 0, out  # findings, not a broken run
    for q in (1, 2, 4, 5):
        assert f"PASSED evals/triggers/git-bisect.json::haiku::q{q}::trigger" in out
    assert "UNTRIGGERED evals/triggers/git-bisect.json::haiku::q3::trigger - miss: git-bisect " \
        "should have been invoked but was not" in out
    assert "MISFIRED evals/triggers/git-bisect.json::haiku::q6::trigger - false trigger: " \
        "git-bisect was invoked but should not be" in out
    stats = [ln for ln in out.splitlines() if re.match(r"^=+ .* in [\d.]+s", ln)]
    assert len(stats) == 1 and "1 untriggered, 1 misfired" in stats[0], stats
    assert "failed" not in stats[0]  # findings are not failed tests
    (line,) = [ln for ln in out.splitlines() if ln.startswith("findings: ")]
    assert line.startswith("findings: 1 untriggered, 1 misfired — ") and (
        "the scorecard's Triggering section" in line), line
    assert line.count("Triggering section") == 1 and "trigger findings" not in out
    assert bisect_week["judge"] == 0  # no judge for trigger runs


@pytest.mark.cli
def test_recall_and_precision_land_in_the_scorecard(bisect_week: dict[str, Any]) -> None:
    week = bisect_week["week"]
    card = json.loads((week / "scorecard.json").read_text())
    m = card["triggers"]["haiku"]["git-bisect"]
    assert (m["n_should"], m["n_should_not"]) == (3, 3)
    assert m["recall"] == pytest.approx(2 / 3) and m["precision"] == pytest.approx(2 / 3)
    assert [e["query"] for e in m["false_triggers"]] == [GIT_BISECT_QUERIES[5]["query"]]
    assert [e["query"] for e in m["misses"]] == [GIT_BISECT_QUERIES[2]["query"]]
    lo, hi = m["recall_wilson95"]
    assert 0 < lo < 2 / 3 < hi < 1
    md = (week / "scorecard.md").read_text()
    assert "## Triggering" in md and "Something broke last week" in md
    # Trigger runs never enter the lift: not in manifest.csv / scores.csv, own table.
    with (week / "manifest.csv").open() as fh:
        assert list(csv.DictReader(fh)) == []
    assert not list(week.glob("*/run.json"))
    assert len(table(week)) == 6
    assert "haiku git-bisect: recall 0.67" in bisect_week["result"].stdout


@pytest.mark.cli
def test_a_skill_loaded_after_another_tool_counts(bisect_week: dict[str, Any]) -> None:
    row = table(bisect_week["week"])["q2"]
    assert row["first_tool"] == "Glob" and row["tools_before_skill"] == "1"
    assert row["triggered"] == "1" and row["fired"] == "git-bisect"
    transcript = parse_transcript(bisect_week["week"] / "triggers" / row["run_id"] /
                                  "stdout.txt")
    # skill-creator's original check looked at the first tool call only: it would have
    # called this run "not triggered".
    assert transcript.tool_uses[0].name == "Glob"
    assert [u.name for u in transcript.tool_uses] == ["Glob", "Skill"]
    assert row["result_subtype"] == "error_max_turns" and row["max_turns"] == "2"


@pytest.mark.cli
def test_installed_as_a_skill_and_read_from_the_audit(bisect_week: dict[str, Any]) -> None:
    """The measurement is of the real thing: the CLI discovered the skill (its init event
    lists it, as for the with-skill arm) and loaded it through the Skill tool."""
    row = table(bisect_week["week"])["q1"]
    run_dir = bisect_week["week"] / "triggers" / row["run_id"]
    transcript = parse_transcript(run_dir / "stdout.txt")
    assert "git-bisect" in transcript.skills_listed
    skill_calls = transcript.calls("Skill")
    assert [c.input.get("skill") for c in skill_calls] == ["git-bisect"]
    assert skill_calls[0].effective and "Launching skill: git-bisect" in (
        skill_calls[0].result or "")
    record = json.loads((run_dir / "audit.json").read_text())["skill_invocation"]
    assert record["discovery_method"] == "Skill tool" and record["status"] == VERIFIED
    assert row["discovery_method"] == "Skill tool" and row["installed"] == "git-bisect"


@pytest.mark.cli
def test_a_rerun_reuses_every_finished_trigger_run(bisect_week: dict[str, Any]) -> None:
    assert bisect_week["again"].returncode == 0, bisect_week["again"].stdout
    assert bisect_week["calls_after_rerun"] == bisect_week["calls"]


@pytest.mark.cli
def test_a_command_registration_is_not_a_skill_install(tmp_path: Path) -> None:
    """The install skill-creator's first description eval used — the description as a
    ``.claude/commands`` entry — is not what users get: the CLI does not list it among the
    skills of its init event, so our audit marks such a run invalid rather than measuring it.
    """
    from pytest_skilllift.testing.agent_script import skill_agent
    from pytest_skilllift.testing.server import StandIn

    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".claude" / "commands").mkdir(parents=True)
    work.mkdir()
    shutil.copy(SKILLS / "git-bisect" / "SKILL.md", home / ".claude" / "commands" /
                "git-bisect.md")
    claude = bundled_claude()
    assert claude is not None
    with StandIn(agent=skill_agent) as server:
        env = {"HOME": str(home), "PATH": os.environ.get("PATH", ""), **QUIET_ENV,
               "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": KEY}
        proc = subprocess.run(
            [str(claude), "-p", str(GIT_BISECT_QUERIES[0]["query"]), "--output-format",
             "stream-json", "--verbose", "--model", "claude-haiku-4-5", "--permission-mode",
             "dontAsk", "--allowedTools", "Skill", "--no-session-persistence",
             "--max-turns", "2"], cwd=work, env=env, capture_output=True, text=True,
            timeout=300)
    transcript = parse_text(proc.stdout)
    assert transcript.init is not None
    assert "git-bisect" in (transcript.init.get("slash_commands") or [])
    assert "git-bisect" not in transcript.skills_listed
    outcome = RunOutcome(exit_code=proc.returncode, started_utc="", ended_utc="", wall_ms=1)
    assert classify_trigger(outcome, transcript, ["git-bisect"], False)[0] == INVALID


@pytest.fixture(scope="module")
def all_week(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every family installed at once (``--skill-lift-triggers-all``), under ``-n 2``."""
    from pytest_skilllift.testing.agent_script import skill_agent
    from pytest_skilllift.testing.server import StandIn

    triggers = {
        "git-bisect": {"skill": "git-bisect", "queries": [
            GIT_BISECT_QUERIES[0], GIT_BISECT_QUERIES[4],
            # A sibling steals it: packaging words outweigh "which commit … between two
            # versions" once python-packaging is installed too.
            {"query": "Which commit between two versions broke the build of our Python "
                      "package?", "should_trigger": True}]},
        # The skill-creator shape (bare list): the family is the file name.
        "sqlite-performance": [
            {"query": "Our app's SQLite inserts are slow and we see database is locked "
                      "errors. How do we fix it?", "should_trigger": True},
            {"query": "How do I publish my Python package to PyPI with pyproject.toml?",
             "should_trigger": False, "expected_skill": "python-packaging"},
        ],
    }
    root = make_project(tmp_path_factory.mktemp("all"), triggers)
    with StandIn(agent=skill_agent) as server:
        result = run_pytest(root, server, "-n", "2", "--skill-lift-triggers-all")
        yield {"root": root, "week": root / "week", "result": result}


@pytest.mark.cli
def test_every_family_installed_gives_a_confusion_table(all_week: dict[str, Any]) -> None:
    result = all_week["result"]
    assert result.returncode == 0, result.stdout + result.stderr  # a miss is a finding
    stats = [ln for ln in result.stdout.splitlines() if re.match(r"^=+ .* in [\d.]+s", ln)]
    assert len(stats) == 1 and "4 passed, 1 untriggered" in stats[0], stats
    assert "failed" not in stats[0]
    assert "UNTRIGGERED evals/triggers/git-bisect.json::haiku::q3::trigger" in result.stdout
    with (all_week["week"] / "triggers" / "triggers.csv").open(newline="") as fh:
        all_rows = list(csv.DictReader(fh))
    assert len(all_rows) == 5
    # Each run installs its own family first, then every sibling.
    assert {r["installed"] for r in all_rows} == {
        "git-bisect;python-packaging;sqlite-performance",
        "sqlite-performance;git-bisect;python-packaging"}
    card = json.loads((all_week["week"] / "scorecard.json").read_text())
    conf = card["trigger_confusion"]["haiku"]
    assert conf["skills"] == ["git-bisect", "python-packaging", "sqlite-performance"]
    # The sqlite question in git-bisect's file went to its sibling, as expected; the PyPI
    # question in sqlite's file went to python-packaging; one git-bisect question was
    # taken by python-packaging (off the diagonal).
    assert conf["matrix"] == {"git-bisect": {"git-bisect": 1, "python-packaging": 1},
                              "sqlite-performance": {"sqlite-performance": 2},
                              "python-packaging": {"python-packaging": 1}}
    assert (conf["routed_correctly"], conf["runs"]) == (4, 5)
    by_query = {(q["family"], q["q"]): q for q in conf["queries"]}
    assert by_query[("git-bisect", 2)]["fired"] == {"sqlite-performance": 1}
    assert by_query[("git-bisect", 3)]["fired"] == {"python-packaging": 1}
    bisect = card["triggers"]["haiku"]["git-bisect"]
    assert bisect["recall"] == 0.5 and [m["q"] for m in bisect["misses"]] == [3]
    assert card["triggers"]["haiku"]["sqlite-performance"]["recall"] == 1.0
    md = (all_week["week"] / "scorecard.md").read_text()
    assert "**Which skill fired — haiku**" in md and "| **sqlite-performance**" in md


def test_trigger_runs_keep_the_with_skill_install() -> None:
    """A trigger run's RunSpec is a with-skill RunSpec: the runner installs it the same way."""
    from pytest_skilllift.run.triggers import TriggerQuery, TriggerSet, TriggerSpec
    from pytest_skilllift.runners.local import LocalRunner

    tset = TriggerSet(path=Path("git-bisect.json"), family="git-bisect",
                      queries=(TriggerQuery(1, "q", True),))
    spec = TriggerSpec(tset, tset.queries[0], "haiku", "claude-haiku-4-5", 1, "w",
                       siblings=("git-bisect", "sqlite-performance"))
    run = spec.run_spec()
    assert run.with_skill and run.prompt.installed_families == ("git-bisect",
                                                                "sqlite-performance")
    from pytest_skilllift.model import AgentConfig

    with tempfile.TemporaryDirectory() as home:
        assert LocalRunner().install_skill(run, AgentConfig("claude", SKILLS), Path(home)) is None
        installed = sorted(p.name for p in (Path(home) / ".claude" / "skills").iterdir())
    assert installed == ["git-bisect", "sqlite-performance"]
    assert spec.run_id == "git-bisect-q1-haiku-trigger-r1-w"
    other = TriggerSpec(TriggerSet(Path("more bisect.json"), "git-bisect", tset.queries),
                        tset.queries[0], "haiku", "m", 1, "w")
    assert other.run_id == "more-bisect-q1-haiku-trigger-r1-w"  # no collision across files


def test_trigger_settings_resolve_validate_and_travel_to_workers() -> None:
    import datetime as dt

    from pytest_skilllift.config import OPTIONS, Settings, SettingsError

    def build(**overrides: Any) -> Settings:
        values = {o.name: o.default for o in OPTIONS}
        values.update(overrides)
        return Settings.from_values(lambda o: values[o.name], enabled=True,
                                    rootdir=Path("/proj"), today=dt.date(2026, 8, 8))

    s = build()
    assert s.triggers_dir == Path("/proj/evals/triggers") and s.triggers_max_turns == 2
    assert s.triggers_all is False and s.skill_creator_evals is None  # None: when present
    t = build(**{"triggers": "checks/trig", "triggers-all": True, "triggers-max-turns": 1,
                 "skill-creator-evals": False})
    assert (t.triggers_dir, t.triggers_all, t.triggers_max_turns, t.skill_creator_evals) == (
        Path("/proj/checks/trig"), True, 1, False)
    assert Settings.from_wire(json.loads(json.dumps(t.to_wire()))) == t
    with pytest.raises(SettingsError, match="triggers-max-turns must be at least 1"):
        build(**{"triggers-max-turns": 0})


@pytest.mark.slow
def test_a_bad_file_or_eval_is_named_and_the_others_collect(tmp_path: Path) -> None:
    """Collection errors name file, field and fix; the good trigger file and the good eval
    of a half-broken evals.json are still collected (no CLI run: --collect-only)."""
    root = make_project(tmp_path, {
        "git-bisect": [{"query": "Which commit broke it?", "should_trigger": True}],
        "broken": {"skill": "git-bisect", "queries": [{"query": "x", "should_trigger": "yes"}]},
    })
    evals = root / "skills" / "python-packaging" / "evals"
    evals.mkdir()
    (evals / "evals.json").write_text(json.dumps({"evals": [
        {"id": 1, "prompt": "Publish my package", "expectations": ["Uses python -m build"]},
        {"id": 2, "prompt": "Publish it again", "expectations": []}]}))

    class Offline:
        base_url = "http://127.0.0.1:9"

    result = run_pytest(root, Offline(), "--collect-only", "-q", "-p", "no:xdist")
    out = result.stdout
    assert "broken.json: field 'queries[0].should_trigger'" in out and "JSON boolean" in out
    assert "field 'evals[1].expectations'" in out
    assert "evals/triggers/git-bisect.json::haiku::q1::trigger" in out
    assert ("skills/python-packaging/evals/evals.json::python-packaging-eval-1::haiku::"
            "with-skill::r1::must-1") in out
    assert "python-packaging-eval-2::haiku" not in out
    assert result.returncode != 0  # bad input is not a clean run


@pytest.mark.parametrize("nodeid", ["evals/triggers/git-bisect.json::haiku::q1::trigger",
                                    "evals/triggers/git-bisect.json::haiku::q1::r2::trigger"])
def test_a_trigger_run_is_its_own_unit_of_work_under_xdist(nodeid: str) -> None:
    """The run scheduler groups a lift run's rubric items and checks by the run; a trigger
    run is one item, which the scheduler's fallback (xdist's loadscope: the id up to its last
    ``::``) keeps as its own scope — never merged with the family's lift runs."""
    from pytest_skilllift.run.matrix import run_scope

    by_path = {"evals/test-prompts/git-bisect.json": "git-bisect", "git-bisect.json":
               "git-bisect"}
    assert run_scope(nodeid, by_path, ["git-bisect"]) is None
    assert nodeid.rsplit("::", 1)[0] == nodeid.removesuffix("::trigger")


@pytest.mark.slow
def test_trigger_and_eval_items_are_selected_by_family(tmp_path: Path) -> None:
    """Like a prompt file's items, trigger items (whatever their file is named) and
    skill-creator eval items carry the family as a -k keyword and the skill_lift marker."""
    root = make_project(tmp_path, {
        "bisect-more": {"skill": "git-bisect", "queries": [{"query": "Which commit broke it?",
                                                            "should_trigger": True}]},
        "python-packaging": [{"query": "Publish to PyPI", "should_trigger": True}],
    })
    evals = root / "skills" / "git-bisect" / "evals"
    evals.mkdir()
    (evals / "evals.json").write_text(json.dumps({"evals": [
        {"id": 1, "prompt": "Find the bad commit", "expectations": ["Uses git bisect"]}]}))

    class Offline:
        base_url = "http://127.0.0.1:9"

    for selector in (("-k", "git-bisect"), ("-m", "skill_lift(family='git-bisect')")):
        result = run_pytest(root, Offline(), "--collect-only", "-q", "-p", "no:xdist",
                            *selector)
        ids = [ln for ln in result.stdout.splitlines() if "::" in ln]
        assert result.returncode == 0, result.stdout
        assert "evals/triggers/bisect-more.json::haiku::q1::trigger" in ids
        assert ("skills/git-bisect/evals/evals.json::git-bisect-eval-1::haiku::with-skill::"
                "r1::must-1") in ids
        assert not any("python-packaging" in i for i in ids), selector
