"""Quality gates: ``[SCOPE.]METRIC OP VALUE[:hard|:soft]`` over a week's numbers.  Pure.

The semantics follow the Drupal ai_eval scoring document (Quality gate, Hard and soft gates,
The coverage guard), applied to this project's metrics:

* a gate is a metric, a comparison and a threshold; it is **hard** by default (a failed hard
  gate fails the CI job), **soft** gates are reported the same way and never change the exit
  status;
* SCOPE narrows where the metric is measured: a model label, a condition (``no-skill``,
  ``with-skill``) or a prompt name, chained with dots (``haiku.with-skill.must_coverage>=0.8``).
  A dimension left unscoped must hold for **every** value of it: ``must_lift>0`` must hold for
  every model, ``pass_rate>=0.6`` for every model and both conditions. ``coverage`` is the
  exception: it pools the runs the scope selects (unscoped, the whole week);
* validation is metric-aware: an unknown metric or scope is an error listing the valid ones, a
  gate that can never pass is an error, one that always passes is a warning;
* the coverage guard forces every gate to fail when too few runs were graded: a judge outage
  must not read as a PASS on a lucky subset;
* a measurement that does not exist (no lift with one arm, no interval below two prompts) is
  never a pass.

Measured values come from a :class:`Measures` (built by ``report.verdicts`` from a week).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_skilllift.intervals import EPS  # comparisons: equal within float noise
from pytest_skilllift.model import CONDITIONS, DEFAULT_PASS_THRESHOLD

if TYPE_CHECKING:
    from pytest_skilllift.report.summarize import Summary

#: The vocabulary of the ``verdict`` metric (one vote per prompt, ``report.verdicts``).
VERDICTS: tuple[str, ...] = ("helps", "no change", "hurts", "underpowered")
OPS: tuple[str, ...] = (">=", "<=", "==", ">", "<")


class GateError(ValueError):
    """A gate expression that cannot be used; the message says what is valid."""


@dataclass(frozen=True)
class Metric:
    """One gateable metric: where it is measured and the range of values it can take."""

    name: str
    #: ``model`` (one value per model), ``cell`` (per model × condition), ``pooled``
    #: (``coverage``: the scope selects runs), ``verdict`` (categorical, per model).
    level: str
    lo: float
    hi: float
    description: str
    prompt_scope: bool = True
    #: Conditions it may be scoped to (``model``-level lifts compare the two, so none).
    conditions: tuple[str, ...] = CONDITIONS
    #: A count: ``==`` is allowed too (``dormancy_violations==0``).
    integer: bool = False


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("must_lift", "model", -1.0, 1.0, "must-coverage lift, with-skill − no-skill",
           conditions=()),
    Metric("must_lift_ci_low", "model", -math.inf, 1.0,
           "lower end of the lift's 95% t interval (>0: significantly positive)",
           prompt_scope=False, conditions=()),
    Metric("composite_lift", "model", -1.0, 1.0, "composite lift, with-skill − no-skill",
           conditions=()),
    Metric("must_coverage", "cell", 0.0, 1.0, "share of must items met"),
    Metric("bonus_rate", "cell", 0.0, 1.0, "share of bonus items met"),
    Metric("composite", "cell", 0.0, 1.0, "clamp(must + 0.10·bonus − 0.25·avoid, 0, 1)"),
    Metric("pass_rate", "cell", 0.0, 1.0, "share of prompt×reps whose composite reaches the "
           "pass threshold"),
    Metric("pass_rate_ci_low", "cell", 0.0, 1.0, "lower end of the pass rate's prompt-"
           "clustered 95% interval (exact at the design effect's effective sample size, not "
           "Wilson: reps of one prompt are correlated; never 1 at the ceiling)",
           prompt_scope=False),
    Metric("avoid_violations", "cell", 0.0, math.inf, "avoid items violated per answer"),
    Metric("trigger_miss_rate", "model", 0.0, 1.0, "share of with-skill runs that never "
           "reached the skill", conditions=("with-skill",)),
    Metric("coverage", "pooled", 0.0, 1.0, "share of runs graded"),
    Metric("verdict", "verdict", 0.0, 0.0, "one vote per prompt (dotnet/skills' Vally "
           f"rule): {', '.join(VERDICTS)}", prompt_scope=False, conditions=()),
    Metric("version_lift", "model", -1.0, 1.0, "must-coverage difference with-skill − "
           "with-skill@REF (>0: the edit helped)", conditions=()),
    Metric("version_lift_ci_low", "model", -math.inf, 1.0, "lower end of the version lift's "
           "95% t interval (>-0.05: the edit did not make it worse)", prompt_scope=False,
           conditions=()),
    Metric("pass_at_k", "cell", 0.0, 1.0, "share of prompts with some rep passing (pass@k)"),
    Metric("pass_hat_k", "cell", 0.0, 1.0, "share of prompts with every rep passing (pass^k)"),
    Metric("flakiness", "cell", 0.0, 1.0, "share of prompts whose reps disagree on pass"),
    Metric("dormancy_violations", "model", 0.0, math.inf, "should-not trigger queries that "
           "fired the skill (must stay dormant: ==0)", prompt_scope=False, conditions=(),
           integer=True),
    Metric("reward_lift", "model", -1.0, 1.0, "task reward lift (Harbor tasks' verifier "
           "reward), with-skill − no-skill, mean over tasks", prompt_scope=False,
           conditions=()),
    Metric("reward_lift_ci_low", "model", -math.inf, 1.0, "lower end of the reward lift's "
           "95% t interval (>0: significantly positive)", prompt_scope=False, conditions=()),
    Metric("reward_pass_rate", "cell", 0.0, 1.0, "share of a task arm's rewarded runs "
           "whose reward reaches the pass reward (1)", prompt_scope=False),
)}


@dataclass(frozen=True)
class Gate:
    """A parsed gate. ``scope`` is the raw dotted scope text; after :func:`resolve` the
    ``model``, ``condition`` and ``prompt`` fields say what it selects."""

    expr: str
    scope: str
    metric: str
    op: str
    value: float | str
    hard: bool = True
    model: str | None = None
    condition: str | None = None
    prompt: str | None = None

    @property
    def threshold_text(self) -> str:
        """The comparison as text: ``>= 0.1``."""
        v = self.value
        return f"{self.op} {v}" if isinstance(v, str) else f"{self.op} {v:g}"


_GATE_RE = re.compile(r"^(?P<lhs>[^<>=]+?)\s*(?P<op>>=|<=|==|>|<)\s*(?P<rhs>.*?)\s*$")


def parse_gate(text: str) -> Gate:
    """Parse ``[SCOPE.]METRIC OP VALUE[:hard|:soft]`` (syntax and metric only; scopes are
    checked by :func:`resolve`, the range by :func:`check_range`)."""
    raw = text.strip()
    m = _GATE_RE.match(raw)
    if not raw or m is None:
        raise GateError(f"gate {text!r}: write [SCOPE.]METRIC OP VALUE[:hard|:soft], e.g. "
                        "'must_lift_ci_low>0' or 'haiku.with-skill.pass_rate>=0.8:soft'")
    lhs, op, rhs = m.group("lhs").strip(), m.group("op"), m.group("rhs")
    hard = True
    if ":" in rhs:
        rhs, _, kind = rhs.rpartition(":")
        kind = kind.strip().lower()
        if kind not in ("hard", "soft"):
            raise GateError(f"gate {text!r}: unknown gate kind {kind!r}; end the gate with "
                            ":hard (the default: a failure fails the run) or :soft (reported "
                            "only)")
        hard = kind == "hard"
        rhs = rhs.strip()
    scope, _, metric = lhs.rpartition(".")
    metric = metric.strip()
    if metric not in METRICS:
        raise GateError(f"gate {text!r}: unknown metric {metric!r}; valid metrics: "
                        f"{', '.join(METRICS)}")
    spec = METRICS[metric]
    value: float | str
    if spec.level == "verdict":
        if op != "==":
            raise GateError(f"gate {text!r}: the verdict metric only takes ==, e.g. "
                            "'verdict==helps'")
        word = rhs.strip().strip("'\"").lower().replace("_", " ").replace("-", " ")
        if word == "inconclusive":
            raise GateError(f"gate {text!r}: the verdict follows the one-vote-per-prompt rule "
                            "now (docs/ci-verdicts.md) and 'inconclusive' is gone: too few "
                            "voting prompts is 'underpowered'; valid verdicts: "
                            f"{', '.join(VERDICTS)}")
        if word not in VERDICTS:
            raise GateError(f"gate {text!r}: unknown verdict {rhs!r}; valid verdicts: "
                            f"{', '.join(VERDICTS)}")
        value = word
    else:
        if op == "==" and not spec.integer:
            raise GateError(f"gate {text!r}: == is only for the verdict metric and counts "
                            f"({', '.join(m.name for m in METRICS.values() if m.integer)}); "
                            "use >=, >, <= or < with a number")
        try:
            value = float(rhs)
        except ValueError:
            raise GateError(f"gate {text!r}: {rhs!r} is not a number; {metric} is compared "
                            f"with a number ({_range_text(spec)})") from None
        if not math.isfinite(value):
            raise GateError(f"gate {text!r}: the threshold must be a finite number")
    return Gate(expr=raw, scope=scope.strip(), metric=metric, op=op, value=value, hard=hard)


def _range_text(spec: Metric) -> str:
    lo = "−∞" if spec.lo == -math.inf else f"{spec.lo:g}"
    hi = "∞" if spec.hi == math.inf else f"{spec.hi:g}"
    return f"its values lie in [{lo}, {hi}]"


@dataclass(frozen=True)
class Scopes:
    """The names a scope may use in one week (or one session)."""

    models: tuple[str, ...]
    prompts: tuple[str, ...]
    #: Conditions a per-cell metric may be scoped to: the lift's two, and the week's other
    #: arms (``with-all``, ``with-skill@HEAD~1``…).
    conditions: tuple[str, ...] = CONDITIONS

    def describe(self) -> str:
        """The models, conditions and prompts a gate may name (for an error message)."""
        prompts = ", ".join(self.prompts[:20]) + (
            f" … ({len(self.prompts)} in all)" if len(self.prompts) > 20 else "")
        return (f"models: {', '.join(self.models) or 'none'}; conditions: "
                f"{', '.join(self.conditions)}; prompts: {prompts or 'none'}")


def resolve(gate: Gate, scopes: Scopes) -> Gate:
    """Bind the gate's scope to a model, a condition and/or a prompt of ``scopes``.

    Names may themselves contain dots (a model label ``sonnet-4.5``): the scope text is
    matched greedily against the known names, longest first."""
    text = gate.scope
    found: dict[str, str] = {}
    conditions = tuple(dict.fromkeys((*CONDITIONS, *scopes.conditions)))
    kinds = (("model", scopes.models), ("condition", conditions), ("prompt", scopes.prompts))
    pos = 0
    while pos < len(text):
        best: tuple[int, str, str] | None = None
        for kind, names in kinds:
            for name in names:
                end = pos + len(name)
                fits = text.startswith(name, pos) and (end == len(text) or text[end] == ".")
                if fits and (best is None or len(name) > best[0]):
                    best = (len(name), kind, name)
        if best is None:
            bad = text[pos:].split(".", 1)[0]
            raise GateError(f"gate {gate.expr!r}: unknown scope {bad!r}; valid scopes — "
                            f"{scopes.describe()}")
        _, kind, name = best
        if kind in found:
            raise GateError(f"gate {gate.expr!r}: two {kind} scopes ({found[kind]!r} and "
                            f"{name!r}); a gate has at most one of each")
        found[kind] = name
        pos += len(name) + 1
    spec = METRICS[gate.metric]
    cond = found.get("condition")
    # A per-cell metric is measured in every arm of the week; the others in their own.
    allowed = (*spec.conditions, *conditions) if spec.level == "cell" else spec.conditions
    if cond is not None and cond not in allowed:
        if spec.conditions:
            why = f"is measured on {', '.join(spec.conditions)} runs only"
        elif spec.level == "verdict":
            why = "is one verdict per model, over both conditions"
        else:
            why = "compares the two conditions"
        raise GateError(f"gate {gate.expr!r}: {gate.metric} {why}; drop the {cond!r} scope")
    if "prompt" in found and not spec.prompt_scope:
        raise GateError(f"gate {gate.expr!r}: {gate.metric} has no per-prompt value; drop the "
                        f"{found['prompt']!r} scope")
    return Gate(gate.expr, gate.scope, gate.metric, gate.op, gate.value, gate.hard,
                found.get("model"), cond, found.get("prompt"))


def check_range(gate: Gate) -> str | None:
    """Raise :class:`GateError` when the gate can never pass; return a warning when it always
    passes (``must_coverage>=0``), else None."""
    spec = METRICS[gate.metric]
    if spec.level == "verdict" or isinstance(gate.value, str):
        return None
    v, lo, hi = float(gate.value), spec.lo, spec.hi
    never = {">=": v > hi, ">": v >= hi, "<=": v < lo, "<": v <= lo,
             "==": v < lo or v > hi or v != round(v)}[gate.op]
    always = {">=": v <= lo, ">": v < lo, "<=": v >= hi, "<": v > hi, "==": lo == hi == v
              }[gate.op]
    if never:
        raise GateError(f"gate {gate.expr!r} can never pass: {gate.metric} "
                        f"({spec.description}) — {_range_text(spec)}")
    if always:
        return (f"gate {gate.expr!r} always passes: {gate.metric} — {_range_text(spec)}; "
                "did you mean another threshold or metric?")
    return None


#: Metrics the methodology advises against gating on, and why (qdrant/skills SCORING.md).
ADVISED_AGAINST: dict[str, str] = {
    "composite_lift": "the methodology advises against differencing the clamped composite "
    "(qdrant/skills SCORING.md: a with-skill answer already at the 1.0 ceiling loses bonus "
    "credit the baseline still counts, so the difference misleads); gate on must_lift or "
    "must_lift_ci_low, with avoid_violations checked on its own",
}


def advice(gate: Gate) -> str | None:
    """A warning for a gate on a metric the methodology advises against, else None."""
    why = ADVISED_AGAINST.get(gate.metric)
    return None if why is None else f"gate {gate.expr!r}: {why}"


def load_gates(texts: Iterable[str], scopes: Scopes) -> tuple[list[Gate], list[str]]:
    """Parse, resolve and range-check every gate: (gates, warnings). The first problem
    raises :class:`GateError`; blank entries (ini continuation lines) are skipped."""
    gates, warnings = [], []
    for text in texts:
        if not text.strip():
            continue
        gate = resolve(parse_gate(text), scopes)
        warnings += [w for w in (check_range(gate), advice(gate)) if w]
        gates.append(gate)
    return gates, warnings


# --------------------------------------------------------------------------- evaluation


class Measures(Protocol):
    """Measured values of one week (``report.verdicts.WeekMeasures``)."""

    @property
    def models(self) -> Sequence[str]:
        """The week's model labels, in order."""
        ...

    def value(self, metric: str, model: str | None, condition: str | None,
              prompt: str | None) -> float | str | None:
        """The metric in that unit; None when it was not measured."""
        ...

    def coverage(self, model: str | None, condition: str | None,
                 prompt: str | None) -> tuple[int, int]:
        """(graded runs, runs) in the selection; None-valued dimensions are pooled."""
        ...


@dataclass(frozen=True)
class CoverageGuard:
    """Whether enough runs were graded for any gate to be believed."""

    graded: int
    total: int
    minimum: float

    @property
    def share(self) -> float | None:
        """Graded runs over all runs (None without runs)."""
        return self.graded / self.total if self.total else None

    @property
    def sufficient(self) -> bool:
        """Whether enough runs were graded for the gates to count."""
        return self.total > 0 and self.graded / self.total >= self.minimum - EPS

    def text(self) -> str:
        """``graded 40 of 48 runs (83%; minimum 50%)``, flagged when insufficient."""
        share = "n/a" if self.share is None else f"{self.share:.0%}"
        base = (f"graded {self.graded} of {self.total} runs ({share}; minimum "
                f"{self.minimum:.0%})")
        return base if self.sufficient else f"insufficient coverage: {base}"

    def to_json(self) -> dict[str, Any]:
        """The guard as gates.json stores it."""
        return {"graded_runs": self.graded, "total_runs": self.total, "share": self.share,
                "minimum": self.minimum, "sufficient": self.sufficient}


@dataclass(frozen=True)
class GateResult:
    """One gate measured in one unit (a gate without a model scope yields one per model)."""

    gate: Gate
    scope: str
    measured: float | str | None
    passed: bool
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        """The result as gates.json stores it."""
        g = self.gate
        return {"gate": g.expr, "scope": self.scope, "metric": g.metric,
                "measured": self.measured, "threshold": g.value, "op": g.op, "hard": g.hard,
                "passed": self.passed, "note": self.note}


@dataclass(frozen=True)
class GateReport:
    """Every gate's results, the coverage guard, and the verdict for the exit status."""

    results: tuple[GateResult, ...]
    coverage: CoverageGuard
    week: str = ""

    @property
    def hard_failures(self) -> list[GateResult]:
        """Hard gates that failed (they fail the session)."""
        return [r for r in self.results if r.gate.hard and not r.passed]

    @property
    def soft_failures(self) -> list[GateResult]:
        """Soft gates that failed (reported only)."""
        return [r for r in self.results if not r.gate.hard and not r.passed]

    @property
    def passed(self) -> bool:
        """No hard gate failed and the coverage guard held."""
        return self.coverage.sufficient and not self.hard_failures

    def to_json(self) -> dict[str, Any]:
        """The report as gates.json stores it."""
        return {"week": self.week, "gates": [r.to_json() for r in self.results],
                "coverage": self.coverage.to_json(), "passed": self.passed}


def _compare(measured: float | str, op: str, value: float | str) -> bool:
    if isinstance(value, str) or isinstance(measured, str):
        return op == "==" and measured == value
    m, v = float(measured), float(value)
    return {">=": m >= v - EPS, ">": m > v + EPS, "<=": m <= v + EPS, "<": m < v - EPS,
            "==": abs(m - v) <= EPS}[op]


def _units(gate: Gate, models: Sequence[str]) -> list[tuple[str | None, str | None]]:
    """(model, condition) pairs a gate must hold in."""
    spec = METRICS[gate.metric]
    if spec.level == "pooled":
        return [(gate.model, gate.condition)]
    ms: list[str | None] = [gate.model] if gate.model else list(models)
    if spec.level == "cell":
        conds: list[str | None] = [gate.condition] if gate.condition else list(CONDITIONS)
        return [(m, c) for m in ms for c in conds]
    return [(m, gate.condition) for m in ms]


def scope_name(model: str | None, condition: str | None, prompt: str | None) -> str:
    """``haiku.with-skill.qdrant-edge``, or ``week`` for the whole week."""
    return ".".join(x for x in (model, condition, prompt) if x) or "week"


def evaluate(gates: Sequence[Gate], measures: Measures, guard: CoverageGuard, *,
             week: str = "") -> GateReport:
    """Measure every gate in every unit it must hold in."""
    results: list[GateResult] = []
    for gate in gates:
        units = _units(gate, measures.models)
        if not units:
            results.append(GateResult(gate, scope_name(None, None, gate.prompt), None, False,
                                      "no model in the week"))
            continue
        for model, cond in units:
            name = scope_name(model, cond, gate.prompt)
            if METRICS[gate.metric].level == "pooled":
                graded, total = measures.coverage(model, cond, gate.prompt)
                measured: float | str | None = graded / total if total else None
            else:
                measured = measures.value(gate.metric, model, cond, gate.prompt)
            if not guard.sufficient:
                results.append(GateResult(gate, name, measured, False, "insufficient coverage"))
            elif measured is None:
                why = getattr(measures, "unmeasured_reason", None)
                reason = why(gate.metric, model) if why is not None else None
                results.append(GateResult(gate, name, None, False, reason or "not measured"))
            else:
                ok = _compare(measured, gate.op, gate.value)
                note_of = getattr(measures, "result_note", None)
                note = (note_of(gate.metric, model) if note_of is not None and not ok
                        else None)
                results.append(GateResult(gate, name, measured, ok, note or ""))
    return GateReport(tuple(results), guard, week)


# --------------------------------------------------------------------------- rendering


def _measured_text(v: float | str | None) -> str:
    if v is None:
        return "n/a"
    return v if isinstance(v, str) else f"{v:.3f}"


def _rows(report: GateReport) -> list[list[str]]:
    rows = []
    for r in report.results:
        verdict = "PASS" if r.passed else "FAIL"
        verdict += "" if r.gate.hard else " (soft)"
        if r.note:
            verdict += f" — {r.note}"
        rows.append([r.gate.expr, r.scope, _measured_text(r.measured), r.gate.threshold_text,
                     verdict])
    return rows


HEADERS = ("gate", "scope", "measured", "threshold", "verdict")


def summary_line(report: GateReport) -> str:
    """``gates: PASSED (4 hard, 1 soft; 0 failed)`` or the reason they failed."""
    hard = sum(1 for r in report.results if r.gate.hard)
    soft = len(report.results) - hard
    counts = f"{hard} hard and {soft} soft measurement(s)"
    if not report.coverage.sufficient:
        return f"gates: FAILED — {report.coverage.text()}; every gate fails ({counts})"
    if report.hard_failures:
        return (f"gates: FAILED — {len(report.hard_failures)} hard gate measurement(s) failed "
                f"({counts}; {len(report.soft_failures)} soft failed, reported only)")
    soft_note = (f"; {len(report.soft_failures)} soft failed, reported only"
                 if report.soft_failures else "")
    return f"gates: PASSED ({counts}{soft_note})"


def text_lines(report: GateReport) -> list[str]:
    """The terminal table: every gate with its measured value, threshold and verdict."""
    rows = [list(HEADERS), *_rows(report)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADERS))]
    lines = [f"quality gates, week {report.week}:" if report.week else "quality gates:"]
    if not report.coverage.sufficient:
        lines.append(f"  {report.coverage.text()} — every gate fails whatever the survivors "
                     "scored")
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
              for r in rows]
    lines.append("  " + summary_line(report))
    return lines


def markdown(report: GateReport) -> list[str]:
    """The gate table as GitHub markdown (for ``GITHUB_STEP_SUMMARY``)."""
    from pytest_skilllift.report.markdown import md_table

    title = f"### Quality gates — week {report.week}" if report.week else "### Quality gates"
    L = [title, ""]
    if not report.coverage.sufficient:
        L += [f"**{report.coverage.text()}** — every gate fails.", ""]
    # Gate expressions and measures are the user's settings and our numbers, not model text:
    # only the pipe is escaped, so the raw table keeps `>=` readable.
    L += md_table(HEADERS, [[c.replace("|", "\\|") for c in r] for r in _rows(report)])
    L += ["", f"**{summary_line(report)}**", ""]
    return L


def lift_markdown(data: Mapping[str, Any]) -> list[str]:
    """The lift table of a scorecard dict, compact, for ``GITHUB_STEP_SUMMARY``."""
    from pytest_skilllift.report.markdown import ci_flag, fmt, md_table, signed, untrusted

    models: dict[str, Any] = data.get("models", {})
    L = [f"### Skill lift — week {data.get('week', '')}", ""]
    if not models:
        return [*L, "_No lift could be computed (see the scorecard's input problems)._", ""]
    rows = []
    for label, m in models.items():
        se = fmt(m.get("must_lift_se")) if m.get("must_lift_se") is not None else "n/a"
        st = m.get("sign_test") or {}
        rows.append([untrusted(label), f"{fmt(m.get('must_no'))} → {fmt(m.get('must_with'))}",
                     f"{signed(m.get('must_lift'))} ± {se}", ci_flag(m),
                     st.get("verdict", "n/a"), str(m.get("n_prompts", 0))])
    L += md_table(["model", "must_coverage no → with", "lift ± SE", "95% CI ≠ 0?",
                   "sign test", "n prompts"], rows)
    cov = data.get("coverage", {})
    L += ["", f"graded {cov.get('graded_runs', 0)} of {cov.get('total_runs', 0)} runs", ""]
    return L


__all__ = [
    "METRICS", "OPS", "VERDICTS", "CoverageGuard", "Gate", "GateError", "GateReport",
    "GateResult", "Measures", "Metric", "Scopes", "check_range", "evaluate", "lift_markdown",
    "load_gates", "markdown", "measure", "parse_gate", "resolve", "scope_name", "summary_line",
    "text_lines",
]


def measure(gates: Sequence[Gate], summary: Summary | None, min_coverage: float,
            week: str) -> GateReport:
    """Measure ``gates`` on a summarized week (None: nothing was measured)."""
    from pytest_skilllift.report.verdicts import WeekMeasures

    if summary is None:
        guard = CoverageGuard(0, 0, min_coverage)
        return evaluate(gates, _Nothing(), guard, week=week)
    data = summary.data
    threshold = float(data.get("pass_threshold", DEFAULT_PASS_THRESHOLD))
    measures = WeekMeasures(summary.week, summary.aggregates, threshold, card=data)
    graded, total = measures.coverage(None, None, None)
    guard = CoverageGuard(graded, total, min_coverage)
    return evaluate(gates, measures, guard, week=data.get("week", week))


class _Nothing:
    """Measures of a session that produced no run."""

    models: Sequence[str] = ()

    def value(self, metric: str, model: str | None, condition: str | None,
              prompt: str | None) -> float | str | None:
        return None

    def coverage(self, model: str | None, condition: str | None,
                 prompt: str | None) -> tuple[int, int]:
        return 0, 0


def append_step_summary(path: Path, report: GateReport | None,
                        data: Mapping[str, Any] | None) -> None:
    """Append the gate table and the lift table to GitHub's job summary file."""
    lines: list[str] = []
    if report is not None:
        lines += markdown(report)
    if data is not None:
        lines += lift_markdown(data)
    if lines:
        with path.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
