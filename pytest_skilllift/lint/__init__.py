"""Static SKILL.md analysis (PluginEval's Layer 1): no model needed.

Public surface:

* ``skilllift score PATH [--depth quick] [--output text|json] [--threshold N] [--week DIR]``
  and ``skilllift compare A B`` (``lint/cli.py``; also ``python -m pytest_skilllift.lint.cli``);
* ``pytest --skill-lint [--skill-lint-path=PATH]`` (``lint/plugin.py``, entry point
  ``skilllift_lint``), ini ``skill_lint_threshold``;
* ``analyze.score_path(path, week_data=None)`` / ``analyze.analyze(load_skill(dir))`` for
  programmatic use, ``fixtures.write_skill`` to build skills in tests.

Only ``plugin.py`` imports pytest. See docs/static-analysis.md for every check and formula.
"""
