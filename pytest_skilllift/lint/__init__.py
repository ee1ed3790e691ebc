"""Skill quality at every depth, after PluginEval's evaluation methodology.

Public surface:

* ``skilllift score PATH [--depth quick|standard|deep] [--output text|json] [--threshold N]
  [--week DIR] [--judges N] [--max-spend USD] [--mc-prompts FILE] ...``, ``skilllift certify
  PATH --corpus INDEX``, ``skilllift corpus init DIR`` and ``skilllift compare A B``
  (``lint/cli.py``, ``lint/depth_cli.py``; also ``python -m pytest_skilllift.cli.score``);
* ``pytest --skill-lint [--skill-lint-path=PATH]`` (``lint/plugin.py``, entry point
  ``skilllift_lint``), ini ``skill_lint_threshold`` and ``skill_lint_depth``;
* ``analyze.score_path(path, week_data=None)`` / ``analyze.analyze(load_skill(dir))`` for the
  static layer, ``depth.evaluate(skill, ctx)`` for the model layers, ``fixtures.write_skill``
  to build skills in tests.

Layers: static (``checks``, ``antipatterns``, ``agentskills``), LLM judge (``skill_judge``,
``judge_layer``), Monte Carlo (``montecarlo``), Elo (``elo``); the blend is ``composite``, the
statistics ``depth_stats``, costs and resume ``spend``. Only ``plugin.py`` imports pytest.
See docs/static-analysis.md for every check and formula.
"""
