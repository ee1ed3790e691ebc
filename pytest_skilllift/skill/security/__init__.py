"""The security layer of the static analysis: ``skilllift scan`` and the SECURITY lint check.

``rules`` (what is looked for, severity, fix), ``scanner`` (every file of a family read once,
findings with file:line and a redacted match), ``sarif`` (SARIF 2.1.0 for code scanning).
Imports nothing, like every ``__init__`` of the package.
"""
