"""From a week directory to numbers and reports: stats (pure), summarize, scorecard, plots,
compare.

Import-free on purpose: the heavy imports (anthropic, numpy, matplotlib, docker) stay lazy.
"""
