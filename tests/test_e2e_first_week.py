"""From ``skilllift init`` to a first week: what a new user meets on their own repository.

Placeholder files are one named line (not collection errors), ``-k <skill>`` and a path pick the
prompts written so far, ``init --skill NAME`` scaffolds one skill, every example the scaffolded
``pytest.ini`` carries parses, misspelt required keys name the key meant, and
``--skill-lift-dry-run`` runs the user's own prompts on the scripted stand-in, marked simulated.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

# pytester's inline runs drop the modules a run imported, and numpy refuses a second import in
# one process: the session's summary imports it, so this process imports it once, up front.
import numpy  # noqa: F401
import pytest

from pytest_skilllift.cli import main as cli
from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.report.gates import parse_gate
from pytest_skilllift.run.prompts import (
    PLACEHOLDER,
    PromptError,
    holds_placeholder,
    load_prompt,
    placeholder_files,
    placeholder_line,
)
from pytest_skilllift.run.scaffold import UnknownSkill, scaffold
from pytest_skilllift.run.triggers import load_trigger_file
from pytest_skilllift.runners.claude import bundled_claude

BISECT = "git-bisect"
#: The repository's example conftest.py (wraps the judge in a LoggingJudge).
EXAMPLE_CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(DEMO_PROJECT / "skills", tmp_path / "skills")
    return tmp_path


def write_prompt(root: Path, name: str = BISECT) -> Path:
    """Write the prompt and rubric of one scaffolded prompt file, as a user would."""
    path = root / "evals" / "test-prompts" / f"{name}.json"
    data = json.loads(path.read_text())
    data["prompt"] = "My regression appeared somewhere in the last 200 commits. How do I find it?"
    data["rubric"] = [{"type": "must", "text": "Uses git bisect start, bad and good"},
                      {"type": "must", "text": "Automates the search with git bisect run"},
                      {"type": "avoid", "text": "Suggests checking every commit by hand"}]
    path.write_text(json.dumps(data))
    return path


# -- placeholders ---------------------------------------------------------------------------


def test_placeholder_files_are_found_and_named_in_one_line(project: Path) -> None:
    scaffold(project, project / "skills")
    prompts, triggers = project / "evals/test-prompts", project / "evals/triggers"
    todo = placeholder_files(prompts, triggers)
    assert len(todo) == 4 + 3  # four skills' prompt files, three families' trigger files
    write_prompt(project)
    assert not holds_placeholder(prompts / f"{BISECT}.json")
    todo = placeholder_files(prompts, triggers)
    assert len(todo) == 6
    line = placeholder_line(todo, project, shown=2)
    assert "\n" not in line
    assert line.startswith("skill-lift: 6 files still hold the init placeholder")
    assert ("3 in evals/test-prompts/ (python-packaging, sqlite-performance-locked-database, "
            "+1 more)") in line
    assert "3 in evals/triggers/" in line and PLACEHOLDER in line
    assert placeholder_line([], project) == ""


def test_collection_skips_placeholders_with_one_line_and_selects_written_prompts(
        pytester: pytest.Pytester) -> None:
    root = pytester.path
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    assert cli.main(["init", str(root)]) == 0
    result = pytester.runpytest("--skill-lift", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "error" not in result.stdout.str().lower()
    result.stdout.fnmatch_lines(["skill-lift: 7 files still hold the init placeholder and are "
                                 "not collected: 4 in evals/test-prompts/ (*"])
    write_prompt(root)
    for args in ((), ("-k", BISECT), (f"evals/test-prompts/{BISECT}.json",)):
        result = pytester.runpytest("--skill-lift", "--collect-only", "-q", "-p",
                                    "no:cacheprovider", *args)
        assert result.ret == pytest.ExitCode.OK, (args, result.stdout.str())
        ids = [line for line in result.stdout.lines if "::" in line]
        assert ids and all(line.startswith(f"evals/test-prompts/{BISECT}.json::")
                           for line in ids), args
        result.stdout.fnmatch_lines(["*6 files still hold the init placeholder*"])


def test_lint_evals_counts_placeholders_instead_of_linting_them(project: Path) -> None:
    from pytest_skilllift.lint.evals import lint_evals

    scaffold(project, project / "skills")
    res = lint_evals(prompts_dir=project / "evals/test-prompts", skills_root=project / "skills",
                     triggers_dir=project / "evals/triggers", base=project)
    assert (res.placeholders, res.files, res.findings) == (7, 0, [])
    assert res.summary().endswith("; 7 still the init placeholder, not linted")


# -- init --skill -----------------------------------------------------------------------------


def test_init_skill_scaffolds_one_skill(project: Path) -> None:
    out = scaffold(project, project / "skills", ("git-bisect",))
    assert out.skills == ["git-bisect"]
    assert sorted(p.name for p in (project / "evals/test-prompts").iterdir()) == [
        "git-bisect.json"]
    # a family takes all its skills
    out = scaffold(project, project / "skills", ("sqlite-performance",))
    assert out.skills == ["sqlite-performance", "sqlite-performance/locked-database"]


def test_init_skill_unknown_names_the_close_one(project: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UnknownSkill, match="did you mean 'git-bisect'"):
        scaffold(project, project / "skills", ("git-bisec",))
    assert not (project / "evals").exists()  # nothing written before the refusal
    assert cli.main(["init", str(project), "--skill", "gti-bisect"]) == 2
    err = capsys.readouterr().err
    assert "no skill 'gti-bisect'" in err and "git-bisect, python-packaging" in err
    assert cli.main(["init", str(project), "--skill", "git-bisect"]) == 0
    assert "1 skill(s) under" in capsys.readouterr().out


# -- every example the scaffolded pytest.ini carries parses ----------------------------------


def test_every_commented_example_in_the_scaffolded_ini_parses(pytester: pytest.Pytester) -> None:
    root = pytester.path
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    scaffold(root, root / "skills")
    write_prompt(root)
    ini = root / "pytest.ini"
    examples = re.findall(r"^# (skill_lift_\w+ = .+)$", ini.read_text(), re.MULTILINE)
    assert {e.split(" = ")[0] for e in examples} >= {"skill_lift_models", "skill_lift_gates"}
    for example in examples:  # each gate example is a known metric with a valid threshold
        key, value = example.split(" = ", 1)
        if key == "skill_lift_gates":
            parse_gate(value)
    # all of them at once, through the real option parser: no usage error
    ini.write_text(re.sub(r"^# (skill_lift_\w+ = )", r"\1", ini.read_text(), flags=re.MULTILINE))
    result = pytester.runpytest("--skill-lift", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    assert "sonnet" in result.stdout.str() and "haiku" in result.stdout.str()


# -- did you mean -----------------------------------------------------------------------------


def _demo_prompt() -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (DEMO_PROJECT / "evals/test-prompts/git-bisect-regression.json").read_text())
    return data


@pytest.mark.parametrize(("edit", "field", "hint"), [
    (lambda d: d.update(rubrik=d.pop("rubric")), "rubric", "found 'rubrik': did you mean "
                                                           "'rubric'?"),
    (lambda d: d.update(promt=d.pop("prompt")), "prompt", "did you mean 'prompt'?"),
    (lambda d: d["rubric"][0].update(txt=d["rubric"][0].pop("text")), "rubric[0].text",
     "found 'txt': did you mean 'text'?"),
    (lambda d: d["rubric"][0].update(tpye=d["rubric"][0].pop("type")), "rubric[0].type",
     "found 'tpye': did you mean 'type'?"),
    (lambda d: d["rubric"][0].update(type="muts"), "rubric[0].type", "did you mean 'must'?"),
])
def test_a_misspelt_required_key_names_the_key_meant(tmp_path: Path, edit: object, field: str,
                                                     hint: str) -> None:
    data = _demo_prompt()
    edit(data)  # type: ignore[operator]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PromptError) as err:
        load_prompt(path, DEMO_PROJECT / "skills")
    assert err.value.field == field and hint in str(err.value)


def test_a_misspelt_trigger_key_names_the_key_meant(tmp_path: Path) -> None:
    path = tmp_path / "git-bisect.json"
    path.write_text(json.dumps({"skill": "git-bisect", "queries": [
        {"query": "find the commit that broke it", "should_triger": True}]}))
    with pytest.raises(PromptError, match=r"found 'should_triger': did you mean "
                                          r"'should_trigger'\?"):
        load_trigger_file(path, DEMO_PROJECT / "skills")
    path.write_text(json.dumps({"skill": "git-bisect", "querys": []}))
    with pytest.raises(PromptError, match=r"did you mean 'queries'\?"):
        load_trigger_file(path, DEMO_PROJECT / "skills")
    path.write_text(json.dumps({"skill": "git-bisect", "queries": [
        {"qeury": "find the commit that broke it", "should_trigger": True}]}))
    with pytest.raises(PromptError, match=r"did you mean 'query'\?"):
        load_trigger_file(path, DEMO_PROJECT / "skills")


# -- the keyless dry run ---------------------------------------------------------------------


@pytest.mark.cli
@pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing")
def test_dry_run_runs_your_prompts_on_the_stand_in_marked_simulated(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    root = pytester.path
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    assert cli.main(["init", str(root), "--skill", BISECT]) == 0
    write_prompt(root)
    with (root / "pytest.ini").open("a") as fh:  # one label, one rep: two runs
        fh.write("skill_lift_models = sonnet=claude-sonnet-4-5\nskill_lift_reps = 1\n")
    # the repository's example conftest applies to your own prompts' sessions
    shutil.copy(EXAMPLE_CONFTEST, root / "conftest.py")
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    result = pytester.runpytest_subprocess("--skill-lift-dry-run", "-p", "no:cacheprovider",
                                           "-p", "no:randomly", timeout=300)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, out
    weeks = [p for p in (root / "evals" / "weekly-dry-run").iterdir() if p.is_dir()]
    assert len(weeks) == 1 and not (root / "evals" / "weekly").exists()
    week = weeks[0]
    # the user's prompt ran, not the demo's packaged ones
    assert {p.name for p in week.iterdir() if p.is_dir() and p.name.startswith(BISECT)} and \
        not any(p.name.startswith("git-bisect-regression") for p in week.iterdir())
    assert "DRY RUN: your prompts on the scripted stand-in" in out
    last = out.rstrip().splitlines()[-1]
    assert last.startswith("dry run (simulated")
    # one count of the runs (the coverage line), and where the history file went
    assert "graded 2 of 2 runs; dropped" not in out
    assert "coverage: graded 2 of 2 runs this session" in out
    assert f"history: {root / 'evals' / 'weekly-dry-run' / 'scorecard-history.csv'}" in last
    card = (week / "scorecard.md").read_text()
    assert card.startswith("> **DRY RUN — simulated")
    assert "judge overridden (a `skill_lift_judge` fixture in conftest.py) for 2 of 2" in card
    # simulated money is labelled simulated, in the progress line and the scorecard
    assert "spent $" not in out and re.search(r"simulated \$\d+\.\d\d \(nothing paid\)", out)
    assert "**Spend (simulated $: the scripted stand-in's prices, nothing was paid" in card
    assert "actual $ spent" not in card
    # no published skills site configured (init's prompts name the skill by path): the site
    # sections are left out, and week.json says so
    assert json.loads((week / "week.json").read_text())["skills_site"] == ""
    assert "baseline self-served" not in card and "published site" not in card
    assert "DRY RUN — simulated" in (week / "view" / "index.html").read_text()


def test_dry_run_and_demo_together_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--skill-lift-dry-run", "--skill-lift-demo", "--collect-only",
                                "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--skill-lift-demo runs the package's own prompts and "
                                 "--skill-lift-dry-run runs yours*"])


def test_the_progress_line_labels_simulated_money() -> None:
    from pytest_skilllift.plugin.progress import Progress

    p = Progress(total=1, simulated=True)
    p.add({"run_id": "r1", "status": "ok", "gen_cost": 0.5, "judge_cost": 0.25})
    assert "· simulated $0.75 (nothing paid) ·" in p.line() and "spent" not in p.line()
    assert "· spent $0.75 ·" in Progress(total=1, runs=p.runs).line()


# -- a demo from a clone looks like a demo from the wheel -------------------------------------


def test_a_project_s_testpaths_are_not_the_demo_s(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "conftest.py").write_text("")
    result = pytester.runpytest("--skill-lift-demo", "--collect-only", "-q", "-p",
                                "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "testpaths" not in result.stdout.str()
    assert "git-bisect-regression.json::" in result.stdout.str()


def test_this_repository_s_test_rules_stay_out_of_a_skill_lift_session() -> None:
    from tests import conftest

    class Config:
        def __init__(self, **on: bool) -> None:
            self.on = on

        def getoption(self, name: str, default: bool = False) -> bool:
            return self.on.get(name, default)

    assert conftest._measuring(Config(skill_lift_demo=True))  # type: ignore[arg-type]
    assert conftest._measuring(Config(skill_lift_dry_run=True))  # type: ignore[arg-type]
    assert not conftest._measuring(Config())  # type: ignore[arg-type]


def test_the_skills_site_host_recorded_for_the_week() -> None:
    from types import SimpleNamespace

    from pytest_skilllift.plugin.ci import SessionVerdicts

    def verdicts(site: str, *urls: str) -> SessionVerdicts:
        runs = [SimpleNamespace(prompt=SimpleNamespace(skill_url=u)) for u in urls]
        return SessionVerdicts(SimpleNamespace(site=site),  # type: ignore[arg-type]
                               lambda: SimpleNamespace(runs=runs))  # type: ignore[arg-type,return-value]

    assert verdicts("", "", "")._site_host() == ""  # init's prompts: a path, no site
    assert verdicts("", "https://skills.example.org/a/SKILL.md")._site_host() == \
        "skills.example.org"
    assert verdicts("https://skills.qdrant.tech/", "")._site_host() == "skills.qdrant.tech"


@pytest.mark.cli
@pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing")
def test_the_demo_in_a_clone_is_not_judged_by_the_example_conftest(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # A clone's root holds the example conftest.py; the demo there reads as from the wheel
    # (no conftest): the configured judge, "not overridden".
    shutil.copy(EXAMPLE_CONFTEST, pytester.path / "conftest.py")
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    result = pytester.runpytest_subprocess("--skill-lift-demo", "-k", "git-bisect and haiku",
                                           "--skill-lift-reps=1", "-p", "no:cacheprovider",
                                           "-p", "no:randomly", timeout=300)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, out
    weeks = [p for p in (pytester.path / "evals" / "weekly-demo").iterdir() if p.is_dir()]
    assert len(weeks) == 1
    card = (weeks[0] / "scorecard.md").read_text()
    assert "judge: the configured one (`skill_lift_judge` not overridden)" in card
    assert "judge overridden" not in card + out
    assert not json.loads((weeks[0] / "week.json").read_text()).get("judge_overrides")
