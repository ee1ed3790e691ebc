"""The package's layering, read from its import statements (no module is imported here).

No import cycles anywhere (lazy, function-level imports included; ``if TYPE_CHECKING:``
blocks excluded); report code never imports runners; pure layers never import pytest.
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


#: The layers, bottom to top: a module imports only modules of its own layer or of lower ones
#: (``if TYPE_CHECKING:`` imports included). A prefix ending in "." is a package; the week's
#: vocabulary (file names, statuses, columns) sits below everything, the rest of ``week/``
#: above the plain data types. ``cli/`` is on top: no other package imports a command.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("week.columns", "week.files"),  # the vocabulary
    ("model", "warm", "intervals"),  # data types, warm-ups, the formulas
    ("lint.skillfile", "lint.security."),  # a SKILL.md read, and its security scan
    ("week.",),  # the ledger, its tables, identity, history
    ("config",),  # options and Settings
    ("runners.",),  # where a run executes
    ("judge.",),  # grading an answer
    ("run.",),  # prompts, one run generated and graded, the week's runs
    ("report.",),  # the scorecard
    ("lint.",),  # static analysis and the model layers on a skill
    ("testing.",),  # the scripted stand-in
    ("view.",),  # skilllift view: the week as an offline site
    ("plugin.",),  # the pytest glue
    ("cli.", "demo."),  # the skilllift commands; the demo project (a user's, shipped as data)
    ("__init__",),  # the public names, each imported from its home on first use
)
#: The one name the package's own modules read from its ``__init__``.
ROOT_NAMES_READ_INSIDE = {"__version__"}


def _layer(module: str) -> int:
    rel = module.removeprefix("pytest_skilllift").removeprefix(".") or "__init__"
    best = [(len(p), i) for i, layer in enumerate(LAYERS) for p in layer
            if rel == p.rstrip(".") or (p.endswith(".") and rel.startswith(p))]
    assert best, f"pytest_skilllift.{rel} is in no layer of LAYERS (tests/test_layout.py)"
    return max(best)[1]


def test_every_module_has_a_layer(graph: dict[str, set[str]]) -> None:
    for m in graph:
        _layer(m)


def test_packages_import_only_lower_layers(typed_graph: dict[str, set[str]]) -> None:
    """The package-level order: ``judge/`` never imports ``run/``, ``run/`` never ``report/``,
    nothing imports ``cli/`` or ``plugin/`` but what is above them."""
    upward = sorted(f"{m} -> {d}" for m, deps in typed_graph.items() for d in deps
                    if d in typed_graph and d != "pytest_skilllift" and _layer(d) > _layer(m))
    assert upward == []


def test_package_modules_read_only_the_version_from_the_root() -> None:
    """``pytest_skilllift/__init__.py`` is the facade on top; inside, only its version is read."""
    read = {f"{f.relative_to(REPO)}: {a.name}" for f in PACKAGE.rglob("*.py")
            for node in _nodes(f)
            if isinstance(node, ast.ImportFrom) and node.module == "pytest_skilllift"
            for a in node.names if a.name not in ROOT_NAMES_READ_INSIDE}
    assert read == set()


def test_report_never_imports_runners(graph: dict[str, set[str]]) -> None:
    for m, deps in graph.items():
        if m.startswith("pytest_skilllift.report"):
            assert not any(d.startswith("pytest_skilllift.runners") for d in deps), m


@pytest.mark.parametrize("layer", ["report", "week", "run", "judge", "runners", "testing",
                                   "view"])
def test_pure_layers_never_import_pytest(graph: dict[str, set[str]], layer: str) -> None:
    for m, deps in graph.items():
        if m.startswith(f"pytest_skilllift.{layer}"):
            assert not any(d == "pytest" or d.startswith(("pytest.", "_pytest")) for d in deps), m


#: Other projects' private state the package once reached into, and what replaced it.
PRIVATE_APIS = {
    "_must_rewrite": "pytest's rewrite hook: PYTEST_DONT_REWRITE in a docstring",
    "_marked_for_rewrite_cache": "pytest's rewrite hook: PYTEST_DONT_REWRITE in a docstring",
    "_split_scope": "xdist's scheduler internals",
    "_sdk_source": "the anthropic SDK's source files: the judge model pinned in config.OPTIONS",
}


def test_only_public_apis_of_other_projects() -> None:
    found = []
    for f in PACKAGE.rglob("*.py"):
        for node in _nodes(f):
            name = (node.attr if isinstance(node, ast.Attribute) else node.name
                    if isinstance(node, ast.FunctionDef) else None)
            if name in PRIVATE_APIS:
                found.append(f"{f.relative_to(PACKAGE)}:{node.lineno}: {PRIVATE_APIS[name]}")
    assert found == []


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


def test_the_architecture_diagram_is_the_layer_order() -> None:
    """docs/architecture.md draws ``LAYERS`` top-down: each line of its layer diagram starts
    with the first entry of a layer (a package as ``name/``), in this order."""
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = doc.split("## The layers", 1)[1].split("```", 2)[1]
    drawn = [line.split()[0] for line in block.splitlines()  # continuation lines: deeper
             if line.strip() and line.split()[0][0].isalpha()
             and len(line) - len(line.lstrip()) <= 8]
    expected = ["pytest_skilllift/__init__.py", *(
        layer[0].replace(".", "/").rstrip("/") + ("/" if layer[0].endswith(".") else "")
        for layer in reversed(LAYERS[:-1]))]
    assert drawn == expected


#: Constants with one home: each is assigned at module level in exactly one module (the
#: others import it), and each of these values is written in that module only.
DEFINED_ONCE = ("HELDOUT_PREFIX", "JUDGE_MARKER", "CUSTOM_ID_PATTERN", "GRADING_FILES",
                "EPS", "KAPPA_EPS", "AGENT_SKILL_ROOT")
WRITTEN_ONCE = ("discord-", "[skilllift-judge]", r"^[A-Za-z0-9_-]{1,64}$", "skilllift:local",
                "bridge", "claude-opus-5-5")


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
