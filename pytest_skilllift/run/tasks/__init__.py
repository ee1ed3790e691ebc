"""Harbor / SkillsBench tasks: a workspace, files out, a verifier's reward (docs/tasks.md).

``reader`` reads and checks a task directory; ``plan`` derives a task's runs of the week;
``results`` reads what the verifier wrote; ``record`` turns it into the run's status and
items. The container work is ``runners/task_docker.py`` and ``runners/task_image.py``.
"""
