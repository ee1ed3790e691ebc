"""A panel of judges (``--skill-lift-judges=a,b,c``): every run graded by each, the majority.

inspect_ai takes a majority over several grader models; dotnet/skills' evaluation grades
every agent with judges of other families. :class:`PanelJudge` is a grader over several
graders (each a judge of its own provider, each blind, shuffled and evidence-checked on its
own, each with its own ``--skill-lift-judge-samples``):

* **Majority per item.** An item's verdict is the verdict most judges gave it. A tie (an
  even panel split evenly) is settled by the adversarial framing of qdrant/skills SCORING.md:
  for an **avoid** item a tie is a **violation**, for a **must** item a **miss**, and for a
  **bonus** item **absent** — the benefit of the doubt never goes to the answer.
  :data:`TIE_RULE` states it once.
* **Every vote kept.** Each judge's verdict (with its evidence and evidence check) is one
  :class:`~pytest_skilllift.model.SampleVote` of the item, named by ``judge``: grades.json
  keeps them and scores.csv's ``judge_votes`` column lists them. An item the judges disagree
  on is **contested**, as two disagreeing samples make it.
* **A complete panel or none.** A run is graded only when every judge answered: a judge that
  failed leaves the run ungraded (graded again on the next session, never scored as zero),
  and the judges that did answer are kept in the run's ``panel.json``
  (:class:`PanelCache`), so a resume calls only the judge that is missing — each judge is
  paid for once per run. ``skilllift judge WEEK --judges …`` reuses it the same way: a judge
  already on file is not called again, a new one is.

The panel's name (``JudgeResult.model``, grades.json's ``judge_model``) is its judges' names
joined by commas, in the order given.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pytest_skilllift.judge.protocol import PROMPT_VERSION, PROMPT_VERSIONS_SAME_VERDICTS, Grader
from pytest_skilllift.judge.service import result_from_dict, result_to_dict
from pytest_skilllift.model import ItemVerdict, JudgeResult, RubricItem, SampleVote

__all__ = ["PANEL_FILE", "TIE_RULE", "PanelCache", "PanelJudge", "combine_panel", "fingerprint",
           "panel_name", "panel_verdict", "split_panel"]

#: A tie's verdict per item type: the adversarial reading (SCORING.md).
TIE_RULE: dict[str, str] = {"must": "missing", "bonus": "absent", "avoid": "violated"}
#: The file in a run directory holding each panel judge's result (what was paid for).
PANEL_FILE = "panel.json"


def panel_name(names: Sequence[str]) -> str:
    """How a panel is named (``judge_model``): its judges, comma-separated."""
    return ",".join(names)


def split_panel(judge_model: str) -> list[str]:
    """The judges of a ``judge_model`` value (one name for a single judge)."""
    return [n for n in (p.strip() for p in judge_model.split(",")) if n]


def panel_verdict(item_type: str, votes: Sequence[str]) -> tuple[str, bool]:
    """``(verdict, tied)``: the majority of ``votes``, or :data:`TIE_RULE` on a tie."""
    counts = Counter(votes).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return TIE_RULE[item_type], True
    return counts[0][0], False


def combine_panel(items: Sequence[RubricItem],
                  results: Sequence[tuple[str, JudgeResult]]) -> JudgeResult:
    """One result from each judge's (pure, no calls): majorities, votes, contested flags.

    A judge that failed makes the whole result an error (every item ungraded) naming it."""
    failed = [(name, r.error) for name, r in results if r.error is not None]
    names = [name for name, _ in results]
    cost = sum(r.cost_usd for _, r in results)
    calls = sum(r.calls for _, r in results)
    policy = results[0][1].evidence_policy if results else "reject"
    notes = [f"{name}: {note}" for name, r in results for note in r.notes]
    if failed:
        return JudgeResult(
            verdicts=(), cost_usd=cost, model=panel_name(names), ungraded=tuple(items),
            error="panel incomplete: " + "; ".join(f"{n} failed ({e})" for n, e in failed),
            notes=tuple(notes), calls=calls, evidence_policy=policy)
    verdicts: list[ItemVerdict] = []
    ungraded: list[RubricItem] = []
    ties = 0
    for item in items:
        votes: list[tuple[SampleVote, ItemVerdict]] = []
        for k, (name, result) in enumerate(results, start=1):
            v = next((v for v in result.verdicts if v.item == item), None)
            if v is None:
                continue
            votes.append((SampleVote(sample=k, verdict=v.verdict, evidence=v.evidence,
                                     evidence_ok=v.evidence_ok,
                                     claimed_verdict=v.claimed_verdict,
                                     claimed_evidence=v.claimed_evidence, judge=name,
                                     reason=v.reason), v))
        if not votes:
            ungraded.append(item)
            notes.append(f"{item.key}: no judge of the panel returned a usable verdict")
            continue
        verdict, tied = panel_verdict(item.type, [vote.verdict for vote, _ in votes])
        ties += tied
        # The recorded row is the first vote for the verdict: its quote backs it.
        chosen = next(v for vote, v in votes if vote.verdict == verdict)
        rejected = next(((vote.claimed_verdict, vote.claimed_evidence)
                         for vote, _ in votes if vote.claimed_verdict), ("", ""))
        if tied:
            notes.append(f"{item.key}: the panel tied; {verdict} by the tie rule")
        verdicts.append(dataclasses.replace(
            chosen, evidence_ok=all(vote.evidence_ok for vote, _ in votes),
            contested=len({vote.verdict for vote, _ in votes}) > 1,
            claimed_verdict=rejected[0], claimed_evidence=rejected[1],
            samples=tuple(vote for vote, _ in votes)))
    return JudgeResult(
        verdicts=tuple(verdicts), cost_usd=cost, model=panel_name(names),
        ungraded=tuple(ungraded), notes=tuple(notes), calls=calls,
        samples=len(results), tie_breaks=ties, evidence_policy=policy)


def fingerprint(prompt_text: str, answer: str, items: Sequence[RubricItem],
                 policy: str) -> str:
    """What a judge's stored result is valid for: the same text, rubric, policy, prompt."""
    data = json.dumps([prompt_text, answer, [dataclasses.astuple(i) for i in items], policy,
                       PROMPT_VERSION])
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:24]


class PanelCache:
    """Each panel judge's result per run, in ``<week>/<run_id>/panel.json``.

    A judge's result is stored once it answered (whatever the others did) and reused while
    the run's prompt, answer, rubric, evidence policy and judge prompt are unchanged; the run
    folder is the week's (no link followed: ``week.files``), and a seed that is not a run of
    the week is simply not cached."""

    def __init__(self, week_root: Path) -> None:
        self.root = Path(week_root)

    def _path(self, seed: int | str) -> Path | None:
        from pytest_skilllift.week.files import RUN_FILE, no_link

        name = str(seed)
        if not name or "/" in name or name.startswith("."):
            return None
        try:
            run_dir = no_link(self.root / name, "(a run folder)")
        except Exception:
            return None
        return run_dir / PANEL_FILE if (run_dir / RUN_FILE).is_file() else None

    def _load(self, path: Path) -> dict[str, Any]:
        from pytest_skilllift.week.files import read_text_nofollow

        try:
            data = json.loads(read_text_nofollow(path))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, seed: int | str, judge: str, fingerprint: str,
            items: Sequence[RubricItem] = (), policy: str = "") -> JudgeResult | None:
        """The judge's stored result for this run, when still valid: from ``panel.json``,
        else — the run graded by this judge alone before (``skilllift judge --judges``
        adding judges to a graded week) — from its ``grades.json``."""
        path = self._path(seed)
        if path is None:
            return None
        entry = self._load(path).get(judge)
        if isinstance(entry, dict) and entry.get("fingerprint") == fingerprint:
            try:
                return result_from_dict(entry["result"])
            except (KeyError, TypeError, ValueError):
                pass
        found = self._from_grades(path.parent, judge, items, policy) if items else None
        if found is not None:  # kept beside the panel's: the panel's grades.json replaces it
            self.put(seed, judge, fingerprint, found)
        return found

    def _from_grades(self, run_dir: Path, judge: str, items: Sequence[RubricItem],
                     policy: str) -> JudgeResult | None:
        """A one-judge ``grades.json`` of ``judge`` as its result, when it graded every item
        under the same evidence policy and judge prompt (what was paid for is kept)."""
        from pytest_skilllift.week.columns import contribution_for
        from pytest_skilllift.week.files import GRADES_FILE

        data = self._load(run_dir / GRADES_FILE)
        if (data.get("judge_model") != judge
                or data.get("prompt_version") not in (PROMPT_VERSION,
                                                      *PROMPT_VERSIONS_SAME_VERDICTS)
                or data.get("evidence_policy", "reject") != policy):
            return None
        by_key = {f"{r.get('item_type')}-{r.get('item_index')}": r
                  for r in data.get("rows") or () if isinstance(r, dict) and r.get("verdict")}
        verdicts = []
        for item in items:
            row = by_key.get(item.key)
            if row is None or row.get("item_text") != item.text:
                return None
            credit = float(row.get("credit") or 0.0)
            verdicts.append(ItemVerdict(
                item=item, verdict=str(row["verdict"]), evidence=str(row.get("evidence_quote")
                                                                     or ""),
                credit=credit, contribution=contribution_for(item.type, credit),
                evidence_ok=str(row.get("evidence_ok", 1)) not in ("0", "False", "false"),
                claimed_verdict=str(row.get("claimed_verdict") or ""),
                claimed_evidence=str(row.get("claimed_evidence") or ""),
                reason=str(row.get("judge_reason") or "")))
        return JudgeResult(verdicts=tuple(verdicts), cost_usd=float(data.get("cost_usd") or 0),
                           model=judge, calls=int(data.get("judge_calls") or 1),
                           notes=("reused from the run's grades.json (not called again)",),
                           evidence_policy=policy)

    def put(self, seed: int | str, judge: str, fingerprint: str, result: JudgeResult) -> None:
        """Store a judge's answered result for this run (under the run's file lock)."""
        from pytest_skilllift.week.files import atomic_write_json, file_lock

        path = self._path(seed)
        if path is None:
            return
        with file_lock(path.parent / ".panel.lock"):
            data = self._load(path)
            data[judge] = {"fingerprint": fingerprint, "result": result_to_dict(result)}
            atomic_write_json(path, data)


class PanelJudge:
    """A grader that grades each run with every judge of the panel (see the module docs).

    ``judges`` are ``(name, grader)`` pairs in the panel's order; the judges of one run are
    called concurrently (one thread each), each at most once per run when ``cache`` is given.
    """

    def __init__(self, judges: Sequence[tuple[str, Grader]],
                 cache: PanelCache | None = None, evidence_policy: str = "reject") -> None:
        if len(judges) < 2:
            raise ValueError("a panel needs at least two judges")
        names = [name for name, _ in judges]
        if len(set(names)) != len(names):
            raise ValueError(f"a panel names each judge once, not {panel_name(names)}")
        self.judges = list(judges)
        self.cache = cache
        self.evidence_policy = evidence_policy
        #: Calls made through this panel, per judge (what resume and -n must keep at one).
        self.called: Counter[str] = Counter()

    @property
    def model(self) -> str:
        """The panel's name: its judges' names joined."""
        return panel_name([name for name, _ in self.judges])

    def __repr__(self) -> str:
        return f"PanelJudge({self.model!r})"

    def prepare(self) -> None:
        """Import every judge's SDK now (the session warms the judge up ahead of use)."""
        for _name, grader in self.judges:
            prepare = getattr(grader, "prepare", None) or getattr(
                getattr(grader, "inner", None), "prepare", None)
            if callable(prepare):
                prepare()

    def grade(self, prompt_text: str, answer: str, items: Sequence[RubricItem],
              seed: int | str) -> JudgeResult:
        """Grade with every judge of the panel and combine their verdicts per item."""
        items = tuple(items)
        key = fingerprint(prompt_text, answer, items, self.evidence_policy)

        def one(pair: tuple[str, Grader]) -> tuple[str, JudgeResult]:
            name, grader = pair
            if self.cache is not None and items and answer.strip():
                cached = self.cache.get(seed, name, key, items, self.evidence_policy)
                if cached is not None:
                    return name, cached
            result = grader.grade(prompt_text, answer, items, seed)
            self.called[name] += 1
            if self.cache is not None and result.error is None and result.calls:
                self.cache.put(seed, name, key, result)
            return name, result

        with ThreadPoolExecutor(max_workers=len(self.judges),
                                thread_name_prefix="skilllift-panel") as pool:
            results = list(pool.map(one, self.judges))
        if not items or not answer.strip():
            return dataclasses.replace(results[0][1], model=self.model)
        return combine_panel(items, results)
