"""Quality gates: the expression, metric-aware validation, measurement, ``skilllift gate``."""

from __future__ import annotations

import argparse
import io
import json
import shutil
from pathlib import Path

import pytest

from pytest_skilllift.cli import gate as gate_cli
from pytest_skilllift.report import gates as g
from pytest_skilllift.report.gates import measure
from pytest_skilllift.report.summarize import Summary, summarize_week
from pytest_skilllift.week import identity as ident

from .test_week_io import write_week

SCOPES = g.Scopes(models=("sonnet", "haiku", "sonnet-4.5"), prompts=("qdrant-edge", "p.dot"))


def load(text: str) -> g.Gate:
    gates, _ = g.load_gates([text], SCOPES)
    return gates[0]


# --- the expression ---------------------------------------------------------------------------


def test_parse_defaults_to_hard_and_chains_scopes() -> None:
    gate = load("haiku.with-skill.must_coverage >= 0.8")
    assert (gate.model, gate.condition, gate.prompt, gate.metric, gate.op, gate.value,
            gate.hard) == ("haiku", "with-skill", None, "must_coverage", ">=", 0.8, True)
    soft = load("qdrant-edge.haiku.composite_lift>0:soft")
    assert (soft.model, soft.prompt, soft.hard) == ("haiku", "qdrant-edge", False)
    verdict = load("sonnet.verdict==helps")
    assert verdict.value == "helps" and verdict.op == "=="
    assert load("verdict==no change:soft").value == "no change"
    # names containing dots resolve against the known names, longest first
    dotted = load("sonnet-4.5.p.dot.must_lift<0.5")
    assert (dotted.model, dotted.prompt) == ("sonnet-4.5", "p.dot")


@pytest.mark.parametrize(("text", "message"), [
    ("must_lift", "write [SCOPE.]METRIC OP VALUE"),
    ("lift>0", "unknown metric 'lift'; valid metrics: must_lift, must_lift_ci_low, "
     "composite_lift, must_coverage, bonus_rate, composite, pass_rate, pass_rate_ci_low, "
     "avoid_violations, "
     "trigger_miss_rate, coverage, verdict"),
    ("opus.must_lift>0", "unknown scope 'opus'; valid scopes — models: sonnet, haiku, "
     "sonnet-4.5; conditions: no-skill, with-skill; prompts: qdrant-edge, p.dot"),
    ("haiku.sonnet.must_lift>0", "two model scopes"),
    ("must_lift>0:maybe", "unknown gate kind 'maybe'"),
    ("must_lift>high", "'high' is not a number"),
    ("must_lift==0.3", "== is only for the verdict metric and counts (dormancy_violations)"),
    ("verdict>=helps", "the verdict metric only takes =="),
    ("verdict==great", "unknown verdict 'great'; valid verdicts: helps, no change, hurts, "
     "underpowered"),
    ("verdict==inconclusive", "too few voting prompts is 'underpowered'"),
    ("dormancy_violations==0.5", "can never pass"),
    ("dormancy_violations<0", "can never pass"),
    ("haiku.version_lift_ci_low>2", "can never pass"),
    ("with-skill.must_lift>0", "must_lift compares the two conditions; drop the 'with-skill'"),
    ("no-skill.trigger_miss_rate<0.2", "is measured on with-skill runs only"),
    ("qdrant-edge.must_lift_ci_low>0", "has no per-prompt value"),
    ("must_coverage>1.2", "can never pass: must_coverage"),
    ("pass_rate>=1.5", "can never pass: pass_rate"),
    ("avoid_violations<0", "can never pass"),
    ("coverage>1", "can never pass"),
])
def test_validation_errors_say_what_is_valid(text: str, message: str) -> None:
    with pytest.raises(g.GateError) as err:
        g.load_gates([text], SCOPES)
    assert message in str(err.value), str(err.value)


def test_always_passing_gates_warn() -> None:
    gates, warnings = g.load_gates(["must_coverage>=0", "must_lift<=1", "pass_rate>0.5",
                                    "", "must_lift_ci_low>-5"], SCOPES)
    assert len(gates) == 4  # the blank ini line is skipped
    assert len(warnings) == 2
    assert "'must_coverage>=0' always passes" in warnings[0]
    assert "'must_lift<=1' always passes" in warnings[1]


# --- measurement on the real qdrant week ------------------------------------------------------


@pytest.fixture(scope="module")
def qdrant_week(reference_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the qdrant pipeline's week 20260808 (no week.json)."""
    dst = tmp_path_factory.mktemp("qdrant") / "20260808"
    shutil.copytree(reference_data / "qdrant-skills" / "weekly" / "20260808", dst)
    return dst


@pytest.fixture(scope="module")
def qdrant_summary(qdrant_week: Path) -> Summary:
    return summarize_week(qdrant_week, write=False, plots=False)


def measured(summary: Summary, *texts: str, min_coverage: float = 0.5) -> g.GateReport:
    scopes = g.Scopes(tuple(summary.week.models), tuple(summary.week.prompts))
    gates, _ = g.load_gates(texts, scopes)
    return measure(gates, summary, min_coverage, "20260808")


def test_gates_measure_the_scorecards_numbers(qdrant_summary: Summary) -> None:
    data = qdrant_summary.data
    rep = measured(qdrant_summary, "must_lift_ci_low>0", "haiku.with-skill.pass_rate>=0.7",
                   "qdrant-edge.haiku.must_lift>=0.9", "with-skill.coverage>=0.99",
                   "verdict==helps", "sonnet.no-skill.avoid_violations<=0.25",
                   "haiku.trigger_miss_rate<0.1:soft")
    by = {(r.gate.expr, r.scope): r for r in rep.results}
    # an unscoped per-model metric holds for every model: one result per model
    assert by[("must_lift_ci_low>0", "sonnet")].measured == pytest.approx(
        data["models"]["sonnet"]["ci_low"])
    assert by[("must_lift_ci_low>0", "haiku")].passed
    cell = next(c for c in data["cells"] if (c["model"], c["condition"]) == ("haiku",
                                                                             "with-skill"))
    r = by[("haiku.with-skill.pass_rate>=0.7", "haiku.with-skill")]
    assert r.measured == pytest.approx(cell["pass_rate"]) and not r.passed  # 36/52 < 0.7
    prompt = next(p for p in data["prompts"] if (p["prompt"], p["model"]) == ("qdrant-edge",
                                                                              "haiku"))
    assert by[("qdrant-edge.haiku.must_lift>=0.9", "haiku.qdrant-edge")].measured == (
        pytest.approx(prompt["must_lift"]))
    # coverage pools the runs the scope selects
    assert by[("with-skill.coverage>=0.99", "with-skill")].measured == 1.0
    assert [r.measured for r in rep.results if r.gate.metric == "verdict"] == ["helps", "helps"]
    assert by[("sonnet.no-skill.avoid_violations<=0.25", "sonnet.no-skill")].passed
    soft = by[("haiku.trigger_miss_rate<0.1:soft", "haiku")]
    assert soft.measured == pytest.approx(7 / 52) and not soft.passed
    assert not rep.passed and len(rep.hard_failures) == 1 and len(rep.soft_failures) == 1
    assert "FAILED — 1 hard gate measurement(s) failed" in g.summary_line(rep)


def test_unscoped_cell_metric_holds_for_both_conditions(qdrant_summary: Summary) -> None:
    rep = measured(qdrant_summary, "composite>=0.5")
    assert [r.scope for r in rep.results] == ["sonnet.no-skill", "sonnet.with-skill",
                                              "haiku.no-skill", "haiku.with-skill"]
    assert [r.passed for r in rep.results] == [True, True, False, True]  # haiku no-skill 0.38


def test_a_missing_measurement_never_passes(qdrant_summary: Summary) -> None:
    rep = measured(qdrant_summary, "qdrant-edge.haiku.must_lift>-1")
    assert rep.passed
    scopes = g.Scopes(("sonnet", "haiku", "opus"), tuple(qdrant_summary.week.prompts))
    gates, _ = g.load_gates(["opus.must_lift>-1"], scopes)
    rep = measure(gates, qdrant_summary, 0.5, "w")
    assert rep.results[0].measured is None and not rep.results[0].passed
    assert rep.results[0].note == "not measured"


# --- the coverage guard -----------------------------------------------------------------------


def mostly_unscored_week(root: Path) -> Path:
    """9 prompts × 1 model × 2 conditions × 1 rep; 12 of the 18 runs errored (CLI exit 1)."""
    prompts = tuple(f"p{i}" for i in range(9))
    return write_week(root, prompts=prompts, reps=1,
                      run_override=lambda run: run.update(exit_code="1")
                      if int(run["prompt"][1:]) >= 3 else None)


def test_coverage_guard_fails_every_gate(tmp_path: Path) -> None:
    week = mostly_unscored_week(tmp_path / "w")
    s = summarize_week(week, write=False, plots=False)
    rep = measured(s, "must_lift>-1", "coverage>=0.1:soft")
    assert rep.coverage.graded == 6 and rep.coverage.total == 18
    assert not rep.coverage.sufficient and not rep.passed
    assert all(not r.passed and r.note == "insufficient coverage" for r in rep.results)
    # the survivors would pass: the verdict is forced, not computed
    value = rep.results[0].measured
    assert isinstance(value, int | float) and value > -1
    text = "\n".join(g.text_lines(rep))
    assert "insufficient coverage: graded 6 of 18 runs (33%; minimum 50%)" in text
    # the minimum is a setting: at 30% the same week passes
    assert measured(s, "must_lift>-1", min_coverage=0.3).passed


# --- skilllift gate ---------------------------------------------------------------------------


def cli(*argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="skilllift")
    gate_cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["gate", *argv])
    out, err = io.StringIO(), io.StringIO()
    import contextlib

    with contextlib.redirect_stderr(err):
        rc = gate_cli.run(args, out)
    return rc, out.getvalue(), err.getvalue()


def test_gate_cli_hard_vs_soft_exit_codes(qdrant_week: Path) -> None:
    # a qdrant-format week (no week.json) with explicit gates
    rc, out, _ = cli(str(qdrant_week), "--gate", "must_lift_ci_low>0")
    assert rc == 0 and "gates: PASSED" in out and "must_lift_ci_low>0" in out
    rc, out, _ = cli(str(qdrant_week), "--gate", "must_lift_ci_low>0",
                     "--gate", "haiku.with-skill.pass_rate>=0.9")
    assert rc == 1 and "FAIL" in out and "0.692" in out
    rc, out, _ = cli(str(qdrant_week), "--gate", "must_lift_ci_low>0",
                     "--gate", "haiku.with-skill.pass_rate>=0.9:soft")
    assert rc == 0 and "FAIL (soft)" in out


def test_gate_cli_json_shape(qdrant_week: Path) -> None:
    rc, out, _ = cli(str(qdrant_week), "--gate", "verdict==helps", "--gate",
                     "sonnet.with-skill.must_coverage>=0.95:soft", "--output", "json")
    data = json.loads(out)
    assert rc == 0 and data["passed"] is True
    assert set(data) >= {"gates", "coverage", "passed"}
    first = data["gates"][0]
    assert {k: first[k] for k in ("gate", "scope", "metric", "measured", "threshold", "hard",
                                  "passed")} == {
        "gate": "verdict==helps", "scope": "sonnet", "metric": "verdict", "measured": "helps",
        "threshold": "helps", "hard": True, "passed": True}
    soft = data["gates"][-1]
    assert soft["hard"] is False and soft["passed"] is False
    assert soft["measured"] == pytest.approx(0.9086538461538461)
    assert data["coverage"] == {"graded_runs": 208, "total_runs": 208, "share": 1.0,
                                "minimum": 0.5, "sufficient": True}


def test_gate_cli_usage_errors(qdrant_week: Path, tmp_path: Path) -> None:
    rc, _, err = cli(str(qdrant_week))
    assert rc == 2 and "no gate to measure" in err and "no week.json" in err
    rc, _, err = cli(str(qdrant_week), "--gate", "pass_rate>=1.5")
    assert rc == 2 and "can never pass" in err
    rc, _, err = cli(str(tmp_path), "--gate", "must_lift>0")
    assert rc == 2 and "not a week directory" in err
    rc, _, err = cli(str(qdrant_week), "--gate", "must_coverage>=0", "--gate", "must_lift>0")
    assert rc == 0 and "warning: gate 'must_coverage>=0' always passes" in err


def test_gate_cli_uses_recorded_gates_not_an_edited_config(qdrant_week: Path,
                                                           tmp_path: Path) -> None:
    week = tmp_path / "20260808"
    shutil.copytree(qdrant_week, week)
    from .test_week_identity import make

    # the run started with a failing hard gate; editing the config afterwards does not
    # change the verdict of that week
    ident.write_week_record(week, ident.WeekRecord(
        identity=make(), gates=("haiku.with-skill.pass_rate>=0.9",)))
    rc, out, _ = cli(str(week))
    assert rc == 1 and "gates recorded in" in out and "haiku.with-skill.pass_rate>=0.9" in out
    # an explicit --gate is a new question on the same week
    rc, out, _ = cli(str(week), "--gate", "must_lift>0")
    assert rc == 0 and "gates recorded" not in out
    # the recorded coverage minimum is the week's
    ident.write_week_record(week, ident.WeekRecord(identity=make(), gates=("must_lift>0",),
                                                   min_coverage=1.0))
    rc, out, _ = cli(str(week), "--output", "json")
    assert rc == 0 and json.loads(out)["coverage"]["minimum"] == 1.0


def test_gate_cli_coverage_guard(tmp_path: Path) -> None:
    week = mostly_unscored_week(tmp_path / "w")
    rc, out, _ = cli(str(week), "--gate", "must_lift>-1")
    assert rc == 1
    assert "insufficient coverage: graded 6 of 18 runs (33%; minimum 50%)" in out


def test_github_step_summary(qdrant_week: Path, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "step.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    rc, _, _ = cli(str(qdrant_week), "--gate", "must_lift_ci_low>0")
    assert rc == 0
    text = summary.read_text()
    assert text.startswith("earlier step\n")  # appended, never overwritten
    assert "### Quality gates — week 20260808" in text
    assert "| must_lift_ci_low>0 | haiku " in text
    assert "### Skill lift — week 20260808" in text and "| haiku  | 0.393 → 0.769 " in text


def test_settings_read_gates_and_the_pass_threshold() -> None:
    from pytest_skilllift.config import OPTIONS, Settings, SettingsError

    def build(**over: object) -> Settings:
        values = {o.name: o.default for o in OPTIONS}
        values.update(over)
        return Settings.from_values(lambda o: values[o.name], enabled=True, rootdir=Path("/p"))

    s = build(gate=["must_lift>0", " ", "verdict==helps:soft"])
    assert s.gates == ("must_lift>0", "verdict==helps:soft") and s.pass_threshold == 0.7
    assert Settings.from_wire(json.loads(json.dumps(s.to_wire()))).gates == s.gates
    with pytest.raises(SettingsError, match="pass-threshold is a composite, within"):
        build(**{"pass-threshold": 3.5})
