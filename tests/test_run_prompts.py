"""Prompt files: the qdrant format is read as-is; every bad file names file, field and fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skilllift.run.prompts import PromptError, is_heldout, load_prompt, skill_path_from_url

GOOD = {
    "name": "p1",
    "product_area": "area",
    "skill_url": "https://skills.example.org/fam/leaf/SKILL.md",
    "prompt": "How?",
    "rubric": [
        {"type": "must", "text": "does A"},
        {"type": "must", "text": "does B"},
        {"type": "bonus", "text": "does C"},
        {"type": "avoid", "text": "does D"},
    ],
}


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    (root / "fam" / "leaf").mkdir(parents=True)
    (root / "fam" / "SKILL.md").write_text("---\nname: fam\n---\n")
    (root / "fam" / "leaf" / "SKILL.md").write_text("---\nname: leaf\n---\n")
    return root


def write(tmp_path: Path, data: object, name: str = "p.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_good_prompt_loads_with_per_type_indices(tmp_path: Path, skills: Path) -> None:
    spec = load_prompt(write(tmp_path, GOOD), skills)
    assert spec.name == "p1" and spec.family == "fam" and spec.leaf == "fam/leaf/SKILL.md"
    assert [i.key for i in spec.rubric] == ["must-1", "must-2", "bonus-1", "avoid-1"]


def test_site_prefix_is_stripped_when_configured(tmp_path: Path, skills: Path) -> None:
    spec = load_prompt(write(tmp_path, GOOD), skills, site="https://skills.example.org/")
    assert spec.skill_path == "fam/leaf/SKILL.md"
    with pytest.raises(PromptError, match="configured site"):
        load_prompt(write(tmp_path, GOOD), skills, site="https://other.site/")


def test_skill_key_is_accepted_instead_of_url(tmp_path: Path, skills: Path) -> None:
    data = {**GOOD, "skill": "fam"}
    del data["skill_url"]
    assert load_prompt(write(tmp_path, data), skills).skill_path == "fam/SKILL.md"


@pytest.mark.parametrize(
    ("mutate", "field", "fix"),
    [
        (lambda d: "{not json", "(file)", "correct the JSON syntax"),
        (lambda d: [1, 2], "(file)", "wrap the prompt"),
        (lambda d: {k: v for k, v in d.items() if k != "prompt"}, "prompt", 'add "prompt"'),
        (lambda d: {**d, "name": ""}, "name", "set it to"),
        (lambda d: {**d, "rubric": []}, "rubric", "add at least one must"),
        (lambda d: {**d, "rubric": [{"type": "should", "text": "x"}]}, "rubric[0].type",
         "must, bonus, avoid"),
        (lambda d: {**d, "rubric": [{"type": "must", "text": " "}]}, "rubric[0].text", "write"),
        (lambda d: {**d, "rubric": [{"type": "bonus", "text": "x"}]}, "rubric", "must item"),
        (lambda d: {**d, "skill_url": "https://skills.example.org/nope/SKILL.md"}, "skill_url",
         "skill_lift_skills"),
        (lambda d: {**d, "skill_url": "https://skills.example.org/../../etc/SKILL.md"},
         "skill_url", "under the skills root"),
        (lambda d: {k: v for k, v in d.items() if k != "skill_url"}, "skill_url", "add"),
    ],
)
def test_bad_files_name_file_field_and_fix(tmp_path: Path, skills: Path, mutate: object,
                                           field: str, fix: str) -> None:
    data = mutate(dict(GOOD))  # type: ignore[operator]
    path = write(tmp_path, data)
    with pytest.raises(PromptError) as err:
        load_prompt(path, skills)
    message = str(err.value)
    assert str(path) in message
    assert f"field {field!r}" in message
    assert fix in message


def test_non_utf8_file_is_a_clear_error(tmp_path: Path, skills: Path) -> None:
    path = tmp_path / "p.json"
    path.write_bytes(b'{"name": "\xff"}')
    with pytest.raises(PromptError, match="not UTF-8"):
        load_prompt(path, skills)


def test_heldout_and_url_helpers() -> None:
    assert is_heldout(Path("x/discord-123.json")) and not is_heldout(Path("x/qdrant.json"))
    assert skill_path_from_url("https://h.io/a/b/SKILL.md", "") == "a/b/SKILL.md"
    assert skill_path_from_url("a/SKILL.md", "") == "a/SKILL.md"


def test_real_qdrant_prompts_all_load(reference_data: Path) -> None:
    root = reference_data / "qdrant-skills"
    files = sorted((root / "test-prompts").glob("*.json"))
    assert len(files) == 26
    specs = [load_prompt(f, root / "skills", "https://skills.qdrant.tech/") for f in files]
    assert {s.family for s in specs} >= {"qdrant-scaling", "qdrant-search-quality"}
    assert all(any(i.type == "must" for i in s.rubric) for s in specs)
