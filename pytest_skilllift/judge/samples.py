"""Several independent judge samples per run, a tie-break, the majority, the contested flag.

The qdrant/skills SCORING.md ("Grading: The Judge") runs one judge sample per item and names
its escalation: *two samples, with a third only to break a disagreement* (about 2x the cost,
not 3x), which resolves to a majority and yields the **contested** flag for free; an item
contested week after week is worded ambiguously, and that flag is the rubric-quality backlog.

:class:`SampledJudge` wraps any grader (the API :class:`~pytest_skilllift.judge.client.Judge`,
a worker's remote grader, a user's own) and is itself a grader, so it composes with whatever
sits in front of the judge. Per run:

* ``samples`` calls, each with its own rubric shuffle (sample 1 uses the run's own seed, so
  one sample grades exactly as before; sample ``k`` uses ``<seed>#sample-<k>``);
* every sample's reply goes through the evidence check on its own (a sample whose quote is not
  in the answer votes for the negative verdict under the ``reject`` policy);
* an item whose votes have no strict majority (two samples that disagree) gets **one**
  tie-break call for the run, covering only those items (seed ``<seed>#tie-break``);
* the recorded verdict is the majority; ``contested`` when the votes disagree at all; every
  vote is kept on the item (``ItemVerdict.samples``) for ``grades.json``;
* calls are counted exactly: ``samples`` per run plus one per tie-break (``JudgeResult.calls``).

Errored, never zero (Drupal ai_eval's scoring rules): a sample that fails as a whole is left
out and named in ``notes``; an item with no vote, or still tied after the tie-break, is
ungraded; if every sample failed the run's result is an error, graded again on the next run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_skilllift.judge.protocol import Grader
from pytest_skilllift.model import ItemVerdict, JudgeResult, RubricItem, SampleVote

__all__ = ["TIE_BREAK_SEED", "SampledJudge", "combine_samples", "sample_seed", "tied_items"]

#: Suffix of the tie-break call's seed (its own shuffle, never one of the samples').
TIE_BREAK_SEED = "tie-break"


def sample_seed(seed: int | str, k: int) -> str:
    """The shuffle seed of sample ``k`` (1-based): the run's seed itself for the first."""
    return f"{seed}" if k == 1 else f"{seed}#sample-{k}"


@dataclass
class _Votes:
    """The votes one item collected, in sample order."""

    item: RubricItem
    votes: list[tuple[SampleVote, ItemVerdict]] = field(default_factory=list)

    def tally(self) -> tuple[str | None, bool]:
        """``(majority verdict or None on a tie / no vote, whether the votes disagree)``."""
        counts = Counter(v.verdict for v, _ in self.votes).most_common()
        if not counts:
            return None, False
        contested = len(counts) > 1
        if contested and counts[0][1] == counts[1][1]:
            return None, True
        return counts[0][0], contested


def _vote(sample: int, v: ItemVerdict, *, tie_break: bool = False) -> SampleVote:
    return SampleVote(sample=sample, verdict=v.verdict, evidence=v.evidence,
                      evidence_ok=v.evidence_ok, claimed_verdict=v.claimed_verdict,
                      claimed_evidence=v.claimed_evidence, tie_break=tie_break,
                      reason=v.reason)


def _add(table: dict[RubricItem, _Votes], sample: int, result: JudgeResult,
         *, tie_break: bool = False) -> None:
    for v in result.verdicts:
        if v.item in table:
            table[v.item].votes.append((_vote(sample, v, tie_break=tie_break), v))


def combine_samples(
    items: Sequence[RubricItem],
    results: Sequence[JudgeResult],
    tie_break: JudgeResult | None = None,
    *,
    samples: int | None = None,
) -> JudgeResult:
    """Merge sample results (and an optional tie-break result) into one result.

    Pure: no calls. ``results[k]`` is sample ``k + 1``. Items in rubric order; see the module
    docstring for the rules.
    """
    n = len(results) if samples is None else samples
    table = {item: _Votes(item) for item in items}
    notes: list[str] = []
    for k, result in enumerate(results, start=1):
        if result.error is not None:
            notes.append(f"sample {k} failed: {result.error}")
            continue
        _add(table, k, result)
    if tie_break is not None:
        if tie_break.error is not None:
            notes.append(f"tie-break failed: {tie_break.error}")
        else:
            _add(table, len(results) + 1, tie_break, tie_break=True)
    for extra in (*results, *([tie_break] if tie_break else [])):
        notes.extend(extra.notes)

    verdicts: list[ItemVerdict] = []
    ungraded: list[RubricItem] = []
    for item in items:
        entry = table[item]
        majority, contested = entry.tally()
        if majority is None:
            ungraded.append(item)
            why = ("no sample returned a usable verdict" if not entry.votes else
                   "samples disagree and no tie-break settled it ("
                   + ", ".join(v.verdict for v, _ in entry.votes) + ")")
            notes.append(f"{item.key}: {why}")
            continue
        # The recorded row is the first vote for the majority: its quote backs the verdict.
        chosen = next(v for vote, v in entry.votes if vote.verdict == majority)
        rejected = next(((vote.claimed_verdict, vote.claimed_evidence)
                         for vote, _ in entry.votes if vote.claimed_verdict), ("", ""))
        verdicts.append(ItemVerdict(
            item=item, verdict=chosen.verdict, evidence=chosen.evidence, credit=chosen.credit,
            contribution=chosen.contribution,
            # Any sample whose quote was not in the answer flags the item, whichever way the
            # majority went: a judge that fabricates shows up even when outvoted.
            evidence_ok=all(vote.evidence_ok for vote, _ in entry.votes),
            contested=contested,
            claimed_verdict=rejected[0], claimed_evidence=rejected[1],
            samples=tuple(vote for vote, _ in entry.votes),
            # The reason of the vote that is recorded, like its quote (each vote keeps its own).
            reason=chosen.reason, reason_cut=chosen.reason_cut,
        ))

    answered = [r for r in results if r.error is None]
    model = next((r.model for r in answered), results[0].model if results else "")
    cost = sum(r.cost_usd for r in results) + (tie_break.cost_usd if tie_break else 0.0)
    calls = sum(r.calls for r in results) + (tie_break.calls if tie_break else 0)
    policy = results[0].evidence_policy if results else "reject"
    error = None
    if not answered:
        error = "every judge sample failed: " + "; ".join(
            f"sample {k}: {r.error}" for k, r in enumerate(results, start=1))
        verdicts, ungraded = [], list(items)
    return JudgeResult(
        verdicts=tuple(verdicts), cost_usd=cost, model=model, error=error,
        ungraded=tuple(ungraded), notes=tuple(notes), calls=calls, samples=n,
        tie_breaks=1 if tie_break is not None else 0, evidence_policy=policy,
    )


class SampledJudge:
    """A grader that asks its inner grader ``samples`` times per run (see the module docs).

    With ``samples=1`` it is a pass-through: one call, the run's own seed, the result as is.
    Samples run one after another within a run (runs themselves run in parallel under ``-n``
    or ``skilllift judge -j``), which also keeps a scripted judge's call order deterministic.
    """

    def __init__(self, inner: Grader, samples: int = 1) -> None:
        if samples < 1:
            raise ValueError(f"judge samples must be at least 1, not {samples}")
        self.inner = inner
        self.samples = samples

    @property
    def model(self) -> str:
        """The inner judge's model (a remote grader learns it from its first reply)."""
        return self.inner.model

    def __repr__(self) -> str:
        return f"SampledJudge({self.inner!r}, samples={self.samples})"

    def grade(self, prompt_text: str, answer: str, items: Sequence[RubricItem],
              seed: int | str) -> JudgeResult:
        """Grade one run with ``samples`` calls plus at most one tie-break call."""
        items = tuple(items)
        if self.samples == 1:
            return self.inner.grade(prompt_text, answer, items, seed)
        results = [self.inner.grade(prompt_text, answer, items, sample_seed(seed, k))
                   for k in range(1, self.samples + 1)]
        if all(r.calls == 0 and r.error is None for r in results):
            return results[0]  # nothing was sent (no items): nothing to combine
        merged = combine_samples(items, results, samples=self.samples)
        tied = tied_items(items, results, merged)
        if not tied:
            return merged
        tie = self.inner.grade(prompt_text, answer, tied, f"{seed}#{TIE_BREAK_SEED}")
        return combine_samples(items, results, tie, samples=self.samples)


def tied_items(items: Sequence[RubricItem], results: Sequence[JudgeResult],
               merged: JudgeResult) -> list[RubricItem]:
    """The items a tie-break call settles: ungraded after combining, with samples that split
    evenly (batch judging sends these in a second batch)."""
    return [item for item in items if item in merged.ungraded and _disagreed(item, results)]


def _disagreed(item: RubricItem, results: Sequence[JudgeResult]) -> bool:
    """Whether the samples that graded ``item`` split evenly (a tie a third vote can break)."""
    votes = [v.verdict for r in results if r.error is None for v in r.verdicts if v.item == item]
    return len(set(votes)) > 1
