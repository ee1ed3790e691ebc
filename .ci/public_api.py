"""The package's public API: what lacks a docstring, and which signatures still say ``Any``.

    python .ci/public_api.py            # both lists, then their counts; status 1 if a
                                        # docstring is missing
    python .ci/public_api.py --any      # only the signatures with ``Any``

Public means: a module whose path has no part starting with ``_`` (``__init__`` counts as
public), and in it a function, class or method whose name does not start with ``_``, at
module or class level (a function defined inside a function is not API). A dunder method
other than ``__init__`` is the language's protocol, documented by Python.

A docstring is read with :func:`inspect.getdoc`, so an override inherits its base class's
(``repr_failure``, ``runtest`` of a pytest node; a ``Protocol``'s methods), and a property's
is its getter's. Hook implementations (``pytest_*``) are documented by their hookspecs
(pytest's, xdist's, or ``plugin/hookspecs.py``): they are listed apart and do not fail.

``Any`` is read from the annotations as written (``ast``): a parameter or return whose
annotation mentions ``Any`` anywhere (``dict[str, Any]`` too). Not every one is a loose
type — a JSON body, an SDK or docker-py object, pytest's private node types are honestly
``Any`` — so this lists them for a reviewer and never fails on them.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_skilllift"
#: Files that are not modules of the package: the demo's task verifier runs inside the
#: task's container with its own ``tests/`` layout.
NOT_MODULES = ("demo/evals/tasks/",)


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if any(part in str(rel) for part in NOT_MODULES):
            continue
        parts = rel.with_suffix("").parts
        if any(p.startswith("_") and p not in ("__init__", "__main__") for p in parts):
            continue
        if parts[-1] == "__main__":
            continue
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def _public(name: str) -> bool:
    return not name.startswith("_") or name == "__init__"


def _mentions_any(node: ast.expr | None) -> bool:
    return node is not None and any(
        (isinstance(n, ast.Name) and n.id == "Any")
        or (isinstance(n, ast.Attribute) and n.attr == "Any") for n in ast.walk(node))


def any_signatures(path: Path, rel: str) -> Iterator[str]:
    """``file:line qualname [param: annotation, -> annotation]`` for every public def whose
    signature mentions ``Any``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def visit(node: ast.AST, scope: list[str]) -> Iterator[str]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef) and not child.name.startswith("_"):
                yield from visit(child, [*scope, child.name])
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and _public(
                    child.name):
                a = child.args
                params = [*a.posonlyargs, *a.args, *a.kwonlyargs,
                          *([a.vararg] if a.vararg else []), *([a.kwarg] if a.kwarg else [])]
                loose = [f"{p.arg}: {ast.unparse(p.annotation)}" for p in params
                         if p.annotation is not None and _mentions_any(p.annotation)]
                if child.returns is not None and _mentions_any(child.returns):
                    loose.append(f"-> {ast.unparse(child.returns)}")
                if loose:
                    yield f"{rel}:{child.lineno} {'.'.join([*scope, child.name])} " \
                          f"[{', '.join(loose)}]"

    yield from visit(tree, [])


def missing_docstrings(module_name: str, path: Path, rel: str) -> Iterator[tuple[str, bool]]:
    """``(file:line qualname, is_hook)`` of every public function, class or method defined
    in the module (not imported into it) whose docstring, inherited ones included, is empty."""
    module = importlib.import_module(module_name)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            lines.setdefault(node.name, node.lineno)

    def where(name: str, obj: object) -> str:
        line = getattr(getattr(obj, "__code__", None), "co_firstlineno", None)
        return f"{rel}:{line or lines.get(name.rsplit('.', 1)[-1], '?')} {name}"

    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module_name:
            continue
        if inspect.isfunction(obj):
            if not inspect.getdoc(obj):
                yield where(name, obj), name.startswith("pytest_")
        elif inspect.isclass(obj):
            if not (obj.__doc__ or "").strip():  # not inherited: a class says what it is
                yield where(name, obj), False
            for attr, value in vars(obj).items():
                if not _public(attr) or (attr.startswith("__") and attr != "__init__"):
                    continue
                if attr == "__init__":
                    continue  # the class's docstring documents its constructor
                func = value.fget if isinstance(value, property) else value
                if isinstance(func, (staticmethod, classmethod)):
                    func = func.__func__
                if not inspect.isfunction(func) or func.__name__ == "<lambda>":
                    continue  # a lambda is a field's default value, not a method
                # getdoc on the attribute as the class serves it: inherited docs count
                doc = inspect.getdoc(getattr(obj, attr, func)) if not isinstance(
                    value, property) else (func.__doc__ or _inherited_property_doc(obj, attr))
                if not (doc or "").strip():
                    yield where(f"{name}.{attr}", func), attr.startswith("pytest_")


def _inherited_property_doc(cls: type, attr: str) -> str:
    for base in cls.__mro__[1:]:
        value = vars(base).get(attr)
        if isinstance(value, property) and value.__doc__:
            return value.__doc__
    return ""


def main(argv: list[str] | None = None) -> int:
    """Print the lists and their counts; status 1 when a docstring is missing."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--any", action="store_true", help="only the signatures with Any")
    mode.add_argument("--docstrings", action="store_true",
                      help="only the public defs without a docstring (what .ci/run checks): "
                           "silent and status 0 when there is none")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    loose: list[str] = []
    missing: list[str] = []
    hooks: list[str] = []
    for module_name, path in _modules():
        rel = str(path.relative_to(ROOT))
        loose += any_signatures(path, rel)
        if not args.any:
            for entry, is_hook in missing_docstrings(module_name, path, rel):
                (hooks if is_hook else missing).append(entry)
    if args.docstrings:
        if missing:
            print(f"== public functions, classes and methods without a docstring: "
                  f"{len(missing)} (docs/architecture.md: every public def says what it does)")
            print("\n".join(missing))
        return 1 if missing else 0
    in_testing = sum(1 for e in loose if e.startswith("pytest_skilllift/testing/"))
    print(f"== public signatures mentioning Any: {len(loose)} "
          f"({in_testing} in testing/, the API stand-ins' JSON bodies)")
    print("\n".join(loose))
    if args.any:
        return 0
    print(f"== hook implementations without a docstring of their own: {len(hooks)} "
          "(documented by their hookspecs)")
    print("\n".join(hooks))
    print(f"== public functions, classes and methods without a docstring: {len(missing)}")
    print("\n".join(missing))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
