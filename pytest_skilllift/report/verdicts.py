"""Verdicts over a week: three states, pass rates, the sign test, the measures gates read.

Three states of a prompt×rep (the Drupal ai_eval scoring document, Question score / Target
score): **scored** — a measurement, a legitimate 0.0 included; **errored** — the judge left
it without a graded must item (the judge call failed for the whole run, or every must verdict
was unusable); **unscored** — the run was dropped, or it had no must item to grade. Errored
and unscored prompt×reps are absences: excluded from the pass-rate denominator, counted
separately, never a pass.

One rule for an item the judge left ungraded, the same in every statistic (qdrant/skills
SCORING.md: an ungraded item is excluded, never counted as zero): a prompt×rep is scored on
its graded items — the must mean, the composite (bonus items all ungraded add no bonus term),
the lift, the pass rate, pass@k, pass^k, flakiness and the Version comparison alike — and only
one without a graded must item is dropped (errored). Those scored on part of their items are
counted as **partly graded** (``partly_graded``; scorecard.json's
``coverage.partly_graded_prompt_reps``), and every dropped one is named in
``coverage.dropped_prompt_reps``.

A prompt×rep **passes** when it is scored, not errored, and its composite reaches the pass
threshold (default 0.7, the document's 3.5 on its 0–5 scale). Per model and condition the
pass rate carries its Wilson 95% interval (z = 1.959964).

The **sign test** is a second answer next to the paired t interval: one vote per prompt (reps
averaged first), the exact one-sided binomial p of the wins over the non-tied prompts;
``helps`` needs p ≤ 0.05 and net wins ≥ 20% of the prompts, and fewer than 5 eligible prompts
(ties included) is ``underpowered`` (dotnet/skills' Vally rule). Vally never emits a
regression verdict — a reverse preference is report-only; ``hurts`` is this tool's own rule,
the mirror one-sided test of the losses (two one-sided tests, named as such in its reason).
A model whose must-stay-dormant trigger queries fired cannot pass ``verdict==helps``: the
gate reads ``helps (blocked: dormancy)`` and names the queries.

The scorecard shows these in its sections (``report/sections/cells.py``: pass rates,
``lift.py``: the sign test and trigger-miss rate, ``coverage.py``: errored prompt×reps); gates
(``report.gates``) and week comparisons (``report.compare_weeks``) read :class:`WeekMeasures`.

Pure numpy/scipy: the two-sided p of the exact binomial test is computed with
``scipy.special.bdtr`` (identical to ``scipy.stats.binomtest`` at p = ½, which the tests
check) because importing ``scipy.stats`` costs half a second of every summarize.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from pytest_skilllift.intervals import EPS  # votes and passes: equal within float noise
from pytest_skilllift.model import ARMS, CONDITIONS, DEFAULT_PASS_THRESHOLD, WITH_REF, arm_code
from pytest_skilllift.report import stats
from pytest_skilllift.week.columns import ACTIVATIONS
from pytest_skilllift.week.files import COMPLETED, RUN_STATUSES, STATUS_OK
from pytest_skilllift.week.identity import WeekFileError, read_week_record
from pytest_skilllift.week.tables import Week

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

#: The one-vote-per-prompt verdict (dotnet/skills' Vally rule): per model each prompt's reps
#: collapse to one win / tie / loss of with-skill against no-skill (mean must coverage; a
#: difference within ``VOTE_EPSILON`` is a tie); fewer than ``SIGN_MIN_PROMPTS`` eligible
#: prompts (ties included) is underpowered; the exact one-sided sign test over the votes at
#: ``SIGN_ALPHA`` and a net win of at least ``SIGN_MIN_NET_SHARE`` of the prompts give
#: ``helps``. ``hurts`` (the losses' mirror test) is this tool's addition, not Vally's.
SIGN_ALPHA = 0.05
SIGN_MIN_PROMPTS = 5
SIGN_MIN_NET_SHARE = 0.20
#: Two mean must coverages this close are a tie (below one item of a 5-item rubric averaged
#: over 3 reps, 0.067: a one-rep wobble of one item on a long rubric does not vote).
VOTE_EPSILON = 0.05
HELPS, NO_CHANGE, HURTS, UNDERPOWERED = "helps", "no change", "hurts", "underpowered"
#: What the ``verdict`` gate reads for a ``helps`` model whose must-stay-dormant queries fired.
HELPS_BLOCKED = "helps (blocked: dormancy)"


# --------------------------------------------------------------------------- pure statistics


def binomial_two_sided_p(k: int, n: int) -> float:
    """Exact two-sided p of k successes in n fair trials (``binomtest(k, n, 0.5)``)."""
    if n <= 0:
        return 1.0
    tail = float(stats.scipy_special().bdtr(min(k, n - k), n, 0.5))  # scipy: imported on use
    return min(1.0, 2.0 * tail)


def binomial_one_sided_p(k: int, n: int) -> float:
    """Exact one-sided p, P(X ≥ k) for X ~ Bin(n, ½) (``binomtest(k, n, 0.5,
    alternative="greater")``)."""
    if n <= 0 or k <= 0:
        return 1.0
    return min(1.0, float(stats.scipy_special().bdtrc(k - 1, n, 0.5)))


class SignTestData(TypedDict):
    """``models.<label>.sign_test`` in scorecard.json."""

    n_prompts: int
    wins: int
    ties: int
    losses: int
    #: wins + losses: the prompts that vote.
    voting: int
    #: One-sided exact p of the wins (P(X ≥ wins) over the voting prompts).
    p_value: float | None
    epsilon: float
    verdict: str
    reason: str


@dataclass(frozen=True)
class SignTest:
    """One vote per prompt of the with-skill arm, the exact sign test and the verdict."""

    n: int
    wins: int
    ties: int
    losses: int
    p_value: float | None
    verdict: str
    reason: str
    epsilon: float = VOTE_EPSILON

    @property
    def voting(self) -> int:
        """Prompts that voted (not tied)."""
        return self.wins + self.losses

    def to_json(self) -> SignTestData:
        """The test as scorecard.json stores it."""
        return {"n_prompts": self.n, "wins": self.wins, "ties": self.ties,
                "losses": self.losses, "voting": self.voting, "p_value": self.p_value,
                "epsilon": self.epsilon, "verdict": self.verdict, "reason": self.reason}


def votes(before: np.ndarray, after: np.ndarray, epsilon: float = VOTE_EPSILON
          ) -> tuple[int, int, int, int]:
    """(prompts, wins, ties, losses) of ``after`` over ``before`` per prompt (NaN pairs
    skipped; reps already averaged; a difference within ``epsilon`` is a tie)."""
    d = np.asarray(after, float) - np.asarray(before, float)
    d = d[~np.isnan(d)]
    n = int(d.size)
    wins = int(np.count_nonzero(d > epsilon + EPS))
    losses = int(np.count_nonzero(d < -epsilon - EPS))
    return n, wins, n - wins - losses, losses


def sign_test(no: np.ndarray, with_: np.ndarray, *, epsilon: float = VOTE_EPSILON) -> SignTest:
    """The one-vote-per-prompt verdict of ``with_`` against ``no`` (the Vally rule above)."""
    n, wins, ties, losses = votes(no, with_, epsilon)
    p = binomial_one_sided_p(wins, wins + losses) if n else None
    verdict, reason = sign_verdict(n, wins, losses)
    return SignTest(n, wins, ties, losses, p, verdict, reason, epsilon)


def sign_verdict(n: int, wins: int, losses: int) -> tuple[str, str]:
    """``helps`` / ``hurts`` / ``no change`` / ``underpowered`` with the reason: fewer than
    ``SIGN_MIN_PROMPTS`` eligible prompts (ties included, as Vally counts them) is
    underpowered (never a pass); ``helps`` needs the one-sided p of the wins ≤ ``SIGN_ALPHA``
    and wins − losses ≥ ``SIGN_MIN_NET_SHARE`` of the ``n`` prompts (Vally's rule); ``hurts``
    is the same one-sided test of the losses — this tool's own, Vally reports a reverse
    preference only."""
    voting = wins + losses
    if n < SIGN_MIN_PROMPTS:
        return UNDERPOWERED, (f"{n} eligible prompt(s) < {SIGN_MIN_PROMPTS} "
                              f"({n - voting} of {n} tied)")
    need = SIGN_MIN_NET_SHARE * n - EPS
    for verdict, k, other in ((HELPS, wins, losses), (HURTS, losses, wins)):
        p = binomial_one_sided_p(k, voting)
        if p <= SIGN_ALPHA + EPS and k - other >= need:
            own = ("" if verdict == HELPS else " (this tool's rule, not Vally's: the mirror "
                   "one-sided test of the losses; Vally reports a reverse preference only)")
            return verdict, (f"{k} of {voting} voting prompts, one-sided p = {p:.3g} ≤ "
                             f"{SIGN_ALPHA}, net {k - other} ≥ {SIGN_MIN_NET_SHARE:.0%} of {n}"
                             + own)
    p = binomial_one_sided_p(wins, voting)
    if p <= SIGN_ALPHA + EPS:
        return NO_CHANGE, (f"p = {p:.3g} but net wins {wins - losses} < "
                           f"{SIGN_MIN_NET_SHARE:.0%} of {n} prompts")
    return NO_CHANGE, f"wins {wins} vs losses {losses}: one-sided p = {p:.3g} > {SIGN_ALPHA}"


#: How the verdict sentence says each sign-test verdict.
_VERDICT_WORDS = {HELPS: "the skill helps", HURTS: "the skill hurts",
                  NO_CHANGE: "no change shown",
                  UNDERPOWERED: "underpowered, too few prompts vote to tell (don't act on its "
                                "lift yet)"}


def verdict_sentence(models: Mapping[str, Mapping[str, Any]]) -> str:
    """One plain sentence, the top of the scorecard and the viewer: each model's sign-test
    verdict (the rule the scorecard's "One vote per prompt" table applies) with its reason;
    "" when no model has one."""
    parts = []
    for label, m in models.items():
        st = m.get("sign_test") or {}
        verdict = st.get("verdict")
        if verdict:
            parts.append(f"{label}: {_VERDICT_WORDS.get(verdict, verdict)} "
                         f"({st.get('reason', '')})")
    return ("Verdict, one vote per prompt (the sign test): " + "; ".join(parts) + "."
            if parts else "")


#: A prompt's change between two measurements of it (``skilllift compare``'s two weeks, the
#: Version comparison's two arms): its composite, reps averaged, beyond the margin *and*
#: beyond its own rep noise (``stats.regression_alarm``), else within rep noise.
IMPROVED, REGRESSED, UNCHANGED, UNSCORED = "improved", "regressed", "unchanged", "unscored"
WITHIN_REP_NOISE = "within rep noise"
CHANGES = (IMPROVED, REGRESSED, WITHIN_REP_NOISE, UNCHANGED, UNSCORED)
CHANGE_MARGIN = EPS


def prompt_change(before: float | None, after: float | None, margin: float, regressed: bool,
                  improved: bool) -> str:
    """A prompt's label: a move counts only beyond the margin and its own rep noise
    (``regressed`` / ``improved``: the alarm's decision for it); unscored when either side
    is None (never an improvement or a regression)."""
    if before is None or after is None:
        return UNSCORED
    if abs(after - before) <= margin:
        return UNCHANGED
    if regressed and after < before:
        return REGRESSED
    if improved and after > before:
        return IMPROVED
    return WITHIN_REP_NOISE


@dataclass(frozen=True)
class PairedTest:
    """Paired t test of ``after − before`` over the units present in both."""

    n: int
    difference: float | None
    se: float | None
    df: int | None
    t_crit: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None

    def to_json(self) -> dict[str, Any]:
        """The test as scorecard.json stores it."""
        return {"n_prompts": self.n, "difference": self.difference, "se": self.se,
                "df": self.df, "t_crit": self.t_crit, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "p_value": self.p_value}


def paired_test(before: np.ndarray, after: np.ndarray, *, level: float = 0.95) -> PairedTest:
    """Mean of dᵢ = after − before, SE = sd(d, ddof=1)/√n, the exact t interval and the
    two-sided p (``scipy.stats.ttest_rel``'s, which the tests check)."""
    d = np.asarray(after, float) - np.asarray(before, float)
    d = d[~np.isnan(d)]
    n = int(d.size)
    if n == 0:
        return PairedTest(0, None, None, None, None, None, None, None)
    mean = float(d.mean())
    if n == 1:
        return PairedTest(1, mean, None, None, None, None, None, None)
    sd = float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    df = n - 1
    t_crit = stats.t_quantile(df, level)
    # No spread: t is ±inf (p = 0), or undefined when the mean is 0 too.
    p = (None if mean == 0 else 0.0) if se == 0 else float(
        2.0 * stats.scipy_special().stdtr(df, -abs(mean / se)))
    return PairedTest(n, mean, se, df, t_crit, mean - t_crit * se, mean + t_crit * se, p)


# --------------------------------------------------------------------------- a week's measures


def pass_threshold_of(week_dir: Path) -> tuple[float, str | None]:
    """The pass threshold recorded in the week's week.json (default 0.7) and a problem text
    when week.json cannot be read."""
    try:
        record = read_week_record(week_dir)
    except WeekFileError as exc:
        return DEFAULT_PASS_THRESHOLD, (f"{exc}; the default pass threshold "
                                       f"{DEFAULT_PASS_THRESHOLD:g} is used")
    return (record.pass_threshold if record else DEFAULT_PASS_THRESHOLD), None


class WeekMeasures:
    """Everything a gate or a comparison reads from one week.

    ``week`` is the loaded ``week.tables.Week`` and ``agg`` its ``stats.Aggregates``: the
    three states, pass counts, coverage and trigger misses come from them. ``card`` is the
    week's scorecard (model-level lifts and the sign test are read from it); the scorecard's
    own sections build it from a measures without one."""

    def __init__(self, week: Week, agg: stats.Aggregates | None, pass_threshold: float, *,
                 card: Mapping[str, Any] | None = None) -> None:
        self.week, self.agg = week, agg
        self.data: Mapping[str, Any] = card if card is not None else {}
        self.threshold = pass_threshold
        self.models: list[str] = list(week.models)
        self._p = {p: i for i, p in enumerate(week.prompts)}
        self._m = {m: i for i, m in enumerate(week.models)}
        P, M = len(week.prompts), len(week.models)
        # Per (prompt, model, condition): passed, scored, errored, unscored prompt×reps.
        # Conditions are ``model.ARMS`` (the lift's two, then with-all and no-skill-b).
        C = len(ARMS)
        self.passed = np.zeros((P, M, C), np.int64)
        self.scored = np.zeros((P, M, C), np.int64)
        self.errored = np.zeros((P, M, C), np.int64)
        self.unscored = np.zeros((P, M, C), np.int64)
        #: Scored prompt×reps with an item the judge left ungraded: scored on graded items.
        self.partly_graded = np.zeros((P, M, C), np.int64)
        self._pk: stats.PassK | None = None
        #: (P, M, C', R) prompt×reps the judge left without a graded must item (errored),
        #: C' the arms of the aggregates; None without aggregates.
        self.errored_reps: np.ndarray | None = None
        self._states()
        self._runs()

    # -- three states ---------------------------------------------------------------------
    def _states(self) -> None:
        w, agg = self.week, self.agg
        P, M = len(w.prompts), len(w.models)
        if agg is not None and P and M and w.scores.run.size:
            R, C = agg.rep_composite.shape[-1], agg.rep_composite.shape[2]
            run_ok = np.ones(w.scores.run.size, bool)
            if w.manifest.present:
                linked = w.scores.run >= 0
                run_ok[linked] = w.manifest.status[w.scores.run[linked]] == STATUS_OK
            ok = (run_ok & (w.scores.prompt >= 0) & (w.scores.model >= 0) & (w.scores.cond >= 0)
                  & (w.scores.cond < C) & (w.scores.rep >= 0) & (w.scores.type >= 0))
            slot = np.searchsorted(agg.rep_values, w.scores.rep[ok])
            slot = np.minimum(slot, max(agg.rep_values.size - 1, 0))
            flat = ((w.scores.prompt[ok].astype(np.int64) * M + w.scores.model[ok]) * C
                    + w.scores.cond[ok]) * R + slot
            G = P * M * C * R
            err_slot = (np.bincount(flat[w.scores.ungraded[ok]], minlength=G) > 0).reshape(
                P, M, C, R)
            exists = (np.bincount(flat, minlength=G) > 0).reshape(P, M, C, R)
            comp = agg.rep_composite
            # Scored on its graded items; only a rep without a graded must item is dropped.
            scored = ~np.isnan(comp)
            self.errored_reps = err_slot & ~scored
            passed = scored & (np.nan_to_num(comp, nan=-1.0) >= self.threshold - EPS)
            self.scored[:, :, :C] += scored.sum(axis=-1)
            self.passed[:, :, :C] += passed.sum(axis=-1)
            self.errored[:, :, :C] += self.errored_reps.sum(axis=-1)
            self.partly_graded[:, :, :C] += (err_slot & scored).sum(axis=-1)
            self.unscored[:, :, :C] += (exists & ~scored & ~err_slot).sum(axis=-1)
        if w.manifest.present and w.n_runs and P and M:
            # Runs that never reached the scores: judge failed (errored) or dropped (unscored).
            rows_per_run = np.bincount(w.scores.run[w.scores.run >= 0], minlength=w.n_runs)
            valid = (w.manifest.prompt >= 0) & (w.manifest.model >= 0) & (w.manifest.cond >= 0)
            C = len(ARMS)
            key = (w.manifest.prompt.astype(np.int64) * M + w.manifest.model) * C + w.manifest.cond
            judge_failed = valid & (w.manifest.status == STATUS_OK) & (rows_per_run == 0)
            dropped = valid & (w.manifest.status != STATUS_OK)
            self.errored += np.bincount(key[judge_failed], minlength=P * M * C).reshape(P, M, C)
            self.unscored += np.bincount(key[dropped], minlength=P * M * C).reshape(P, M, C)

    def scored_composite(self) -> np.ndarray:
        """The rep composites every pass-based statistic reads — the pass rate, pass@k,
        pass^k, flakiness: each prompt×rep scored on its graded items, NaN where it has no
        graded must item (dropped), the module's one rule for an ungraded item."""
        assert self.agg is not None
        return self.agg.rep_composite

    def dropped_reps(self) -> list[tuple[int, int, int, int]]:
        """(prompt, model, arm, rep slot) of every prompt×rep with scores rows that the rule
        dropped (no graded must item), so the scorecard can name each one."""
        agg = self.agg
        if agg is None or self.errored_reps is None:
            return []
        w = self.week
        P, M = len(w.prompts), len(w.models)
        R, C = agg.rep_composite.shape[-1], agg.rep_composite.shape[2]
        if not (P and M and w.scores.run.size):
            return []
        ok = ((w.scores.prompt >= 0) & (w.scores.model >= 0) & (w.scores.cond >= 0)
              & (w.scores.cond < C) & (w.scores.rep >= 0) & (w.scores.type >= 0))
        slot = np.minimum(np.searchsorted(agg.rep_values, w.scores.rep[ok]),
                          max(agg.rep_values.size - 1, 0))
        flat = ((w.scores.prompt[ok].astype(np.int64) * M + w.scores.model[ok]) * C
                + w.scores.cond[ok]) * R + slot
        exists = (np.bincount(flat, minlength=P * M * C * R) > 0).reshape(P, M, C, R)
        idx = np.argwhere(exists & np.isnan(agg.rep_composite))
        return [(int(a), int(b), int(c), int(d)) for a, b, c, d in idx]

    # -- runs: coverage, trigger misses ----------------------------------------------------
    def _runs(self) -> None:
        w = self.week
        n = w.n_runs
        if w.manifest.present and n:
            usable_must = ~np.isnan(w.scores.credit) & (w.scores.type == 0) & (w.scores.run >= 0)
            has_must = np.bincount(w.scores.run[usable_must], minlength=n) > 0
            self._graded = (has_must | w.rewarded()) & (w.manifest.status == STATUS_OK)
            self._valid_run = ((w.manifest.prompt >= 0) & (w.manifest.model >= 0)
                               & (w.manifest.cond >= 0))
            # Completed with-skill runs only (``files.COMPLETED``), as the Activation section
            # counts them: an outage, a timeout, a budget cap or a failed install says nothing
            # about the skill's description, so it is neither a miss nor a denominator run.
            completed = [RUN_STATUSES.index(s) for s in sorted(COMPLETED)]
            ws = (w.manifest.cond == 1) & np.isin(w.manifest.status, completed)
            self._ws = ws
            self._miss = ws & (w.manifest.activation == ACTIVATIONS.index("none"))
            self._has_activation = "skill_activation" in w.manifest.columns
        else:
            self._graded = np.zeros(0, bool)
            self._valid_run = np.zeros(0, bool)
            self._ws = self._miss = np.zeros(0, bool)
            self._has_activation = False

    def _run_mask(self, model: str | None, condition: str | None,
                  prompt: str | None) -> np.ndarray | None:
        w = self.week
        mask = self._valid_run.copy()
        if model is not None:
            if model not in self._m:
                return None
            mask &= w.manifest.model == self._m[model]
        if condition is not None:
            mask &= w.manifest.cond == arm_code(condition)
        if prompt is not None:
            if prompt not in self._p:
                return None
            mask &= w.manifest.prompt == self._p[prompt]
        return mask

    def coverage(self, model: str | None, condition: str | None,
                 prompt: str | None) -> tuple[int, int]:
        """(graded runs, runs) of the selection; without a manifest, prompt×reps instead."""
        if not self.week.manifest.present:
            sel = self._select(model, condition, prompt)
            if sel is None:
                return 0, 0
            scored, total = (self.scored[sel].sum(), (self.scored + self.errored
                                                       + self.unscored)[sel].sum())
            return int(scored), int(total)
        mask = self._run_mask(model, condition, prompt)
        if mask is None:
            return 0, 0
        return int(np.count_nonzero(self._graded & mask)), int(np.count_nonzero(mask))

    def _select(self, model: str | None, condition: str | None,
                prompt: str | None) -> tuple[Any, Any, Any] | None:
        """Index of (prompt, model, condition) into the (P, M, C) arrays; ``slice`` pools (no
        condition: the lift's two arms, so an extra arm never changes a pooled gate)."""
        p: Any = slice(None) if prompt is None else self._p.get(prompt)
        m: Any = slice(None) if model is None else self._m.get(model)
        c: Any = slice(0, len(CONDITIONS)) if condition is None else arm_code(condition)
        if p is None or m is None:
            return None
        return p, m, c

    def pass_counts(self, model: str | None, condition: str | None,
                    prompt: str | None = None) -> dict[str, int]:
        """Passed / scored / errored / unscored prompt×reps of the selection."""
        sel = self._select(model, condition, prompt)
        if sel is None:
            return {"passed": 0, "scored": 0, "errored": 0, "unscored": 0}
        return {"passed": int(self.passed[sel].sum()), "scored": int(self.scored[sel].sum()),
                "errored": int(self.errored[sel].sum()),
                "unscored": int(self.unscored[sel].sum())}

    def pass_rate_cluster(self, model: str | None, condition: str | None,
                          prompt: str | None = None) -> tuple[float | None, float | None]:
        """The pass rate's prompt-clustered 95% interval (``stats.cluster_rate_interval``: the
        exact interval at the design effect's effective sample size, which does not collapse
        at the ceiling as a prompt bootstrap does; one prompt: none)."""
        sel = self._select(model, condition, prompt)
        if sel is None or prompt is not None:
            return None, None
        p, m, c = sel
        passed, scored = self.passed[p, m, c], self.scored[p, m, c]
        while passed.ndim > 1:  # pool models and/or conditions within each prompt
            passed, scored = passed.sum(axis=-1), scored.sum(axis=-1)
        keep = scored > 0  # prompts without a scored rep in the selection are not in it
        if np.count_nonzero(keep) < 2:
            return None, None
        return stats.cluster_rate_interval(passed[keep], scored[keep])

    def trigger_miss_cluster(self, model: str | None) -> tuple[float | None, float | None]:
        """The trigger-miss rate's 95% interval resampling whole prompts."""
        if not self._has_activation:
            return None, None
        mask = self._run_mask(model, None, None)
        if mask is None:
            return None, None
        w, P = self.week, len(self.week.prompts)
        sel = mask & self._ws & (w.manifest.prompt >= 0)
        k = np.bincount(w.manifest.prompt[sel & self._miss], minlength=P)
        n = np.bincount(w.manifest.prompt[sel], minlength=P)
        return stats.cluster_bootstrap_rate(k[n > 0], n[n > 0])

    def trigger_misses(self, model: str | None, prompt: str | None) -> tuple[int, int] | None:
        """(completed with-skill runs that never reached the skill, completed with-skill
        runs), or None when the manifest records no activation."""
        if not self._has_activation:
            return None
        mask = self._run_mask(model, None, prompt)
        if mask is None:
            return None
        return int(np.count_nonzero(self._miss & mask)), int(np.count_nonzero(self._ws & mask))

    # -- gate values -----------------------------------------------------------------------
    def dormancy_fired(self, model: str | None) -> list[str]:
        """The model's must-stay-dormant trigger queries that fired (``family: "query"``)."""
        fams = (self.data.get("triggers") or {}).get(model or "") or {}
        return [f'{family}: "{e.get("query", "")}"' for family, f in sorted(fams.items())
                for e in f.get("false_triggers", [])]

    def result_note(self, metric: str, model: str | None) -> str | None:
        """What a gate's line adds: the must-stay-dormant queries that fired, by name."""
        if metric in ("verdict", "dormancy_violations"):
            fired = self.dormancy_fired(model)
            if fired:
                return "dormancy failed, fired: " + "; ".join(fired)
        return None

    def unmeasured_reason(self, metric: str, model: str | None) -> str | None:
        """Why a ``*_ci_low`` gate has no value: a t interval over prompts whose differences
        are all equal (SE 0) is not estimable, and the gate fails closed."""
        m = self.data.get("models", {}).get(model or "", {})
        if metric == "must_lift_ci_low":
            se, n = m.get("must_lift_se"), m.get("n_prompts")
        elif metric == "version_lift_ci_low":
            v = (self.data.get("versions") or {}).get("models", {}).get(model or "") or {}
            se, n = v.get("version_lift_se"), v.get("n_prompts")
        else:
            return None
        if se is not None and n is not None and n >= 2 and not se > 0:
            return (f"not estimable: every per-prompt difference is equal over {n} prompts "
                    "(SE 0 is not zero uncertainty)")
        return None

    def _reward(self, metric: str, model: str, condition: str | None) -> float | None:
        """A task-reward gate's value from the scorecard's ``rewards`` section."""
        m = ((self.data.get("rewards") or {}).get("models") or {}).get(model) or {}
        if metric == "reward_pass_rate":
            arm = {"no-skill": "no", "with-skill": "with"}.get(condition or "")
            if arm is None:  # another arm of the tasks (with-all, no-skill-b, with-skill@REF)
                other = (m.get("arms") or {}).get(condition or "") or {}
                return _num(other.get("pass_rate"))
            return _num(m.get(f"pass_rate_{arm}"))
        return _num(m.get("reward_lift" if metric == "reward_lift" else "ci_low"))

    def value(self, metric: str, model: str | None, condition: str | None,
              prompt: str | None) -> float | str | None:
        """A metric's measured value in one unit; None when not measured."""
        if model is None or model not in self._m:
            return None
        mi = self._m[model]
        m = self.data.get("models", {}).get(model, {})
        if metric == "verdict":
            verdict = (m.get("sign_test") or {}).get("verdict")
            if verdict == HELPS and self.dormancy_fired(model):
                return HELPS_BLOCKED  # a failed dormancy set blocks a pass (Vally)
            return verdict
        if metric == "trigger_miss_rate":
            tm = self.trigger_misses(model, prompt)
            return None if tm is None or tm[1] == 0 else tm[0] / tm[1]
        if metric == "pass_rate":
            pc = self.pass_counts(model, condition, prompt)
            return pc["passed"] / pc["scored"] if pc["scored"] else None
        if metric == "pass_rate_ci_low":  # the cluster-aware bound, not Wilson's
            return _num(self.pass_rate_cluster(model, condition)[0])
        if metric == "dormancy_violations":
            fams = (self.data.get("triggers") or {}).get(model)
            return None if not fams else float(sum(
                int(f.get("dormancy_violations", 0)) for f in fams.values()))
        if metric in ("reward_lift", "reward_lift_ci_low", "reward_pass_rate"):
            return self._reward(metric, model, condition)
        if metric == "version_lift_ci_low":
            return _num(((self.data.get("versions") or {}).get("models", {}).get(model)
                         or {}).get("ci_low"))
        if metric in ("pass_at_k", "pass_hat_k", "flakiness"):
            return self._pass_k(metric, mi, condition, prompt)
        agg = self.agg
        if agg is None:
            return None
        if prompt is not None and prompt not in self._p:
            return None
        pi = self._p.get(prompt) if prompt is not None else None
        if metric in ("must_lift", "composite_lift", "must_lift_ci_low"):
            if pi is None:
                key = {"must_lift": "must_lift", "composite_lift": "composite_lift",
                       "must_lift_ci_low": "ci_low"}[metric]
                return _num(m.get(key))
            arr = agg.must if metric == "must_lift" else agg.composite
            return _num(arr[pi, mi, 1] - arr[pi, mi, 0])
        if metric == "version_lift":
            if pi is None:
                return _num(((self.data.get("versions") or {}).get("models", {}).get(model)
                             or {}).get("version_lift"))
            ref = ARMS.index(WITH_REF)
            return (_num(agg.must[pi, mi, 1] - agg.must[pi, mi, ref])
                    if agg.must.shape[2] > ref else None)
        ci = arm_code(condition) if condition else None
        if ci is None:
            return None
        per_prompt = {"must_coverage": agg.must, "bonus_rate": agg.bonus,
                      "avoid_violations": agg.avoid, "composite": agg.composite}
        per_cell = {"must_coverage": agg.cell_must, "bonus_rate": agg.cell_bonus,
                    "avoid_violations": agg.cell_avoid, "composite": agg.cell_composite}
        if metric not in per_cell:
            return None
        if pi is None:
            return _num(per_cell[metric][mi, ci])
        return _num(per_prompt[metric][pi, mi, ci])


    def _pass_k(self, metric: str, mi: int, condition: str | None,
                prompt: str | None) -> float | None:
        """pass@k / pass^k / flakiness of one (model, arm), or of one prompt there."""
        if self.agg is None or condition is None or (prompt is not None and prompt not in self._p):
            return None
        if self._pk is None:
            self._pk = stats.pass_k(self.scored_composite(), self.threshold)
        ci = arm_code(condition)
        if ci < 0 or ci >= self._pk.k.shape[2]:
            return None
        values = {"pass_at_k": self._pk.at_k, "pass_hat_k": self._pk.hat_k,
                  "flakiness": self._pk.flaky}[metric][:, mi, ci]
        if prompt is not None:
            return _num(values[self._p[prompt]])
        return stats.nan_mean(values)


def _num(x: Any) -> float | None:
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


# --------------------------------------------------------------------------- scorecard


def measures_of(ctx: Context) -> WeekMeasures:
    """The week's measures for its scorecard sections (``ctx.shared(measures_of)``: the
    cells, lift and coverage sections read one, built once)."""
    return WeekMeasures(ctx.week, ctx.agg, ctx.pass_threshold)


def trigger_miss_rate(measures: WeekMeasures, model: str) -> float | None:
    """Share of the model's completed with-skill runs that never reached the skill
    (None: unknown)."""
    tm = measures.trigger_misses(model, None)
    return None if tm is None or tm[1] == 0 else tm[0] / tm[1]
