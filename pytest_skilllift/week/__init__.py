"""The week directory: column and file names, the per-run ledger, fast table reads, history.

Import-free on purpose: the heavy imports (anthropic, numpy, matplotlib, docker) stay lazy.
"""
