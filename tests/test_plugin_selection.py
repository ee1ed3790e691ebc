"""Selecting one skill and narrowing checks, on the real qdrant/skills prompt tree.

Collection only (no run, no API call): ``qdrant-scaling`` has eight prompts, five of which do
not carry the family in their name (``qdrant-minimize-latency``, ``qdrant-vertical-scaling``…),
so ``-k qdrant-scaling`` must select by the family keyword, not by the prompt name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skilllift.runners.claude import bundled_claude

DATA = Path(__file__).resolve().parent / "fixtures" / "data" / "qdrant-skills"

pytestmark = pytest.mark.skipif(bundled_claude() is None,
                                reason="claude-agent-sdk (bundled CLI) missing")

CHECKS = '''
import pytest


def test_every_run(skill_lift_run):
    pass


@pytest.mark.skill_lift(prompts=["qdrant-s*", "qdrant-edge"], conditions="with-skill",
                        models="haiku")
def test_narrowed(skill_lift_run):
    pass
'''


def family_of(prompt: Path) -> str:
    url = json.loads(prompt.read_text())["skill_url"]
    assert isinstance(url, str), prompt
    return url.removeprefix("https://skills.qdrant.tech/").split("/", 1)[0]


PROMPTS = sorted((DATA / "test-prompts").glob("*.json"))
FAMILY = {p.stem: family_of(p) for p in PROMPTS}
SCALING = {name for name, fam in FAMILY.items() if fam == "qdrant-scaling"}
RUBRIC = {p.stem: len(json.loads(p.read_text())["rubric"]) for p in PROMPTS}


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-collect-only")
    pytester.makeini(f"[pytest]\nskill_lift_prompts = {DATA / 'test-prompts'}\n"
                     f"skill_lift_skills = {DATA / 'skills'}\n"
                     "skill_lift_site = https://skills.qdrant.tech/\n")
    (pytester.path / "evals" / "checks").mkdir(parents=True)
    (pytester.path / "evals" / "checks" / "test_team.py").write_text(CHECKS)
    return pytester


def collected(project: pytest.Pytester, *args: str) -> list[str]:
    result = project.runpytest_subprocess("--skill-lift", "-p", "no:cacheprovider",
                                          "--collect-only", "-q", *args)
    assert result.ret == 0, result.stdout.str()
    return [line for line in result.stdout.lines if "::" in line and " " not in line]


def prompt_of(nodeid: str) -> str:
    if "[" in nodeid:
        return nodeid.split("[", 1)[1].split("::", 1)[0]
    return Path(nodeid.split("::", 1)[0]).stem


def test_the_fixture_tree_is_shaped_like_the_problem() -> None:
    # Most of the family's prompts do not name it, and no prompt outside it does.
    assert len(SCALING) == 8
    assert sum(1 for name in SCALING if "qdrant-scaling" not in name) == 5
    assert all("qdrant-scaling" not in n for n, f in FAMILY.items() if f != "qdrant-scaling")


@pytest.mark.parametrize("selector", [("-k", "qdrant-scaling"),
                                      ("-m", "skill_lift(family='qdrant-scaling')")],
                         ids=["k-family", "m-family"])
def test_one_family_selects_exactly_its_prompts(project: pytest.Pytester,
                                                selector: tuple[str, str]) -> None:
    ids = collected(project, *selector)
    rubric = [i for i in ids if "[" not in i and not i.endswith("::invoked")]
    invoked = [i for i in ids if i.endswith("::invoked")]
    checks = [i for i in ids if "::test_every_run[" in i]
    runs_per_prompt = 2 * 2 * 2  # the default two models, two conditions, two reps
    assert {prompt_of(i) for i in rubric} == SCALING
    assert len(rubric) == runs_per_prompt * sum(RUBRIC[p] for p in SCALING) == 464
    assert {prompt_of(i) for i in invoked} == SCALING and len(invoked) == 8 * 2 * 2  # with-skill
    assert {prompt_of(i) for i in checks} == SCALING and len(checks) == 8 * runs_per_prompt
    narrowed = [i for i in ids if "::test_narrowed[" in i]
    assert {prompt_of(i) for i in narrowed} == {p for p in SCALING if p.startswith("qdrant-s")}


def test_the_leaf_skill_is_a_keyword_too(project: pytest.Pytester) -> None:
    ids = collected(project, "-k", "qdrant-scaling/scaling-data-volume")
    # the sub-skill and the prompts under it: horizontal, sliding window, tenant, vertical
    assert {prompt_of(i) for i in ids} == {
        "qdrant-scaling-data-volume", "qdrant-horizontal-scaling", "qdrant-sliding-time-window",
        "qdrant-tenant-scaling", "qdrant-vertical-scaling"}


def test_marker_narrows_a_check_and_ids_name_the_run(project: pytest.Pytester) -> None:
    ids = collected(project, "-k", "test_narrowed")
    expected = sorted(f"evals/checks/test_team.py::test_narrowed[{p}::haiku::with-skill::r{r}]"
                      for p in FAMILY if p.startswith("qdrant-s") or p == "qdrant-edge"
                      for r in (1, 2))
    assert sorted(ids) == expected


def test_a_bad_marker_is_a_collection_error_naming_the_fix(project: pytest.Pytester) -> None:
    (project.path / "evals" / "checks" / "test_bad.py").write_text(
        "import pytest\n\n@pytest.mark.skill_lift(condition='with-skill')\n"
        "def test_typo(skill_lift_run):\n    pass\n")
    result = project.runpytest_subprocess("--skill-lift", "-p", "no:cacheprovider",
                                          "--collect-only", "-q")
    result.stdout.fnmatch_lines([
        "*test_bad.py::test_typo: skill_lift marker: unknown argument(s) condition; use "
        "prompts, families, models, conditions*"])
    assert result.ret != 0


def test_without_the_flag_checks_skip_saying_why(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_check="def test_x(skill_lift_run):\n    pass\n")
    result = pytester.runpytest_subprocess("-rs", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*needs --skill-lift (or --skill-lift-demo)*"])
    result.assert_outcomes(skipped=1)


def test_a_bad_prompt_file_is_named_when_only_checks_run(pytester: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-collect-only")
    prompts = pytester.path / "prompts"
    prompts.mkdir()
    (prompts / "qdrant-edge.json").write_text((DATA / "test-prompts" / "qdrant-edge.json")
                                              .read_text())
    (prompts / "broken.json").write_text('{"name": "broken"')
    pytester.makeini(f"[pytest]\nskill_lift_prompts = prompts\n"
                     f"skill_lift_skills = {DATA / 'skills'}\n")
    pytester.makepyfile(test_checks="def test_x(skill_lift_run):\n    pass\n")
    result = pytester.runpytest_subprocess("--skill-lift", "-p", "no:cacheprovider",
                                           "--collect-only", "-q", "test_checks.py")
    result.stdout.fnmatch_lines([
        "*skill_lift_run: prompt file left out of the checks' runs: *broken.json: field "
        "'(file)': is not valid JSON*"])
    assert sum(1 for line in result.stdout.lines if "test_x[qdrant-edge::" in line) == 8


@pytest.mark.parametrize("item_type", ["must", "bonus", "avoid", "invoked"])
def test_each_item_type_is_a_marker(project: pytest.Pytester, item_type: str) -> None:
    ids = collected(project, "-k", "qdrant-scaling", "-m", item_type)
    assert ids, f"-m {item_type} selected nothing"
    if item_type == "invoked":
        assert all(i.endswith("::invoked") for i in ids) and len(ids) == 8 * 2 * 2
        return
    assert all(i.rsplit("::", 1)[1].startswith(f"{item_type}-") for i in ids)
    per_prompt = {p: sum(1 for item in json.loads((DATA / "test-prompts" / f"{p}.json")
                                                  .read_text())["rubric"]
                         if item["type"] == item_type) for p in SCALING}
    assert len(ids) == 2 * 2 * 2 * sum(per_prompt.values())
