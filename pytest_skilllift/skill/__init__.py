"""A skill on disk: its SKILL.md read (frontmatter, body, files: ``skillfile``) and the
security scan of its family (``security``: the critical findings an install refuses).

Below ``run/`` and ``runners/`` (the scaffold reads skills, an install refuses on the scan)
and ``lint/`` (the static analysis built on both). Import-free, like every ``__init__``.
"""
