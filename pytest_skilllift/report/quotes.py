"""The quote that explains a skill-impact verdict (the SkillsBench trajectory audit, SB-2).

* ``helped`` — the **unlock quote**: a must item met with the skill and missed without it
  (the one whose met share rose most across reps), with the judge's evidence quote from a
  with-skill answer that met it.
* ``hurt`` — the **misled quote**: an avoid item violated with the skill and clean without
  it, with the evidence of the violation in the with-skill answer; when no avoid item moved,
  the must item met without the skill and missed with it, quoted from the no-skill answer
  that met it (a missing item has no quote of its own).

Reads the week's arrays only (graded items of scored runs); the text of the few rows quoted is
taken from the Arrow columns at the end.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypedDict

import numpy as np

from pytest_skilllift.model import ARMS, NO_SKILL, WITH_SKILL
from pytest_skilllift.report.context import Context
from pytest_skilllift.report.sections.prompts import prompt_rows
from pytest_skilllift.trace.audit import HELPED, HURT, impact_outcome
from pytest_skilllift.week.columns import ITEM_TYPES
from pytest_skilllift.week.tables import dictionary_indices, strings_at

_NO, _WITH = ARMS.index(NO_SKILL), ARMS.index(WITH_SKILL)
_MUST, _AVOID = ITEM_TYPES.index("must"), ITEM_TYPES.index("avoid")
UNLOCK, MISLED = "unlock", "misled"


class _QuoteBase(TypedDict):
    """The keys every quote has."""

    kind: str  # "unlock" | "misled"
    item_type: str
    item_text: str
    #: The judge's evidence quote, from the answer of ``condition`` rep ``rep``.
    evidence: str
    condition: str
    rep: int
    #: Share of scored reps in which the item was met (must) or violated (avoid), per arm.
    rate_with: float
    rate_no: float


class Quote(_QuoteBase, total=False):
    """``audit.impact[].quote``.

    The keys below only when there is something to say (``total=False``: a class of its own,
    so ``from __future__ import annotations`` cannot hide which keys are optional)."""

    #: The judge's short reason for the miss (or violation) the quote is about — unlock: a
    #: no-skill run that missed it; misled: the with-skill run that violated or missed it —
    #: and that run as "<arm> r<rep>". Only when the judge recorded one (judge prompt
    #: skilllift-judge/3 on): a week graded before reasons, or the qdrant pipeline's, has none.
    reason: str
    reason_run: str


def _unique_inverse(keys: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` for keys in ``[0, span)``: by marking a
    table instead of sorting when the span is small next to the ~10^6 keys of a big week."""
    if span > 8 * keys.size + (1 << 20):
        return np.unique(keys, return_inverse=True)
    present = np.zeros(span, bool)
    present[keys] = True
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present), rank[keys]


def _unique_first(keys: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_index=True)`` (each key's first position) for keys in
    ``[0, span)``, likewise without a sort when the span allows."""
    if span > 8 * keys.size + (1 << 20):
        return np.unique(keys, return_index=True)
    first = np.full(span, keys.size, np.int64)
    np.minimum.at(first, keys, np.arange(keys.size))
    present = np.flatnonzero(first < keys.size)
    return present, first[present]


#: A quote chosen but not yet made: (kind, item, from the with-skill arm, rates, scores row).
_Pick = tuple[str, int, bool, tuple[float, float], int]


class _Items:
    """Per (item, model, arm) met/violated shares and the first row of each outcome."""

    def __init__(self, ctx: Context) -> None:
        w = ctx.week
        self.week = w
        self._rates: list[list[list[float]]] | None = None  # best()'s Python copies
        self._types: list[int] = []
        self._starts: list[int] = []
        M = max(len(w.models), 1)
        self.M = M
        texts = w.scores.item_text
        n = w.scores.prompt.size
        if texts is None or n == 0:
            self.ok = False
            return
        self.ok = True
        import pyarrow as pa

        if pa.types.is_dictionary(texts.type):  # as week.tables reads it
            arr = texts
        else:
            import pyarrow.compute as pc  # ≈ 0.05 s to import: only when needed

            arr = pc.dictionary_encode(texts)
        t_idx = dictionary_indices(arr).astype(np.int64)
        self.texts = arr.dictionary
        usable = (~np.isnan(ctx.credit) & (w.scores.prompt >= 0) & (w.scores.model >= 0)
                  & (t_idx >= 0)
                  & ((w.scores.cond == _NO) | (w.scores.cond == _WITH))
                  & ((w.scores.type == _MUST) | (w.scores.type == _AVOID)))
        self.rows = np.flatnonzero(usable)
        # One item = (prompt, item text): its id g is its rank among the week's items, so a
        # prompt's items are contiguous (prompt-major).
        n_t = len(self.texts) + 1
        item_key = w.scores.prompt[self.rows].astype(np.int64) * n_t + t_idx[self.rows]
        keys, self.g = _unique_inverse(item_key, len(w.prompts) * n_t)
        self.item_prompt = keys // n_t
        self.item_text_idx = keys % n_t
        self.item_type = np.zeros(keys.size, np.int64)
        self.item_type[self.g] = w.scores.type[self.rows]
        G = keys.size
        self.cond = (w.scores.cond[self.rows] == _WITH).astype(np.int64)  # 0 no-skill, 1 with
        self.model = w.scores.model[self.rows].astype(np.int64)
        self.hit = ctx.credit[self.rows] == 1.0
        cell = (self.g * M + self.model) * 2 + self.cond
        n_cell = np.bincount(cell, minlength=G * M * 2).reshape(G, M, 2)
        hit_cell = np.bincount(cell, weights=self.hit, minlength=G * M * 2).reshape(G, M, 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.rate = np.where(n_cell > 0, hit_cell / np.maximum(n_cell, 1), np.nan)
        # The first row of each (item, model, arm, hit) — the evidence to quote.
        first_key = cell * 2 + self.hit
        self.first_keys, first_pos = _unique_first(first_key, G * M * 2 * 2)
        self.first_rows = self.rows[first_pos]
        self.prompt_start = np.searchsorted(self.item_prompt, np.arange(len(w.prompts) + 1))

    def best(self, p: int, m: int, item_type: int, sign: int) -> tuple[int, float, float] | None:
        """The item of prompt ``p`` and ``item_type`` whose ``sign``·(with − no) share is
        largest and positive: (item, rate with, rate no)."""
        if self._rates is None:  # Python floats: ~10^4 calls read numpy scalars too slowly
            self._rates = self.rate.tolist()
            self._types = self.item_type.tolist()
            self._starts = self.prompt_start.tolist()
        rates, types = self._rates, self._types
        lo, hi = self._starts[p], self._starts[p + 1]
        best: tuple[int, float, float] | None = None
        best_gap = 0.0
        for g in range(lo, hi):
            if types[g] != item_type:
                continue
            r_no, r_with = rates[g][m]
            if math.isnan(r_no) or math.isnan(r_with):
                continue
            gap = sign * (r_with - r_no)
            if gap > best_gap + 1e-12:
                best, best_gap = (g, r_with, r_no), gap
        return best

    def first_hit_rows(self, wanted: list[tuple[int, int, bool]]) -> list[int | None]:
        """The first scores.csv row of each (item, model, from the with-skill arm) in which
        the item was met/violated (None: no such row), found in one search."""
        if not wanted or self.first_keys.size == 0:
            return [None] * len(wanted)
        keys = np.array([((g * self.M + m) * 2 + int(w)) * 2 + 1 for g, m, w in wanted],
                        np.int64)
        pos = np.searchsorted(self.first_keys, keys)
        found = pos < self.first_keys.size
        found[found] = self.first_keys[pos[found]] == keys[found]
        rows = self.first_rows[np.minimum(pos, self.first_keys.size - 1)]
        return [int(r) if f else None for r, f in zip(rows.tolist(), found.tolist(),
                                                      strict=True)]

    def first_miss_rows(self, wanted: list[tuple[int, int, bool]]) -> list[int | None]:
        """The first scores.csv row of each (item, model, from the with-skill arm) in which
        the item was missed / clean (None: no such row)."""
        if not wanted or self.first_keys.size == 0:
            return [None] * len(wanted)
        keys = np.array([((g * self.M + m) * 2 + int(w)) * 2 for g, m, w in wanted], np.int64)
        pos = np.minimum(np.searchsorted(self.first_keys, keys), self.first_keys.size - 1)
        found = self.first_keys[pos] == keys
        return [int(r) if f else None for r, f in zip(self.first_rows[pos].tolist(),
                                                      found.tolist(), strict=True)]

    def _reasons(self, picks: list[_Pick]) -> list[tuple[str, int | None]]:
        """Per pick, the judge's reason for the miss or violation it is about, and its row."""
        reasons = self.week.scores.kept.get("judge_reason")
        if reasons is None or not picks:
            return [("", None)] * len(picks)
        m_of = self.week.scores.model
        # unlock: a no-skill miss of the must item; misled from the with-skill arm: the
        # violating row itself; misled from the no-skill arm: a with-skill miss of the must.
        misses = self.first_miss_rows([(g, int(m_of[row]), not from_with) for
                                       kind, g, from_with, _r, row in picks
                                       if not (kind == MISLED and from_with)])
        it = iter(misses)
        rows = [row if kind == MISLED and from_with else next(it)
                for kind, g, from_with, _r, row in picks]
        have = [r for r in rows if r is not None]
        text = iter(strings_at(reasons, np.array(have, np.int64)) if have else [])
        return [(str(next(text) or "") if r is not None else "", r) for r in rows]

    def quotes(self, picks: list[_Pick]) -> list[Quote]:
        """The quotes, their text read from the Arrow columns in one pass (a week quotes
        one item per scored prompt and model: ~10^4 on a large week)."""
        w = self.week
        rows = [p[4] for p in picks]
        evidence = (strings_at(w.scores.evidence, np.array(rows, np.int64))
                    if w.scores.evidence is not None and rows else [""] * len(rows))
        texts = self.texts.to_pylist()
        out: list[Quote] = []
        for (kind, g, from_with, rates, row), ev, (reason, at) in zip(
                picks, evidence, self._reasons(picks), strict=True):
            q: Quote = {"kind": kind, "item_type": ITEM_TYPES[int(self.item_type[g])],
                        "item_text": str(texts[int(self.item_text_idx[g])] or ""),
                        "evidence": str(ev or ""),
                        "condition": WITH_SKILL if from_with else NO_SKILL,
                        "rep": int(w.scores.rep[row]), "rate_with": rates[0],
                        "rate_no": rates[1]}
            if reason and at is not None:
                q["reason"] = reason
                q["reason_run"] = f"{ARMS[int(w.scores.cond[at])]} r{int(w.scores.rep[at])}"
            out.append(q)
        return out


def impact_quotes(ctx: Context, verdicts: Iterable[tuple[str, str, str]]
                  ) -> dict[tuple[str, str], Quote | None]:
    """The quote of each (prompt, model, outcome): helped → unlock, hurt → misled, else None."""
    items = _Items(ctx)
    p_of = {p: i for i, p in enumerate(ctx.week.prompts)}
    m_of = {m: i for i, m in enumerate(ctx.week.models)}
    # Candidates first, their scores.csv rows found in one search per round: helped → the
    # must item the skill unlocked most; hurt → the avoid item it brought on most, else
    # (no such item, or no row to quote) the must item it lost most.
    picked: dict[tuple[str, str], _Pick | None] = {}
    tries: dict[tuple[str, str], tuple[str, int, bool, tuple[int, float, float]]] = {}
    fallback: dict[tuple[str, str], int] = {}  # hurt: the model, for the second round
    for prompt, model, outcome in verdicts:
        picked[(prompt, model)] = None
        if not (items.ok and outcome in (HELPED, HURT)):
            continue
        p, m = p_of[prompt], m_of[model]
        b = items.best(p, m, _MUST if outcome == HELPED else _AVOID, +1)
        if outcome == HURT:
            fallback[(prompt, model)] = m
        if b is not None:
            tries[(prompt, model)] = (UNLOCK if outcome == HELPED else MISLED, m, True, b)
    for second in (False, True):
        if second:
            tries = {}
            for key, m in fallback.items():
                if picked[key] is None and (b := items.best(p_of[key[0]], m, _MUST, -1)):
                    tries[key] = (MISLED, m, False, b)
        rows = items.first_hit_rows([(b[0], m, w) for _k, m, w, b in tries.values()])
        for (key, (kind, _m, from_with, b)), row in zip(tries.items(), rows, strict=True):
            if row is not None:
                picked[key] = (kind, b[0], from_with, (b[1], b[2]), row)
    made = iter(items.quotes([q for q in picked.values() if q is not None]) if items.ok else [])
    return {key: (next(made) if q is not None else None) for key, q in picked.items()}


def verdict_quotes(ctx: Context) -> dict[tuple[str, str], Quote | None]:
    """Every scored (prompt, model)'s quote, computed once per week (``ctx.shared``)."""
    return impact_quotes(ctx, [(r["prompt"], r["model"], impact_outcome(r["must_lift"]))
                               for r in ctx.shared(prompt_rows) if r["must_lift"] is not None])
