"""Arm leakage: an answer that says which arm it came from, and the mask the judge sees.

SCORING.md requires a blind judge: the request carries only the prompt, the answer and the
rubric. But an answer can unblind it on its own — "Following the sqlite-performance skill…",
"according to the installed skill", "as SKILL.md says" — and a judge that knows the arm may
grade it differently. :func:`mask_answer` finds such spans (:func:`leak_spans`) and replaces
each with :data:`MASK`; :class:`MaskingGrader` grades the masked answer (so the evidence
quotes are checked against the text the judge saw) and records how many spans it found and
whether it masked them (``JudgeResult.arm_leaks`` / ``masked``: grades.json's ``arm_leaks``
and ``judge_mask``, counted per arm in the scorecard's Judge section).

What counts, in both arms alike (a no-skill answer is masked the same way):

* a skill family's directory name (every family of the skills root, whole word,
  case-insensitive: ``sqlite-performance``), with a following "skill" when there is one; a
  name that is a plain word (``fusion``) only when "skill" follows it ("the fusion skill"),
  since alone it is the answer's own vocabulary;
* skill phrasing: ``SKILL.md``; "installed / loaded / available / provided / bundled
  skill(s)"; "the / this / that / my skill" (the skill as a source).

``--skill-lift-judge-mask=off`` sends the answer as written and still counts the spans.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence

from pytest_skilllift.judge.protocol import Grader
from pytest_skilllift.model import JudgeResult, RubricItem

__all__ = ["MASK", "MaskingGrader", "leak_pattern", "leak_spans", "mask_answer"]

#: What a leaking span becomes in the text the judge sees.
MASK = "[masked]"

_PHRASES = (
    r"SKILL\.md",
    r"(?:installed|loaded|available|provided|bundled)\s+(?:agent\s+)?skills?",
    r"(?:the|this|that|my)\s+skill(?:'s)?",
)


def leak_pattern(families: Iterable[str]) -> re.Pattern[str]:
    """One case-insensitive pattern for the families' names and the skill phrasing."""
    names = sorted({f for f in families if f.strip()}, key=len, reverse=True)
    # A name that is an identifier (sqlite-performance) is masked alone; a plain word
    # (fusion, docker) only as "the fusion skill": alone it is the answer's own vocabulary.
    family = [rf"(?:the\s+)?{re.escape(n)}" + (r"(?:\s+skill(?:'s)?)?" if re.search(r"[-_.]", n)
                                                else r"\s+skill(?:'s)?") for n in names]
    return re.compile(r"(?<![\w-])(?:" + "|".join([*family, *_PHRASES]) + r")(?![\w-])",
                      re.IGNORECASE)


def leak_spans(answer: str, families: Iterable[str]) -> list[str]:
    """The spans of ``answer`` that name a family or speak of the skill, in order."""
    return [m.group(0) for m in leak_pattern(families).finditer(answer)]


def mask_answer(answer: str, families: Iterable[str]) -> tuple[str, int]:
    """``(answer with each leaking span replaced by MASK, spans replaced)``."""
    return leak_pattern(families).subn(MASK, answer)


class MaskingGrader:
    """A grader that masks arm-revealing spans before ``inner`` sees the answer (``mask``
    on) or only counts them (off); the result records both (module docs)."""

    def __init__(self, inner: Grader, families: Sequence[str], *, mask: bool = True) -> None:
        self.inner = inner
        self.families = tuple(families)
        self.mask = mask
        self._pattern = leak_pattern(self.families)

    @property
    def model(self) -> str:
        """The wrapped judge's model."""
        return self.inner.model

    def __repr__(self) -> str:
        return f"MaskingGrader({self.inner!r}, mask={self.mask})"

    def prepare(self) -> None:
        """Prepare the wrapped judge, when it has a ``prepare``."""
        prepare = getattr(self.inner, "prepare", None)
        if callable(prepare):
            prepare()

    def grade(self, prompt_text: str, answer: str, items: Sequence[RubricItem],
              seed: int | str) -> JudgeResult:
        """Grade through the wrapped judge, the answer's arm tells masked when masking is
        on (their count is in ``arm_leaks`` either way)."""
        masked, spans = self._pattern.subn(MASK, answer)
        result = self.inner.grade(prompt_text, masked if self.mask else answer, items, seed)
        return dataclasses.replace(result, arm_leaks=spans, masked=self.mask and spans > 0)
