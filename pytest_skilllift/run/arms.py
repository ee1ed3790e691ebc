"""The arms a prompt runs under, beyond the lift's no-skill and with-skill.

* ``with-all`` installs every family of the skills root (``run.triggers.skill_families``, as
  ``--skill-lift-triggers-all`` does), the prompt's own first, so a skill's lift alone
  (with-skill) can be told from its lift among its siblings (interference, the wrong skill
  chosen). The runners install ``PromptSpec.installed_families`` for every arm that installs
  skills (``model.SKILL_ARMS``).
* ``no-skill-b`` is a second no-skill arm (nothing installed): an A/A week.
* ``with-skill@REF`` installs the prompt's family as it was at revision REF
  (``run.revisions``): the same install as with-skill from another skills root.

Pure: no pytest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from pytest_skilllift.model import WITH_ALL, PromptSpec, arm_ref


def arm_prompt(spec: PromptSpec, condition: str, families: Sequence[str],
               revision_root: Path | None = None) -> PromptSpec:
    """The prompt as ``condition`` runs it: under ``with-all`` every other family of
    ``families`` is installed beside the prompt's own; under ``with-skill@REF`` its family
    comes from ``revision_root``; every other arm runs it as is."""
    if arm_ref(condition) is not None:
        if revision_root is None:
            raise ValueError(f"{condition}: the revision was not resolved")
        return dataclasses.replace(spec, skills_root=revision_root)
    if condition != WITH_ALL:
        return spec
    return dataclasses.replace(
        spec, sibling_families=tuple(f for f in families if f != spec.family))
