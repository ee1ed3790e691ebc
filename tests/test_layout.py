"""The package's layering, read from its import statements (no module is imported here).

The packages import only along the arrows of docs/architecture.md's table (every import:
top level, function level, ``if TYPE_CHECKING:``); no import cycles between modules either
(lazy ones included; type-only ones checked on their own); pure layers never import pytest.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_skilllift"


# Every test here reads the same ~190 modules: each is parsed and walked once per test
# session (a parse of the package is ≈ 0.9 s of CPU, and seven tests used to pay it each).
@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the module (``ast.walk`` order); the trees are never modified."""
    return tuple(ast.walk(_tree(path)))


def _modules() -> dict[str, Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = f.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = f
    return out


def _imports(path: Path, known: set[str], *, type_only: bool = False) -> set[str]:
    """Project modules ``path`` imports anywhere, except under ``if TYPE_CHECKING:`` (with
    ``type_only``, those too)."""
    found: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            t = node.test
            if not type_only and (getattr(t, "id", None) == "TYPE_CHECKING" or getattr(
                    t, "attr", None) == "TYPE_CHECKING"):
                for n in node.orelse:
                    self.visit(n)
                return
            self.generic_visit(node)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.module:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    found.add(full if full in known else node.module)

        def visit_Import(self, node: ast.Import) -> None:
            found.update(alias.name for alias in node.names)

    Visitor().visit(_tree(path))
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: _imports(f, set(mods)) for m, f in mods.items()}


@pytest.fixture(scope="module")
def typed_graph() -> dict[str, set[str]]:
    """The import graph with the ``if TYPE_CHECKING:`` imports."""
    mods = _modules()
    return {m: _imports(f, set(mods), type_only=True) for m, f in mods.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    project = {m: {d for d in deps if d in graph} for m, deps in graph.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(project[m]):
            if state.get(d) == 1:
                cycles.append([*path[path.index(d):], d])
            elif d not in state:
                visit(d, [*path, d])
        state[m] = 2

    for m in sorted(project):
        if m not in state:
            visit(m, [m])
    return cycles


def test_no_import_cycles(graph: dict[str, set[str]]) -> None:
    assert _cycles(graph) == []


def test_no_type_only_import_cycles(typed_graph: dict[str, set[str]]) -> None:
    """``if TYPE_CHECKING:`` imports count too (a cycle of types is a cycle of concepts): a
    section's renderer is typed by the keys it reads (its own ``Data`` and those of the
    sections it names), not by the whole ``Scorecard`` that ``report/card.py`` makes of them."""
    assert _cycles(typed_graph) == []


#: The one name the package's own modules read from its ``__init__``.
ROOT_NAMES_READ_INSIDE = {"__version__"}
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"
#: A rule of the arrows table: ``name → a, b, c`` (or ``→ nothing``), its reason on the
#: indented lines under it.
_RULE = re.compile(r"^(?P<name>[\w.]+/?)\s+→\s+(?P<deps>.*)$")


def _node(name: str) -> str:
    """``cli/`` / ``config.py`` / ``config`` → ``config`` (a package or a top-level module)."""
    return name.rstrip("/").removesuffix(".py")


@functools.cache
def _arrows() -> dict[str, tuple[frozenset[str], str]]:
    """docs/architecture.md's arrows table — the one source of the package picture: each
    package (or top-level module) → the packages it may import, and why."""
    doc = ARCHITECTURE.read_text(encoding="utf-8")
    block = doc.split("## The layers", 1)[1].split("```", 2)[1]
    rules: dict[str, tuple[frozenset[str], str]] = {}
    name = ""
    for line in block.splitlines():
        if not line.strip():
            continue
        m = _RULE.match(line)
        if m:
            name = _node(m["name"])
            deps = m["deps"].strip()
            allowed = frozenset() if deps == "nothing" else frozenset(
                _node(d.strip()) for d in deps.split(","))
            assert name not in rules, f"docs/architecture.md: {name} has two rules"
            rules[name] = (allowed, "")
        else:
            assert name and line[0].isspace(), f"docs/architecture.md: not a rule: {line!r}"
            allowed, why = rules[name]
            rules[name] = (allowed, f"{why} {line.strip()}".strip())
    return rules


def _imported(path: Path) -> list[tuple[int, str, str]]:
    """Every project import in ``path`` — top level, in functions, under ``TYPE_CHECKING``:
    (line, module, name) where name is the imported name of a ``from X import name``."""
    pkg = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    found: list[tuple[int, str, str]] = []
    for node in _nodes(path):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = pkg[:len(pkg) - node.level + 1]
                module = ".".join([*base, *([module] if module else [])])
            found += [(node.lineno, module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, "") for a in node.names]
    return [f for f in found if f[1].split(".")[0] == "pytest_skilllift"]


def _target(module: str, name: str) -> str | None:
    """The package an import reaches: ``pytest_skilllift.run.engine`` → ``run``;
    ``from pytest_skilllift import trace`` → ``trace``; the root's own names → None."""
    parts = module.split(".")[1:]
    if parts:
        return parts[0]
    sub = PACKAGE / name
    return name if sub.is_dir() or sub.with_suffix(".py").is_file() else None


def _packages() -> set[str]:
    return {p.stem if p.suffix == ".py" else p.name for p in PACKAGE.iterdir()
            if (p.suffix == ".py" or (p / "__init__.py").is_file()
                or any(p.rglob("*.py"))) and p.name != "__pycache__"}


def test_every_package_has_one_rule() -> None:
    """The table names exactly the packages there are, each once."""
    assert set(_arrows()) == _packages()
    unknown = {d for allowed, _ in _arrows().values() for d in allowed} - _packages()
    assert unknown == set()


def test_the_arrows_point_one_way() -> None:
    """The table is a picture of layers: no package reaches itself through the arrows, and
    ``cli/`` and ``plugin/`` — both on top — never import each other."""
    arrows = {name: allowed for name, (allowed, _) in _arrows().items()}
    assert _cycles({n: set(a) for n, a in arrows.items()}) == []
    assert "plugin" not in arrows["cli"] and "cli" not in arrows["plugin"]
    assert not any(top in allowed for name, allowed in arrows.items()
                   for top in ("cli", "plugin") if name not in ("cli", "plugin", "__init__"))


def package_violations() -> list[str]:
    """Each import between packages that the arrows table does not allow, as
    ``file:line: a → b: not allowed (a's rule and reason)``."""
    rules = _arrows()
    found = []
    for f in sorted(PACKAGE.rglob("*.py")):
        rel = f.relative_to(PACKAGE)
        src = rel.with_suffix("").parts[0]
        for line, module, name in _imported(f):
            dst = _target(module, name)
            if dst is None or dst == src:
                continue
            allowed, why = rules.get(src, (frozenset(), "no rule in docs/architecture.md"))
            if dst not in allowed:  # one line per import statement and package reached
                shown = ", ".join(sorted(allowed)) or "nothing"
                found.append(f"pytest_skilllift/{rel.as_posix()}:{line}: {src} → {dst} is not "
                             f"allowed ({src} → {shown}: {why})")
    return list(dict.fromkeys(found))


def test_packages_import_only_what_the_arrows_allow() -> None:
    """Every import of the package — top level, function level, ``if TYPE_CHECKING:`` — goes
    along an arrow of docs/architecture.md's table ("The layers"). No exception list: a
    needed import that is not an arrow means the code lives in the wrong package."""
    violations = package_violations()
    assert violations == [], "\n" + "\n".join(violations)


def test_package_modules_read_only_the_version_from_the_root() -> None:
    """``pytest_skilllift/__init__.py`` is the facade on top; inside, only its version is read."""
    read = {f"{f.relative_to(REPO)}: {a.name}" for f in PACKAGE.rglob("*.py")
            if PACKAGE / "demo" not in f.parents  # a user's code: it reads the public names
            for node in _nodes(f)
            if isinstance(node, ast.ImportFrom) and node.module == "pytest_skilllift"
            for a in node.names if a.name not in ROOT_NAMES_READ_INSIDE}
    assert read == set()


@pytest.mark.parametrize("layer", ["report", "week", "run", "judge", "runners", "testing",
                                   "view", "trace", "skill", "lint", "model", "intervals",
                                   "warm", "config", "agents"])
def test_pure_layers_never_import_pytest(graph: dict[str, set[str]], layer: str) -> None:
    for m, deps in graph.items():
        if m.startswith(f"pytest_skilllift.{layer}"):
            assert not any(d == "pytest" or d.startswith(("pytest.", "_pytest")) for d in deps), m


#: Other projects' private state the package once reached into, and what replaced it.
#: Names with a leading underscore that are public APIs (the standard library documents them).
PUBLIC_UNDERSCORED = frozenset({"_exit", "_replace", "_asdict", "_fields", "_make"})
#: Other projects' private attributes still read, each with why there is no public way
#: (everything else private that the package reads must be defined by the package itself).
PRIVATE_STILL_READ = {
    "_fixtureinfo": "pytest's FuncFixtureInfo has no public accessor, and Function.from_parent's "
                    "documented fixtureinfo parameter takes only one: read to resolve a prompt "
                    "file's fixtures once for its thousands of items (resolved per item "
                    "instead, a 47,568-item collection took 2x the CPU, 16.8 s against 8.2 s: "
                    "benchmarks/README.md 'Public APIs only'), and to see a conftest "
                    "override of skill_lift_judge before batch judging",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _string_arg(node: ast.AST, funcs: tuple[str, ...]) -> str | None:
    """``getattr(x, "_name")``'s name (``funcs``: which builtins)."""
    if (isinstance(node, ast.Call) and getattr(node.func, "id", None) in funcs
            and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)):
        return node.args[1].value
    return None


def _defined_by_the_package() -> set[str]:
    """Every name the package itself defines: functions, classes, assigned names and
    attributes (``self._x = …``, ``setattr``), arguments, import aliases."""
    names: set[str] = set()
    for f in PACKAGE.rglob("*.py"):
        for node in _nodes(f):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.add(node.asname or node.name.rpartition(".")[2])
            elif (name := _string_arg(node, ("setattr",))) is not None:
                names.add(name)
    return names


def test_only_public_apis_of_other_projects() -> None:
    """Read from the code: a private attribute (``x._name``, ``getattr(x, "_name")``) or a
    private import from another project is refused unless the package defines that name
    itself — no list of names caught before."""
    ours = _defined_by_the_package() | PUBLIC_UNDERSCORED
    found = []
    for f in PACKAGE.rglob("*.py"):
        for node in _nodes(f):
            names: list[str] = []
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                names = [node.attr]
            elif (name := _string_arg(node, ("getattr", "hasattr"))) is not None:
                names = [name]
            elif isinstance(node, ast.ImportFrom) and not (node.module or "").startswith(
                    "pytest_skilllift") and node.level == 0:
                names = [a.name for a in node.names]
            found += [f"{f.relative_to(PACKAGE)}:{getattr(node, 'lineno', 0)}: {n}"
                      for n in names if _private(n) and n not in ours
                      and n not in PRIVATE_STILL_READ]
    assert found == []


def test_the_private_reads_left_are_still_needed() -> None:
    """Each name of :data:`PRIVATE_STILL_READ` is still read somewhere (a stale entry goes)."""
    text = "\n".join(f.read_text(encoding="utf-8") for f in PACKAGE.rglob("*.py"))
    assert [n for n in PRIVATE_STILL_READ if not re.search(rf"\.{n}\b|\"{n}\"", text)] == []


def test_no_gc_freeze_in_the_pytest_process() -> None:
    """The garbage collector of the user's pytest process is left as the user had it."""
    found = [f"{f.relative_to(PACKAGE)}:{node.lineno}"
             for f in [*(PACKAGE / "plugin").rglob("*.py"), PACKAGE / "config.py"]
             for node in _nodes(f)
             if isinstance(node, ast.Attribute) and node.attr == "freeze"
             and getattr(node.value, "id", None) == "gc"]
    assert found == []


REPO = PACKAGE.parent
#: Private working notes have names users cannot look up; the text cites public sources.
PRIVATE_REFERENCE = re.compile(r"seeds?[/ _-]?0\d\d|shared/seeds|\bthe seed's\b", re.I)
#: A developer machine's paths (the image's /home/agent is the container's own, not one).
ABSOLUTE_MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|root|Users)/\w")


def _repository_text() -> list[Path]:
    files = [REPO / "README.md", *(REPO / "docs").rglob("*.md"), *PACKAGE.rglob("*.py"),
             *(REPO / "benchmarks").rglob("*.py"), *(REPO / "tests").glob("*.py")]
    return [f for f in files if f.is_file()]


def test_text_cites_public_sources_and_no_machine_paths() -> None:
    found = []
    for f in _repository_text():
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if f.name != "test_layout.py" and (PRIVATE_REFERENCE.search(line)
                                               or ABSOLUTE_MACHINE_PATH.search(line)):
                found.append(f"{f.relative_to(REPO)}:{n}: {line.strip()}")
    assert found == []


#: Constants with one home: each is assigned at module level in exactly one module (the
#: others import it), and each of these values is written in that module only.
DEFINED_ONCE = ("HELDOUT_PREFIX", "JUDGE_MARKER", "CUSTOM_ID_PATTERN", "GRADING_FILES",
                "EPS", "KAPPA_EPS", "AGENT_SKILL_ROOT",
                # a task run's folder names (week/files.py): the runner writes them, the
                # results, the rubric's judge and the viewer read them
                "TASK_FILE", "ARTIFACTS_DIR", "VERIFIER_DIR", "VERIFIER_OUTPUT")
WRITTEN_ONCE = ("discord-", "[skilllift-judge]", r"^[A-Za-z0-9_-]{1,64}$", "skilllift:local",
                "bridge", "claude-opus-5-5", "task.json")


def _module_constants(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    names.add(n.id)
    return names


def _string_values(path: Path) -> set[str]:
    nodes = _nodes(path)
    docstrings = {id(n.body[0].value) for n in nodes
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr)}
    return {n.value for n in nodes if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docstrings}


def test_each_constant_is_defined_once() -> None:
    where_named: dict[str, list[str]] = {name: [] for name in DEFINED_ONCE}
    where_written: dict[str, list[str]] = {value: [] for value in WRITTEN_ONCE}
    for f in sorted(PACKAGE.rglob("*.py")):
        rel = str(f.relative_to(PACKAGE))
        for name in _module_constants(_tree(f)) & set(DEFINED_ONCE):
            where_named[name].append(rel)
        for value in _string_values(f) & set(WRITTEN_ONCE):
            where_written[value].append(rel)
    assert {k: v for k, v in where_named.items() if len(v) != 1} == {}
    assert {k: v for k, v in where_written.items() if len(v) != 1} == {}


def _called(node: ast.AST) -> set[str]:
    return {n.func.id if isinstance(n.func, ast.Name) else n.func.attr
            for n in ast.walk(node) if isinstance(n, ast.Call)
            and isinstance(n.func, (ast.Name, ast.Attribute))}


def test_the_weeks_run_set_is_derived_once() -> None:
    """The week's runs (prompt × model × condition × rep, each with its run id) are made in
    one function, ``run.matrix.prompt_runs``: the matrix (what ``skill_lift_run`` checks are
    parametrized over) and collection (prompt files, skill-creator evals) both call it, so
    the two cannot name different runs."""
    makers = sorted(f"{f.relative_to(PACKAGE).as_posix()}:{fn.name}"
                    for f in PACKAGE.rglob("*.py")
                    for fn in _nodes(f)
                    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and {"RunSpec", "make_run_id"} <= _called(fn))
    assert makers == ["run/matrix.py:prompt_runs"]


def test_one_bootstrap_draw() -> None:
    """Every percentile bootstrap resamples through ``intervals.bootstrap_resamples``: no other
    module draws bootstrap indices itself (``rng.integers(0, n, …)`` over the data's length;
    the A/A noise floor's sign flips and random bits are no resampling)."""
    def draws_indices(call: ast.Call) -> bool:
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "integers"):
            return False
        low, high = [*call.args, None, None][:2]
        return (isinstance(low, ast.Constant) and low.value == 0
                and not (isinstance(high, ast.Constant) and high.value == 2)
                and not (isinstance(high, ast.Attribute) and high.attr == "max"))

    found = sorted({f.relative_to(PACKAGE).as_posix() for f in PACKAGE.rglob("*.py")
                    for node in _nodes(f) if isinstance(node, ast.Call) and draws_indices(node)})
    assert found == ["intervals.py"]
