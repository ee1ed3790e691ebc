"""The with-all lift, the quote behind each impact verdict and the Suggested improvements, on
small synthetic weeks whose answers are known."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_skilllift.report.summarize import summarize_week
from tests.test_report_noise import Item, musts, run, write_runs


def test_with_all_lift_interference_and_own_skill_not_invoked(tmp_path: Path) -> None:
    # must coverage no / with / with-all (of 3): p0 0 / 3 / 3, p1 1 / 3 / 1, p2 1 / 2 / 2.
    cov = {"p0": (0, 3, 3), "p1": (1, 3, 1), "p2": (1, 2, 2)}
    runs = []
    for p, (no, wi, al) in cov.items():
        runs += [run(p, "no-skill", 1, musts(no)),
                 run(p, "with-skill", 1, musts(wi), invocation_status="VERIFIED"),
                 run(p, "with-all", 1, musts(al),
                     invocation_status="NOT_INVOKED" if p == "p1" else "VERIFIED")]
    s = summarize_week(write_runs(tmp_path / "w", runs), write=False)
    wa = s.data["with_all"]
    assert wa is not None
    m = wa["models"]["sonnet"]
    d = np.array([1.0, 0.0, 1 / 3])  # with-all − no-skill
    assert m["must_lift"] == pytest.approx(d.mean())
    assert m["must_lift_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(3))
    assert m["vs_with_skill"] == pytest.approx((0 - 2 / 3 + 0) / 3)
    assert m["invocation"] == {"VERIFIED": 2, "PARTIAL": 0, "NOT_INVOKED": 1}
    assert [(r["prompt"], round(r["delta"], 3)) for r in wa["interference"]] == [("p1", -0.667)]
    # The with-skill lift is unchanged by the third arm.
    assert s.data["models"]["sonnet"]["must_lift"] == pytest.approx((1 + 2 / 3 + 1 / 3) / 3)
    assert {c["condition"] for c in s.data["cells"]} == {"no-skill", "with-skill", "with-all"}
    md = s.markdown
    assert "## Lift with every family installed (with-all − no-skill)" in md
    assert "| p1     | sonnet | 1.000 → 0.333         | -0.667 |" in md
    # Only with-skill runs feed the with-skill audit numbers.
    assert s.data["audit"]["invocation"] == {"sonnet": {"VERIFIED": 3, "PARTIAL": 0,
                                                        "NOT_INVOKED": 0}}


def test_a_week_without_with_all_has_no_such_section(tmp_path: Path) -> None:
    runs = [run(p, c, 1, musts(i)) for i, p in enumerate(("a", "b"))
            for c in ("no-skill", "with-skill")]
    s = summarize_week(write_runs(tmp_path / "w", runs), write=False)
    assert s.data["with_all"] is None and "with-all" not in s.markdown


def quoted_week(root: Path) -> Path:
    """Two reps. helped: must A met only with the skill. hurt-avoid: avoid V violated only
    with the skill. hurt-must: must C met only without it (no avoid moved)."""
    def items(prompt: str, cond: str, rep: int) -> list[Item]:
        w = cond == "with-skill"
        if prompt == "helped":
            return [("must", "A", w, f"unlock-{rep}"), ("must", "B", True, "b"),
                    ("avoid", "V", False, "")]
        if prompt == "hurt-avoid":
            return [("must", "A", not w, "a"), ("must", "B", True, "b"),
                    ("avoid", "V", w, f"misled-{rep}")]
        return [("must", "C", not w, f"base-{rep}"), ("must", "D", True, "d"),
                ("avoid", "V", False, "")]
    return write_runs(root, [run(p, c, r, items(p, c, r))
                             for p in ("helped", "hurt-avoid", "hurt-must")
                             for c in ("no-skill", "with-skill") for r in (1, 2)])


def test_impact_carries_the_unlock_and_the_misled_quote(tmp_path: Path) -> None:
    s = summarize_week(quoted_week(tmp_path / "w"), write=False)
    impact = {r["prompt"]: r for r in s.data["audit"]["impact"]}
    assert {p: r["outcome"] for p, r in impact.items()} == {
        "helped": "helped", "hurt-avoid": "hurt", "hurt-must": "hurt"}
    assert impact["helped"]["quote"] == {
        "kind": "unlock", "item_type": "must", "item_text": "A", "evidence": "unlock-1",
        "condition": "with-skill", "rep": 1, "rate_with": 1.0, "rate_no": 0.0}
    assert impact["hurt-avoid"]["quote"] == {
        "kind": "misled", "item_type": "avoid", "item_text": "V", "evidence": "misled-1",
        "condition": "with-skill", "rep": 1, "rate_with": 1.0, "rate_no": 0.0}
    # No avoid moved: the must lost, quoted where it was met (the no-skill answer).
    assert impact["hurt-must"]["quote"] == {
        "kind": "misled", "item_type": "must", "item_text": "C", "evidence": "base-1",
        "condition": "no-skill", "rep": 1, "rate_with": 0.0, "rate_no": 1.0}
    md = s.markdown
    assert "must “A” — with-skill r1: “unlock-1”" in md
    assert "avoid “V” — with-skill r1: “misled-1”" in md


def test_no_op_verdicts_carry_no_quote(tmp_path: Path) -> None:
    runs = [run("same", c, 1, musts(2)) for c in ("no-skill", "with-skill")]
    s = summarize_week(write_runs(tmp_path / "w", runs), write=False)
    assert [(r["outcome"], r["quote"]) for r in s.data["audit"]["impact"]] == [("no-op", None)]


def improvements_week(root: Path) -> Path:
    """Two models, one rep. sonnet is stronger (higher no-skill must coverage overall)."""
    runs: list[tuple[dict[str, Any], list[Item]]] = []
    # (no, with) must coverage out of 3, per prompt, per model.
    cov = {"hurts": {"sonnet": (3, 2), "haiku": (3, 1)},          # −0.33, −0.67: hurt on both
           "noop": {"sonnet": (2, 2), "haiku": (1, 1)},           # no-op on both
           "hidden": {"sonnet": (3, 3), "haiku": (0, 3)},         # never invoked anywhere
           "shallow": {"sonnet": (3, 3), "haiku": (0, 3)}}        # top-level only on sonnet
    for p, per_model in cov.items():
        for m, (no, wi) in per_model.items():
            runs.append(run(p, "no-skill", 1, musts(no), model=m, family=f"fam-{p}"))
            extra = {"invocation_status": "NOT_INVOKED" if p == "hidden" else "VERIFIED",
                     "top_level_only": int(p == "shallow" and m == "sonnet")}
            if extra["top_level_only"]:
                extra["invocation_status"] = "PARTIAL"
            runs.append(run(p, "with-skill", 1, musts(wi), model=m, family=f"fam-{p}",
                            **extra))
    week = write_runs(root, runs)
    audit = {"skill_invocation": {"evidence": "loaded via Skill tool; linked sub-files never "
                                              "opened: ['references/deep.md']"}}
    (week / "shallow-sonnet-with-skill-r1-w").mkdir()
    (week / "shallow-sonnet-with-skill-r1-w" / "audit.json").write_text(json.dumps(audit))
    return week


def test_suggested_improvements_name_the_skill_and_the_evidence(tmp_path: Path) -> None:
    s = summarize_week(improvements_week(tmp_path / "w"), write=False)
    imp = s.data["improvements"]
    assert imp["strongest_model"] == "sonnet"
    found = {(i["skill"], i["prompt"], i["pattern"]) for i in imp["items"]}
    assert found == {
        ("fam-hurts", "hurts", "hurt on every model"),
        ("fam-noop", "noop", "no-op on every model"),
        ("fam-hidden", "hidden", "never invoked"),
        ("fam-shallow", "shallow", "misuse on the strongest model"),
    }
    by = {i["pattern"]: i["evidence"] for i in imp["items"]}
    assert "sonnet -0.333, haiku -0.667" in by["hurt on every model"]
    assert "misled quote: must “must 2” (no-skill r1: “said 2”)" in by["hurt on every model"]
    assert "loaded in 2 of 2 with-skill runs" in by["no-op on every model"]
    assert by["never invoked"] == "NOT_INVOKED in all 2 audited with-skill runs (haiku, sonnet)"
    assert "1 of 1 with-skill runs on sonnet" in by["misuse on the strongest model"]
    assert "references/deep.md" in by["misuse on the strongest model"]
    md = s.markdown
    assert "## Suggested improvements" in md
    assert "- **fam-hidden** (prompt hidden) — never invoked: the skill is never discovered" in md


def test_misuse_on_a_weaker_model_only_is_not_suggested(tmp_path: Path) -> None:
    runs = []
    for m, no in (("sonnet", 3), ("haiku", 0)):
        runs.append(run("p", "no-skill", 1, musts(no), model=m))
        runs.append(run("p", "with-skill", 1, musts(3), model=m,
                        invocation_status="PARTIAL" if m == "haiku" else "VERIFIED",
                        top_level_only=int(m == "haiku")))
    s = summarize_week(write_runs(tmp_path / "w", runs), write=False)
    assert s.data["improvements"]["items"] == []
    assert "_None: no skill hurt" in s.markdown


def test_dense_unique_helpers_match_numpy() -> None:
    """The quotes' table-marking ``unique`` (no sort on a big week) gives numpy's answer, and
    falls back to it for a wide key span."""
    import numpy as np

    from pytest_skilllift.report.quotes import _unique_first, _unique_inverse

    rng = np.random.default_rng(0)
    for n, span in ((1, 1), (1000, 50), (100_000, 20_000), (10, 10**9)):
        keys = rng.integers(0, span, n)
        for ours, theirs in ((_unique_inverse(keys, span), np.unique(keys, return_inverse=True)),
                             (_unique_first(keys, span), np.unique(keys, return_index=True))):
            assert all(np.array_equal(a, b) for a, b in zip(ours, theirs, strict=True))
