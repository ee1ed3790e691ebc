"""Build skill directories on disk, for tests (ours and users') of the static linter."""

from __future__ import annotations

from pathlib import Path

GOOD_DESCRIPTION = (
    "Sizes vector clusters and checks memory headroom. Use when someone asks how much RAM, "
    "disk or how many nodes a deployment needs, or when a cluster runs out of memory."
)


def write_skill(
    directory: Path,
    *,
    name: str | None = "demo-skill",
    description: str | None = GOOD_DESCRIPTION,
    body: str = "# Demo\n\nDo the thing.\n",
    frontmatter_extra: str = "",
    references: dict[str, str] | None = None,
    assets: dict[str, str] | None = None,
) -> Path:
    """Write ``directory/SKILL.md`` (and optional references/ and assets/ files).

    ``name`` / ``description`` of None leave the key out; values are written as YAML
    double-quoted strings so any text survives. Returns the SKILL.md path.
    """
    directory.mkdir(parents=True, exist_ok=True)
    fm = ["---"]
    if name is not None:
        fm.append(f"name: {_quote(name)}")
    if description is not None:
        fm.append(f"description: {_quote(description)}")
    if frontmatter_extra:
        fm.append(frontmatter_extra.rstrip("\n"))
    fm.append("---")
    path = directory / "SKILL.md"
    path.write_text("\n".join(fm) + "\n" + body, encoding="utf-8")
    for sub, files in (("references", references), ("assets", assets)):
        for rel, text in (files or {}).items():
            target = directory / sub / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    return path


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
