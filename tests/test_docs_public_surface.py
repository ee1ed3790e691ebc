"""What the docs teach is the package root's ``__all__``: every ``import`` of the package in
the docs' code and in the shipped demo names the root only, and each name it takes is
exported there (so a user's code never reaches into a module that may move)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest_skilllift

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "pytest_skilllift" / "demo"
#: An import of the package in a docs page's ``python`` code block (a parenthesised list
#: may span lines).
_DOC_IMPORT = re.compile(r"^\s*(?:from\s+(pytest_skilllift[\w.]*)\s+import\s+(\([^)]*\)|.*)"
                         r"|import\s+(pytest_skilllift[\w.]*))", re.M)


def _doc_imports() -> list[tuple[str, str, list[str]]]:
    """(where, module, names) of every package import in the docs' and README's code."""
    found = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
            for m in _DOC_IMPORT.finditer(block):
                module = m.group(1) or m.group(3)
                names = re.findall(r"\w+", m.group(2) or "")
                found.append((page.name, module, names))
    return found


def _demo_imports() -> list[tuple[str, str, list[str]]]:
    found = []
    for path in sorted(DEMO.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "pytest_skilllift"):
                found.append((f"{path.relative_to(REPO)}:{node.lineno}", node.module or "",
                              [a.name for a in node.names]))
            elif isinstance(node, ast.Import):
                found += [(f"{path.relative_to(REPO)}:{node.lineno}", a.name, [])
                          for a in node.names if a.name.startswith("pytest_skilllift")]
    return found


def test_docs_and_demo_import_only_the_package_root() -> None:
    imports = _doc_imports() + _demo_imports()
    assert len(imports) >= 5  # the docs' examples and the demo's checks are read
    deep = [f"{where}: {module}" for where, module, _ in imports if module != "pytest_skilllift"]
    assert deep == [], "import these from pytest_skilllift (add them to its __all__)"
    missing = [f"{where}: {name}" for where, _, names in imports for name in names
               if name not in pytest_skilllift.__all__]
    assert missing == []
