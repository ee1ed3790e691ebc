"""The blind LLM judge: the grading protocol (pure), the API client, the shared service under
xdist, calibration.

Import-free on purpose: the heavy imports (anthropic, numpy, matplotlib, docker) stay lazy.
"""
