"""The regression alarm's false-alarm rate and power on resampled real weeks.

``skilllift compare --fail-on-regression`` must not cry wolf: on two weeks with no real change
the share of weeks with any alarm is at most 5%, and a planted regression is found where the
data can show it. This measures both, seeded, on the real week 20260808 (2 reps) and the demo
week (4 reps) of ``tests/fixtures``:

* false alarms, for the lift alarm (default) and the level alarm (--fail-on-level-regression),
  on A/A pairs (``report.noise.aa_week_pairs``): ``split`` (each prompt's reps halved),
  ``parametric`` (prompt means + normal rep noise), ``plug-in`` (each side draws 2 whole reps
  with replacement per prompt × model × arm from the week's own: the harshest null, the one
  where the old rule raised an alarm in ~20% of weeks); beside it the old rule (one Holm
  family of the week-level and prompt tests, the variance shrunk toward the pooled one
  without a floor) and the margin rule (some prompt's lift dropped by more than 0.10);
* power: plug-in pairs with 1, 2 or 4 reps a side, a regression planted in week B's
  with-skill arm — one or three prompts at ≥ 0.7 with every must missing, or every prompt
  lowered by 0.10 / 0.20 — the share of pairs with any alarm, with the week-level test
  rejecting, and naming a planted prompt when the week-level test did not / did reject (the
  two cases of the α split); the old rule beside it.

    python benchmarks/bench_regression_alarm.py              # 2000 pairs per row
    python benchmarks/bench_regression_alarm.py --sims 300   # quicker
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from pytest_skilllift.report import noise, stats
from pytest_skilllift.report.summarize import summarize_week

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
WEEKS = {"real 20260808 (2 reps)": FIXTURES / "data" / "qdrant-skills" / "weekly" / "20260808",
         "demo (4 reps)": FIXTURES / "demo-week-4reps" / "20261201"}
SEED = 20260808


def load(week: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(M, P, 2, R) rep must coverage, (M, P, R) with-skill composites, must items."""
    s = summarize_week(week, write=False, plots=False)
    assert s.aggregates is not None
    sc = s.week.scores
    items = stats.must_items(sc.prompt, sc.model, sc.cond, sc.rep, sc.type, len(s.week.prompts))
    return (np.moveaxis(s.aggregates.rep_must[:, :, :2, :], 1, 0),
            np.moveaxis(s.aggregates.rep_composite[:, :, 1, :], 1, 0), items)


def must_credits(week: Path) -> tuple[np.ndarray, np.ndarray]:
    """(M, P, 2, R, K) graded must credits of each run (NaN-padded) and (M, P, 2, R) counts."""
    s = summarize_week(week, write=False, plots=False)
    assert s.aggregates is not None
    sc, agg = s.week.scores, s.aggregates
    P, M, R = len(s.week.prompts), len(s.week.models), agg.rep_must.shape[-1]
    ok = ((sc.type == stats.MUST) & (sc.prompt >= 0) & (sc.model >= 0) & (sc.cond >= 0)
          & (sc.cond < 2) & (sc.rep >= 0) & ~np.isnan(sc.credit))
    slot = np.searchsorted(agg.rep_values, sc.rep[ok])
    flat = ((sc.model[ok].astype(np.int64) * P + sc.prompt[ok]) * 2 + sc.cond[ok]) * R + slot
    n = np.bincount(flat, minlength=M * P * 2 * R)
    K = int(n.max())
    out = np.full((M * P * 2 * R, K), np.nan)
    order = np.argsort(flat, kind="stable")
    pos = np.arange(order.size) - np.repeat(np.cumsum(n) - n, n)
    out[flat[order], pos] = sc.credit[ok][order]
    return out.reshape(M, P, 2, R, K), n.reshape(M, P, 2, R)


def item_pair(credits: np.ndarray, n: np.ndarray,
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One A/A pair of the ``items`` null: each side is the week's own runs, every run's
    must items drawn with replacement (a run without a graded must item stays unscored)."""
    def side() -> np.ndarray:
        idx = np.floor(rng.random(credits.shape) * np.maximum(n, 1)[..., None]).astype(int)
        draw = np.take_along_axis(credits, idx, axis=-1)
        used = np.arange(credits.shape[-1]) < n[..., None]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, np.where(used, draw, 0.0).sum(-1) / np.maximum(n, 1),
                            np.nan)
    return side(), side()


def item_null_rate(week: Path, sims: int, items: np.ndarray) -> tuple[float, float]:
    """The lift alarm's false-alarm rate and the old rule's on the ``items`` null."""
    credits, n = must_credits(week)
    rng = np.random.default_rng(SEED)
    new = old = 0
    for _ in range(sims):
        a, b = item_pair(credits, n, rng)
        new += stats.regression_alarm(a, b, weights=stats.LIFT_WEIGHTS, n_items=items).alarm
        old += old_alarm(a, b, stats.LIFT_WEIGHTS)[0]
    return new / sims, old / sims


def old_alarm(a: np.ndarray, b: np.ndarray, weights: tuple[float, ...]) -> tuple[bool, np.ndarray]:
    """The rule before: per-prompt moderated t without a floor, the week-level paired tests
    and the prompts in one Holm family at α = 0.05. Returns (any alarm, (M, P) named)."""
    if a.ndim == 3:
        a, b = a[:, :, None, :], b[:, :, None, :]
    w = np.asarray(weights)
    M, P = a.shape[:2]
    drops, weeks = [], []
    for m in range(M):
        ka, ma, ssa = stats._reps_moments(a[m])
        kb, mb, ssb = stats._reps_moments(b[m])
        own = np.maximum(ka - 1, 0) + np.maximum(kb - 1, 0)
        ss = ssa + ssb
        tot = own.sum(axis=0)
        prior = np.where(tot > 0, ss.sum(axis=0) / np.maximum(tot, 1), 0.0)
        d0 = np.minimum(stats.REP_PRIOR_DF, tot)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = (d0 * prior + ss) / (d0 + own)
            se = np.sqrt((w * w * var * (1 / np.maximum(ka, 1) + 1 / np.maximum(kb, 1))).sum(1))
            diff = ((mb - ma) * w).sum(axis=1)
            p = stats.scipy_special().stdtr(d0.min() + own.min(axis=1), diff / se)
        p = np.where(se > 0, p, np.where(diff < -1e-9, 0.0, 1.0))
        drops.append(np.where((own >= 1).all(axis=1), p, np.nan))
        va, vb = (ma * w).sum(axis=1), (mb * w).sum(axis=1)
        d = (vb - va)[~np.isnan(vb - va)]
        sd = d.std(ddof=1) if d.size > 1 else 0.0
        weeks.append(np.nan if d.size < 2 else (
            float(stats.scipy_special().stdtr(d.size - 1, d.mean() / (sd / math.sqrt(d.size))))
            if sd > 0 else (0.0 if d.mean() < -1e-9 else 1.0)))
    fam = stats.holm(np.concatenate([weeks, np.ravel(drops)]))
    named = np.nan_to_num(fam[M:], nan=2.0).reshape(M, P) <= 0.05
    return bool((np.nan_to_num(fam, nan=2.0) <= 0.05).any()), named


def old_rate(x: np.ndarray, weights: tuple[float, ...], sims: int, size: int | None) -> float:
    rng = np.random.default_rng(SEED)
    return sum(old_alarm(*noise.aa_week_pairs(x, noise.AA_PLUG_IN, rng, size=size),
                         weights)[0] for _ in range(sims)) / sims


def old_power(x: np.ndarray, kind: str, size: int, sims: int) -> tuple[float, float]:
    rng = np.random.default_rng(SEED)
    src = np.nanmean(x[:, :, -1], axis=-1)
    alarms = named = 0
    for _ in range(sims):
        a, b = noise.aa_week_pairs(x, noise.AA_PLUG_IN, rng, size=size)
        b, mask = noise.plant(b, kind=kind, rng=rng, src_mean=src)
        any_, hit = old_alarm(a, b, stats.LIFT_WEIGHTS)
        alarms += any_
        named += bool((hit & mask).any())
    return alarms / sims, named / sims


def pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1%}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=2000)
    args = ap.parse_args()
    n = args.sims
    print("| week | alarm | A/A pairs | pairs | alarm rate (95% Wilson) | old rule | "
          "margin rule (lift drop > 0.10) | seconds |")
    print("| --- | --- | --- | ---: | --- | ---: | ---: | ---: |")
    for name, path in WEEKS.items():
        lift, level, items = load(path)
        for alarm, x, w in (("lift", lift, stats.LIFT_WEIGHTS),
                            ("level", level, stats.LEVEL_WEIGHTS)):
            kinds = [noise.AA_SPLIT, noise.AA_PARAMETRIC, noise.AA_PLUG_IN]
            for kind in kinds:
                t = time.perf_counter()
                r = noise.aa_alarm_rate(x, kind=kind, sims=n, seed=SEED, weights=w,
                                        n_items=items, size=2 if kind == noise.AA_PLUG_IN
                                        else None)
                lo, hi = stats.wilson_interval(round(r.alarm_rate * r.sims), r.sims)
                old = (pct(old_rate(x, w, n, 2)) if kind == noise.AA_PLUG_IN else "")
                print(f"| {name} | {alarm} | {kind} | {r.sims} | {r.alarm_rate:.1%} "
                      f"({lo:.1%}–{hi:.1%}) | {old} | {r.margin_rule_rate:.0%} | "
                      f"{time.perf_counter() - t:.1f} |")
    for name, path in WEEKS.items():
        _, _, items = load(path)
        t = time.perf_counter()
        rate, old_r = item_null_rate(path, n, items)
        lo, hi = stats.wilson_interval(round(rate * n), n)
        print(f"| {name} | lift | items | {n} | {rate:.1%} ({lo:.1%}–{hi:.1%}) | "
              f"{old_r:.1%} |  | {time.perf_counter() - t:.1f} |")
    print()
    lift, _, items = load(WEEKS["real 20260808 (2 reps)"])
    print("Power on the real week (lift alarm; plug-in pairs, the plant in week B):\n")
    print("| plant | reps a side | any alarm | week-level rejects | planted prompt named "
          "| named, week-level did not reject (prompts at α/2) | named, it did (prompts at "
          "α) | old rule: any alarm | old rule: named |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for kind in ("none", "zero-1", "zero-3", "drop-0.10", "drop-0.20"):
        for size in (1, 2, 4):
            p = noise.plant_power(lift, plant_kind=kind, size=size, sims=n // 4, seed=SEED,
                                  n_items=items)
            oa, on = old_power(lift, kind, size, n // 4)
            print(f"| {kind} | {size} | {pct(p.alarm_rate)} | {pct(p.week_rate)} | "
                  f"{pct(p.named_rate)} | {pct(p.named_without_week)} | "
                  f"{pct(p.named_with_week)} | {pct(oa)} | {pct(on)} |")
    print()
    found, tried = noise.alarm_power(lift, n_items=items)
    print(f"The real week against itself with one prompt's with-skill musts all missing "
          f"(each prompt at ≥ 0.7 in turn): named {found} of {tried}.")


if __name__ == "__main__":
    main()
