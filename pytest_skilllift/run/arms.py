"""The arms a prompt runs under, beyond the lift's no-skill and with-skill.

* ``with-all`` installs every family of the skills root (``run.triggers.skill_families``, as
  ``--skill-lift-triggers-all`` does), the prompt's own first, so a skill's lift alone
  (with-skill) can be told from its lift among its siblings (interference, the wrong skill
  chosen). The runners install ``PromptSpec.installed_families`` for every arm that installs
  skills (``columns.SKILL_ARMS``).
* ``no-skill-b`` is a second no-skill arm (nothing installed): an A/A week.

Pure: no pytest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pytest_skilllift.model import PromptSpec
from pytest_skilllift.week.columns import WITH_ALL


def arm_prompt(spec: PromptSpec, condition: str, families: Sequence[str]) -> PromptSpec:
    """The prompt as ``condition`` runs it: under ``with-all`` every other family of
    ``families`` is installed beside the prompt's own; every other arm runs it as is."""
    if condition != WITH_ALL:
        return spec
    return dataclasses.replace(
        spec, sibling_families=tuple(f for f in families if f != spec.family))
