"""Skill quality at every depth, after PluginEval's evaluation methodology.

Public surface:

* ``skilllift score PATH [--depth quick|standard|deep] [--output text|json] [--threshold N]
  [--week DIR] [--judges N] [--max-spend USD] [--mc-prompts FILE] ...``, ``skilllift certify
  PATH --corpus INDEX``, ``skilllift corpus init DIR`` and ``skilllift compare A B``
  (``cli/score.py``, ``cli/certify.py``; also ``python -m pytest_skilllift.cli.score``);
* ``pytest --skill-lint [--skill-lint-path=PATH]`` (``plugin/lint_hooks.py``, entry point
  ``skilllift_lint``), ini ``skill_lint_threshold`` and ``skill_lint_depth``;
* ``analyze.score_path(path, week_data=None)`` / ``analyze.analyze(load_skill(dir))`` (the
  SKILL.md read: ``skill/skillfile.py``) for the static layer, ``depth.evaluate(skill, ctx)``
  for the model layers, ``testing/skill_dirs.write_skill`` to build skills in tests.

Layers: static (``checks``, ``antipatterns``, ``agentskills``), LLM judge (``skill_judge``,
``judge_layer``), Monte Carlo (``montecarlo``), Elo (``elo``); the blend is ``composite``, the
statistics ``depth_stats``, costs and resume ``spend``. None of them imports pytest (the glue
is ``plugin/lint_hooks.py``).
See docs/static-analysis.md for every check and formula.
"""
