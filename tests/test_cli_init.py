"""``skilllift init``: the scaffold, its placeholders refused until written, and prompt-file
keys that are not prompt-file keys."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_skilllift.cli import main as cli
from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.run.prompts import PLACEHOLDER, PromptError, load_prompt
from pytest_skilllift.run.scaffold import scaffold
from pytest_skilllift.run.triggers import load_trigger_file

QDRANT_SKILLS = Path(__file__).resolve().parent / "fixtures" / "data" / "qdrant-skills" / "skills"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(DEMO_PROJECT / "skills", tmp_path / "skills")
    return tmp_path


def test_one_prompt_per_skill_one_trigger_file_per_family(project: Path) -> None:
    out = scaffold(project, project / "skills")
    assert sorted(out.skills) == ["git-bisect", "python-packaging", "sqlite-performance",
                                  "sqlite-performance/locked-database"]
    prompts = sorted(p.name for p in (project / "evals" / "test-prompts").iterdir())
    assert prompts == ["git-bisect.json", "python-packaging.json", "sqlite-performance-"
                       "locked-database.json", "sqlite-performance.json"]
    triggers = sorted(p.name for p in (project / "evals" / "triggers").iterdir())
    assert triggers == ["git-bisect.json", "python-packaging.json", "sqlite-performance.json"]
    data = json.loads((project / "evals/test-prompts/sqlite-performance-locked-database.json")
                      .read_text())
    assert data["skill"] == "sqlite-performance/locked-database/SKILL.md"
    assert data["name"] == "sqlite-performance-locked-database"
    # the skill's frontmatter name and description are filled in, for the person to write from
    desc = (project / "skills/sqlite-performance/locked-database/SKILL.md").read_text()
    assert "locked-database" in data["prompt"]
    assert any(word in data["prompt"] for word in desc.split() if len(word) > 6)
    assert [i["type"] for i in data["rubric"]] == ["must", "bonus", "avoid"]
    queries = json.loads((project / "evals/triggers/git-bisect.json").read_text())["queries"]
    assert sorted(q["should_trigger"] for q in queries) == [False, True]
    ini = (project / "pytest.ini").read_text()
    for key in ("skill_lift_prompts", "skill_lift_skills", "skill_lift_triggers"):
        assert f"\n{key} = " in ini


def test_placeholders_are_refused_until_written(project: Path) -> None:
    scaffold(project, project / "skills")
    path = project / "evals" / "test-prompts" / "git-bisect.json"
    with pytest.raises(PromptError, match=r"field 'prompt': is still the placeholder"):
        load_prompt(path, project / "skills")
    data = json.loads(path.read_text())
    data["prompt"] = "My regression appeared somewhere in the last 200 commits. How do I find it?"
    path.write_text(json.dumps(data))
    with pytest.raises(PromptError, match=r"field 'rubric\[0\]\.text': is still the placeholder"):
        load_prompt(path, project / "skills")
    for item in data["rubric"]:
        item["text"] = f"a real {item['type']} item"
    path.write_text(json.dumps(data))
    spec = load_prompt(path, project / "skills")
    assert spec.skill_path == "git-bisect/SKILL.md" and len(spec.rubric) == 3
    trig = project / "evals" / "triggers" / "git-bisect.json"
    with pytest.raises(PromptError, match=r"queries\[0\]\.query': is still the placeholder"):
        load_trigger_file(trig, project / "skills")
    tdata = json.loads(trig.read_text())
    for q in tdata["queries"]:
        q["query"] = q["query"].replace(PLACEHOLDER, "").strip()
    trig.write_text(json.dumps(tdata))
    assert len(load_trigger_file(trig, project / "skills").queries) == 2


def test_existing_files_are_kept(project: Path) -> None:
    (project / "pytest.ini").write_text("[pytest]\nmine = 1\n")
    first = scaffold(project, project / "skills")
    assert Path("pytest.ini") in first.kept
    assert (project / "pytest.ini").read_text() == "[pytest]\nmine = 1\n"
    edited = project / "evals" / "test-prompts" / "git-bisect.json"
    edited.write_text("{}")
    again = scaffold(project, project / "skills")
    assert again.written == [] and edited.read_text() == "{}"
    assert len(again.kept) == len(first.written) + 1


def test_a_real_skill_set_scaffolds_prompts_that_collect_after_editing(tmp_path: Path) -> None:
    shutil.copytree(QDRANT_SKILLS, tmp_path / "skills")
    out = scaffold(tmp_path, tmp_path / "skills")
    assert len(out.skills) == len(list((tmp_path / "skills").rglob("SKILL.md")))
    names = [p.stem for p in (tmp_path / "evals" / "test-prompts").glob("*.json")]
    assert len(names) == len(set(names)) == len(out.skills)  # one file per skill, unique


def test_cli_prints_the_next_three_commands(project: Path, capsys: pytest.CaptureFixture[str]
                                            ) -> None:
    assert cli.main(["init", str(project)]) == 0
    out = capsys.readouterr().out
    assert "4 skill(s) under" in out
    assert "next:" in out and "  1. write the prompt and rubric of" in out
    assert "pytest --skill-lift --collect-only" in out and "pytest --skill-lift -k " in out


def test_cli_without_skills_says_where_to_put_them(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["init", str(tmp_path)]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert not (tmp_path / "pytest.ini").exists()


def _prompt(tmp_path: Path, **extra: object) -> Path:
    data = json.loads((DEMO_PROJECT / "evals/test-prompts/git-bisect-regression.json")
                      .read_text())
    data.update(extra)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(("key", "hint"), [("product_aera", "did you mean 'product_area'?"),
                                           ("rubrik", "did you mean 'rubric'?"),
                                           ("colour", "a prompt file holds name, ")])
def test_unknown_keys_warn_with_a_did_you_mean(tmp_path: Path, key: str, hint: str) -> None:
    spec = load_prompt(_prompt(tmp_path, **{key: "x"}), DEMO_PROJECT / "skills")
    assert len(spec.warnings) == 1
    assert f"unknown key {key!r} is ignored; {hint}" in spec.warnings[0]
    assert str(tmp_path / "p.json") in spec.warnings[0]


def test_known_keys_do_not_warn(tmp_path: Path) -> None:
    assert load_prompt(_prompt(tmp_path), DEMO_PROJECT / "skills").warnings == ()


def test_collection_shows_the_unknown_key(pytester: pytest.Pytester) -> None:
    shutil.copytree(DEMO_PROJECT / "skills", pytester.path / "skills")
    prompts = pytester.path / "evals" / "test-prompts"
    prompts.mkdir(parents=True)
    data = json.loads((DEMO_PROJECT / "evals/test-prompts/git-bisect-regression.json")
                      .read_text())
    data["rubrik"] = []
    (prompts / "git-bisect-regression.json").write_text(json.dumps(data))
    result = pytester.runpytest("--skill-lift", "--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*unknown key 'rubrik' is ignored; did you mean 'rubric'?*"])
