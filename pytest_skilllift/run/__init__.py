"""The life of one run: prompt files, the engine that generates and grades a run once, the
week's matrix, regrading, trigger runs (the transcript and the audit are in ``trace/``).

Import-free on purpose: the heavy imports (anthropic, numpy, matplotlib, docker) stay lazy.
"""
