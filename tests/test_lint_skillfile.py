"""Markdown scanning and skill discovery details the checks rely on."""

from __future__ import annotations

from pathlib import Path

from pytest_skilllift.skill.skillfile import family_root, find_skill_dirs, load_skill, scan_markdown
from pytest_skilllift.testing.skill_dirs import write_skill

DOC = """# Title
Intro with [a](references/a.md) and `[not](references/inline.md)`.

## Setup [with link](../other/SKILL.md)
````markdown
## Not a heading
[not a link](references/in-code.md)
```
still code: a shorter fence does not close a longer one
```
````
~~~python
x = 1
~~~

### Usage
[ref]: references/defined.md "A title"
[b](references/b.md 'title') ![img](assets/p.png)
```bash
unclosed
[c](references/never.md)
"""


def test_scan_markdown_structure_and_line_numbers() -> None:
    facts = scan_markdown(DOC.splitlines())
    assert facts.headings_all == ["title", "setup [with link](../other/skill.md)", "usage"]
    assert facts.h2_h3 == ["setup [with link](../other/skill.md)", "usage"]
    assert facts.code_blocks == 3
    assert facts.code_languages == ["markdown", "python", "bash"]
    assert facts.unclosed_fence
    assert [(x.target, x.line) for x in facts.links] == [
        ("references/a.md", 2),
        ("../other/SKILL.md", 4),
        ("references/defined.md", 17),
        ("references/b.md", 18),
        ("assets/p.png", 18),
    ]
    assert "x = 1" not in facts.prose_lines and "## Not a heading" not in facts.prose_lines


def test_discovery_nested_family_and_bundles(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root / "fam", name="fam", references={"deep/r.md": "x"})
    write_skill(root / "fam" / "child" / "leaf", name="leaf")
    write_skill(root / "fam" / "references" / "not-a-skill", name="hidden")  # inside a bundle
    (root / ".git").mkdir()
    write_skill(root / ".git" / "x", name="x")
    assert find_skill_dirs(root) == [root / "fam", root / "fam" / "child" / "leaf"]
    leaf = load_skill(root / "fam" / "child" / "leaf")
    # child/ has no SKILL.md: the family root stops at the first gap going up
    assert family_root(root / "fam" / "child" / "leaf") == root / "fam" / "child"
    assert leaf.family == "leaf"
    fam = load_skill(root / "fam")
    assert fam.has_references_dir
    assert sorted(f.rel for f in fam.references) == ["deep/r.md", "not-a-skill/SKILL.md"]
