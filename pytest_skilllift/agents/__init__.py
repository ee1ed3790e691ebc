"""The agent CLIs a model label may name, one module each, behind :mod:`.registry`.

Each module (``claude_code``, ``codex``, ``gemini_cli``, ``opencode``) is the whole of one
agent: its package and pinned version, binary, key and base-URL variables, the command line
and config files of a headless run, where it finds installed skills, its skill-listing and
event-stream readers, its outage messages, how the preflight asks its API about a model
(``model_probe``), its image layout and its models' prices.
Everything else (runners, stream parsing, provenance, help texts, ``.ci/run``'s pins) reads
them from ``registry.AGENTS``; docs/architecture.md "Where to add an agent". Pure data and
pure functions: no I/O.
"""
