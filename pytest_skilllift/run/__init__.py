"""The life of one run: prompt files, the engine that generates and grades a run once, the
transcript, the audit.

Import-free on purpose: the heavy imports (anthropic, numpy, matplotlib, docker) stay lazy.
"""
