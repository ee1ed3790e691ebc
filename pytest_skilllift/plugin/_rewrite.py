"""Keep pytest's assertion rewriter off this package's own modules (imported first by both
pytest entry points, ``plugin`` and ``lint.plugin``).

pytest rewrites the ``assert`` statements of every module of a distribution that declares a
``pytest11`` entry point, so that a plugin's asserts report like a test's.  This package has
no such asserts (its few are type-narrowing invariants; a rubric item fails with its own
message), but rewriting is not free: the rewriter parses and compiles each module again in
every pytest process, and it can only cache the result when it may write bytecode, which it
never does under ``PYTHONDONTWRITEBYTECODE`` (set on the development machine, and in many CI
images).  At ``-n 4`` that was ~0.15 s of CPU in each of five processes, all of it before the
first run can start (benchmarks/README.md).

pytest has no public way for a plugin to opt out (``PYTEST_DONT_REWRITE`` in a docstring still
parses and compiles the module), so :func:`unmark` removes this package from the names the
rewriting import hook was told to rewrite.  When a pytest version keeps them differently it
finds nothing and changes nothing: the modules are then rewritten as before, only slower.
"""

from __future__ import annotations

import sys

PACKAGE = __name__.partition(".")[0]


def _ours(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def unmark() -> None:
    """Drop this package from every assertion-rewriting import hook's marked names."""
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        if not isinstance(marked, set):
            continue
        for name in [n for n in marked if isinstance(n, str) and _ours(n)]:
            marked.discard(name)
        cache = getattr(finder, "_marked_for_rewrite_cache", None)
        if isinstance(cache, dict):
            for name in [n for n in cache if isinstance(n, str) and _ours(n)]:
                del cache[name]


unmark()
