"""Batch judging through OpenAI's Batch API and Gemini's batch mode: the real ``openai`` and
``google-genai`` SDKs against the stand-in's batch endpoints (files, batches, batchGenerateContent,
batches/{id}), graded by the same scripted judges as direct calls."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.judge.batch import BATCH_PRICE_FACTOR, BatchJudge, BatchRequest, custom_id
from pytest_skilllift.judge.factory import build_batch_judge, build_judge
from pytest_skilllift.judge.protocol import JUDGE_MARKER, build_judge_request
from pytest_skilllift.judge.providers import parse_judge_spec
from pytest_skilllift.testing import StandIn
from pytest_skilllift.testing.batches import BatchScript
from pytest_skilllift.testing.demo import demo_judge
from pytest_skilllift.testing.judge_script import keyword_judge
from pytest_skilllift.week.files import BATCHES_FILE
from tests.test_judge_client import ANSWER, EXPECTED, ITEMS
from tests.test_judge_panel import PANEL, make_week

KEY = "sk-batch-other-DO-NOT-WRITE-0123456789"
SPECS = ("openai:gpt-5-mini", "google:gemini-2.5-flash")
RUN_IDS = [f"prompt-{i}-gpt-with-skill-r1-20260808" for i in range(3)]
#: The request that creates a batch, per provider (what "a second create" would repeat).
CREATE = {"openai": "/v1/batches", "google": ":batchGenerateContent"}


class Interrupted(Exception):
    """Stands for a SIGINT/SIGKILL while the session waits for a batch."""


def make(api: StandIn, week: Path, spec: str, **kw: Any) -> BatchJudge:
    judge: BatchJudge = build_batch_judge(parse_judge_spec(spec), week, api_key=KEY,
                                          base_url=api.base_url, poll_s=0.0, **kw)
    return judge


def requests(judge: BatchJudge, run_ids: list[str] = RUN_IDS) -> list[BatchRequest]:
    return [judge.request(custom_id(r), build_judge_request("Q?", ANSWER, ITEMS, r))
            for r in run_ids]


def creates(api: StandIn, spec: str) -> int:
    return sum(1 for r in api.requests if r.kind == "batch" and r.method == "POST"
               and r.path.endswith(CREATE[spec.split(":")[0]]) and r.status == 200)


def direct_calls(api: StandIn) -> int:
    return sum(1 for r in api.requests if r.kind == "judge" and "batch" not in r.path)


def verdicts(result: Any) -> list[tuple[str, str]]:
    return [(v.item.key, v.verdict) for v in result.verdicts]


@pytest.mark.parametrize("spec", SPECS)
def test_a_batch_grades_as_a_direct_call_does_at_half_the_price(spec: str,
                                                                 tmp_path: Path) -> None:
    """Every request in one batch through the provider's own batch API (OpenAI: a JSONL file
    of /v1/responses calls; Gemini: inlined requests), no direct call; each result the
    verdicts a direct call gets, at half its price, named provider:model."""
    script = BatchScript(polls_before_end=2)
    with StandIn(judge=keyword_judge, api_key=KEY, batch=script) as api:
        judge = make(api, tmp_path, spec)
        got = judge.grade(requests(judge))
        assert direct_calls(api) == 0 and creates(api, spec) == 1
        batched = [r for r in api.requests if r.kind == "judge"]
        direct = build_judge(spec, api_key=KEY, base_url=api.base_url).grade(
            "Q?", ANSWER, ITEMS, RUN_IDS[0])
    assert len(batched) == len(RUN_IDS)
    body = json.dumps([r.body for r in batched])
    assert JUDGE_MARKER in body and KEY not in body
    assert set(got) == set(RUN_IDS)
    for result in got.values():
        assert result.error is None and verdicts(result) == EXPECTED
        assert result.model == spec and result.calls == 1
        assert all(v.evidence_ok for v in result.verdicts)
        assert f"through the {judge.api_name} API" in result.notes[0]
    assert verdicts(direct) == EXPECTED
    assert got[RUN_IDS[0]].cost_usd == pytest.approx(direct.cost_usd * BATCH_PRICE_FACTOR)
    assert got[RUN_IDS[0]].cost_usd > 0
    stored = json.loads((tmp_path / BATCHES_FILE).read_text())["batches"]
    assert [(b["api"], b["status"]) for b in stored] == [(spec.split(":")[0], "ended")]
    assert sorted(stored[0]["requests"]) == sorted(RUN_IDS)


@pytest.mark.parametrize("spec", SPECS)
def test_an_interrupted_batch_resumes_without_a_second_create(spec: str,
                                                              tmp_path: Path) -> None:
    """The batch id is on file before the first poll: a session killed while the batch is
    pending polls it when started again, and the stand-in's log holds one create."""
    def interrupt(_s: float) -> None:
        raise Interrupted

    with StandIn(judge=keyword_judge, api_key=KEY,
                 batch=BatchScript(polls_before_end=1)) as api:
        judge = make(api, tmp_path, spec, sleep=interrupt)
        with pytest.raises(Interrupted):
            judge.grade(requests(judge))
        assert creates(api, spec) == 1
        lines: list[str] = []
        again = make(api, tmp_path, spec, log=lines.append)
        got = again.grade(requests(again))
        assert creates(api, spec) == 1  # polled, not submitted again
        assert again.submitted == [] and len(again.resumed) == 1
        assert any(line.startswith(f"resuming {again.batch_word}") for line in lines)
        assert direct_calls(api) == 0
    assert all(verdicts(r) == EXPECTED for r in got.values())


@pytest.mark.parametrize("spec", SPECS)
def test_an_errored_request_is_retried_then_named_never_zero(spec: str,
                                                             tmp_path: Path) -> None:
    """One request of the batch errors (OpenAI: a 500 line in the error file; Gemini: an
    inlined response with an error): the others are graded; it is submitted once more in a new
    batch and, failing again, left ungraded with the provider's reason — never scored zero."""
    broken = custom_id(RUN_IDS[1])
    script = BatchScript(errored=frozenset({broken}), times=0)
    with StandIn(judge=keyword_judge, api_key=KEY, batch=script) as api:
        judge = make(api, tmp_path, spec)
        got = judge.grade(requests(judge))
        assert creates(api, spec) == 2 and judge.retried == [broken]
        assert api.openai_batches.submitted(broken) + api.gemini_batches.submitted(broken) == 2
    for run_id in (RUN_IDS[0], RUN_IDS[2]):
        assert got[run_id].error is None and verdicts(got[run_id]) == EXPECTED
    failed = got[RUN_IDS[1]]
    assert failed.verdicts == () and failed.ungraded == ITEMS and failed.cost_usd == 0
    assert failed.error is not None and "batch request errored" in failed.error
    assert "Internal error (injected by StandIn)" in failed.error
    assert "ungraded after 2 batch attempt(s)" in failed.error


@pytest.mark.parametrize("spec", SPECS)
def test_an_errored_request_that_heals_is_graded_in_the_second_batch(
        spec: str, tmp_path: Path) -> None:
    broken = custom_id(RUN_IDS[0])
    with StandIn(judge=keyword_judge, api_key=KEY,
                 batch=BatchScript(errored=frozenset({broken}), times=1)) as api:
        judge = make(api, tmp_path, spec)
        got = judge.grade(requests(judge))
        assert creates(api, spec) == 2
    assert all(r.error is None and verdicts(r) == EXPECTED for r in got.values())


def test_a_wrong_key_leaves_every_run_ungraded_with_the_reason(tmp_path: Path) -> None:
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        for spec in SPECS:
            judge: BatchJudge = build_batch_judge(parse_judge_spec(spec), tmp_path,
                                                  api_key="sk-wrong", base_url=api.base_url,
                                                  poll_s=0.0, retries=0)
            got = judge.grade(requests(judge))
            assert all(r.error is not None and f"{judge.api_name} API error" in r.error
                       and r.verdicts == () for r in got.values()), spec
            assert "sk-wrong" not in json.dumps([r.error for r in got.values()])


def _env(monkeypatch: pytest.MonkeyPatch, api: StandIn) -> None:
    for var in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.setenv(var, api.base_url)
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(var, KEY)


def _rows(week: Path) -> dict[str, list[tuple[str, str, list[tuple[str, str]], bool]]]:
    out = {}
    for path in sorted(week.glob("*/grades.json")):
        grades = json.loads(path.read_text())
        out[path.parent.name] = [(r["item_type"], r["verdict"],
                                  [(s["judge"], s["verdict"]) for s in r["samples"]],
                                  r["contested"] in (1, "1", True)) for r in grades["rows"]]
    return out


@pytest.mark.slow  # two whole-week judging passes through three SDKs, ~1 min
def test_a_panel_week_batch_judged_by_three_providers_grades_as_direct_judging(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``skilllift judge WEEK --batch --judges claude,openai:…,google:…``: each judge through
    its own provider's batch API (one create each, no direct call), the per-item majorities
    and every vote the same as ``skilllift judge --judges`` by direct calls gives, at half
    the judge cost; a second run finds every judge on file and sends nothing."""
    from pytest_skilllift.cli.main import main as skilllift

    week = make_week(tmp_path)
    direct_week = tmp_path / "direct-week"
    shutil.copytree(week, direct_week)
    runs = sorted(p.name for p in week.iterdir())
    with StandIn(judge=demo_judge(), api_key=KEY) as api:
        _env(monkeypatch, api)
        code = skilllift(["judge", str(week), "--batch", "--batch-poll", "0",
                          "--judges", ",".join(PANEL)])
        err = capsys.readouterr().err
        assert code == 0, err
        assert direct_calls(api) == 0
        batched = Counter(r.api for r in api.requests if r.kind == "judge" and r.ok)
        assert batched == {"messages": len(runs), "codex": len(runs), "gemini-cli": len(runs)}
        made = [r.path for r in api.requests if r.kind == "batch" and r.method == "POST"
                and not r.path.endswith("/files")]
        assert len(made) == 3  # one batch per judge, each through its own API
        assert skilllift(["judge", str(direct_week), "--judges", ",".join(PANEL)]) == 0
        n_before = len(api.requests)
        # Again: every judge's result is in panel.json, nothing is sent.
        assert skilllift(["judge", str(week), "--batch", "--batch-poll", "0",
                          "--judges", ",".join(PANEL)]) == 0
        resent = [r for r in api.requests[n_before:] if r.kind in ("judge", "batch")]
        assert resent == []
    for name in PANEL:
        assert f"{name}: through the " in err
    assert "at 50% of the list price" in err
    batch_rows, direct_rows = _rows(week), _rows(direct_week)
    assert sorted(batch_rows) == runs and batch_rows == direct_rows
    assert any(contested for rows in batch_rows.values() for *_, contested in rows)
    stored = json.loads((week / BATCHES_FILE).read_text())["batches"]
    assert sorted(b["api"] for b in stored) == ["anthropic", "google", "openai"]
    for run_id in runs:
        batch_cost = json.loads((week / run_id / "grades.json").read_text())["cost_usd"]
        direct_cost = json.loads((direct_week / run_id / "grades.json").read_text())["cost_usd"]
        assert batch_cost == pytest.approx(direct_cost * BATCH_PRICE_FACTOR)
        panel_file = json.loads((week / run_id / "panel.json").read_text())
        assert sorted(panel_file) == sorted(PANEL)


def test_an_openai_request_past_the_completion_window_is_expired_then_named(
        tmp_path: Path) -> None:
    """OpenAI puts a request the 24 h window did not reach in the error file with
    ``batch_expired`` (the batch ``expired``): read as expired, submitted once more, then
    left ungraded saying so."""
    late = custom_id(RUN_IDS[2])
    with StandIn(judge=keyword_judge, api_key=KEY,
                 batch=BatchScript(expired=frozenset({late}), times=0)) as api:
        judge = make(api, tmp_path, SPECS[0])
        got = judge.grade(requests(judge))
        assert creates(api, SPECS[0]) == 2
    assert got[RUN_IDS[0]].error is None and got[RUN_IDS[1]].error is None
    error = got[RUN_IDS[2]].error or ""
    assert "batch request expired" in error and "ungraded after 2 batch attempt(s)" in error
    stored = json.loads((tmp_path / BATCHES_FILE).read_text())["batches"]
    assert [b["status"] for b in stored] == ["ended", "ended"]


def test_an_interrupted_panel_resumes_each_judges_batch_without_a_second_create(
        tmp_path: Path) -> None:
    """A panel's three judges share one batch file and one lock: killed while their batches
    are pending, the next pass polls the three batches on file (one create per API in the
    stand-in's log, none added) and grades every run with every judge's vote."""
    from pytest_skilllift.judge.factory import build_batch_judges
    from pytest_skilllift.judge.panel import PanelCache
    from pytest_skilllift.judge.providers import parse_judges
    from pytest_skilllift.run.batch_grade import grade_plan_in_batches
    from pytest_skilllift.run.regrade import plan_regrade
    from pytest_skilllift.week.ledger import Ledger

    week = make_week(tmp_path)
    specs = parse_judges(",".join(PANEL))

    def interrupt(_s: float) -> None:
        raise Interrupted

    def panel(api: StandIn, **kw: Any) -> Any:
        return build_batch_judges(specs, week, api_key=KEY, base_url=api.base_url,
                                  poll_s=0.0, **kw)

    def made(api: StandIn) -> list[str]:
        return [r.path for r in api.requests if r.kind == "batch" and r.method == "POST"
                and not r.path.endswith("/files")]

    with StandIn(judge=demo_judge(), api_key=KEY,
                 batch=BatchScript(polls_before_end=1)) as api:
        plan = plan_regrade(week)
        with pytest.raises(Interrupted):
            grade_plan_in_batches(Ledger(week), plan.specs, panel(api, sleep=interrupt),
                                  cache=PanelCache(week))
        assert len(made(api)) == 3 and not list(week.glob("*/grades.json"))
        graded = grade_plan_in_batches(Ledger(week), plan_regrade(week).specs, panel(api),
                                       cache=PanelCache(week))
        assert len(made(api)) == 3  # each judge's batch polled, none created again
        assert direct_calls(api) == 0
    assert len(graded) == len(plan.specs) and all(not g.judge_error for g in graded)
    for g in graded:
        grades = json.loads((week / g.run_id / "grades.json").read_text())
        assert all([s["judge"] for s in row["samples"]] == list(PANEL)
                   for row in grades["rows"])


# ---------------------------------------------------------------------------------------------
# OpenAI's batch files are deleted once read; Gemini's inlined requests upload none


def _gone(api: StandIn, file_id: str) -> bool:
    """Whether the provider answers 404 for the file (its metadata and its content), asked
    through the official SDK as a user checking by hand would."""
    import openai

    client = openai.OpenAI(api_key=KEY, base_url=api.base_url, max_retries=0)
    try:
        for ask in (client.files.retrieve, client.files.content):
            try:
                ask(file_id)
            except openai.NotFoundError:
                continue
            return False
        return True
    finally:
        client.close()


def test_openai_batch_files_are_deleted_once_the_results_are_read(tmp_path: Path) -> None:
    """Each batch's input, output and error files are deleted (``client.files.delete``)
    once its results are read — the retried request's second batch too —, the provider
    answers 404 for each afterwards, and the batch file records them deleted."""
    broken = custom_id(RUN_IDS[1])
    lines: list[str] = []
    with StandIn(judge=keyword_judge, api_key=KEY,
                 batch=BatchScript(errored=frozenset({broken}), times=1)) as api:
        judge = make(api, tmp_path, SPECS[0], log=lines.append)
        got = judge.grade(requests(judge))
        assert all(r.error is None and verdicts(r) == EXPECTED for r in got.values())
        assert creates(api, SPECS[0]) == 2
        # batch 1: input, output, error (the errored request); batch 2: input, output
        assert len(judge.deleted) == 5 and judge.undeleted == {}
        assert api.openai_batches.files == []  # nothing left on the provider's storage
        assert all(_gone(api, f) for f in judge.deleted)
        deletes = [r for r in api.requests if r.method == "DELETE"]
        assert len(deletes) == 5 and all(r.status == 200 for r in deletes)
    stored = json.loads((tmp_path / BATCHES_FILE).read_text())["batches"]
    assert sorted(f for b in stored for f in b["files"]["deleted"]) == sorted(judge.deleted)
    assert all(b["files"]["left"] == {} for b in stored)
    assert sum("deleted its" in line for line in lines) == 2


def test_an_expired_openai_batchs_files_are_deleted_too(tmp_path: Path) -> None:
    """A batch that ended ``expired`` (a request past the completion window) has its files
    deleted as a completed one does."""
    late = custom_id(RUN_IDS[0])
    with StandIn(judge=keyword_judge, api_key=KEY,
                 batch=BatchScript(expired=frozenset({late}), times=1)) as api:
        judge = make(api, tmp_path, SPECS[0])
        got = judge.grade(requests(judge))
        statuses = [r.status for r in api.requests if r.method == "DELETE"]
        assert api.openai_batches.files == [] and statuses == [200] * len(judge.deleted)
    assert all(r.error is None for r in got.values())
    stored = json.loads((tmp_path / BATCHES_FILE).read_text())["batches"]
    assert len(stored) == 2 and all(b["files"]["deleted"] for b in stored)


def test_openai_batch_files_that_cannot_be_deleted_are_counted_and_named(
        tmp_path: Path) -> None:
    """A key without the files write permission (403 on DELETE): the grading is unharmed,
    every file left is named with why (the log, the judge's count, the batch file) and the
    batch line says how many stay — never a silent leftover."""
    from pytest_skilllift.judge.batch import BatchStore
    from pytest_skilllift.plugin.scale import files_note

    lines: list[str] = []
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        api.openai_batches.refuse_deletes = True
        judge = make(api, tmp_path, SPECS[0], log=lines.append)
        got = judge.grade(requests(judge))
        left = api.openai_batches.files
    assert all(r.error is None and verdicts(r) == EXPECTED for r in got.values())
    assert len(left) == 2 and sorted(judge.undeleted) == sorted(left)  # input + output
    assert judge.deleted == []
    assert all("HTTP 403" in why and KEY not in why for why in judge.undeleted.values())
    assert sum("could not be deleted" in line for line in lines) == 2
    store = BatchStore(tmp_path)
    store.load()
    assert store.files_left() == judge.undeleted
    note = files_note(judge.deleted, judge.undeleted)
    assert "2 could not be deleted" in note and all(f in note for f in left)


def test_a_batch_whose_files_were_deleted_is_submitted_again_not_stuck(
        tmp_path: Path) -> None:
    """A session that read and deleted a batch's files, then stopped before writing the
    grades: the next one finds the batch on file, its output 404, and submits the requests
    again (graded), instead of failing on the missing file in every later session."""
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        first = make(api, tmp_path, SPECS[0])
        first.grade(requests(first))  # results read, files deleted; grades never written
        assert api.openai_batches.files == []
        lines: list[str] = []
        again = make(api, tmp_path, SPECS[0], log=lines.append)
        got = again.grade(requests(again))
        assert len(again.resumed) == 1 and len(again.submitted) == 1
        assert creates(api, SPECS[0]) == 2 and api.openai_batches.files == []
    assert all(r.error is None and verdicts(r) == EXPECTED for r in got.values())
    assert any("no longer on the provider's storage" in line for line in lines)


def test_an_upload_whose_batch_was_not_created_is_deleted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The input file is uploaded, then the batch is refused: no batch will name the file,
    so it is deleted at once (the runs stay ungraded with the API's reason)."""
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        monkeypatch.setattr(api.openai_batches, "create", lambda body: (
            400, {"error": {"message": "quota", "type": "invalid_request_error",
                            "param": None, "code": "billing_hard_limit_reached"}}))
        judge = make(api, tmp_path, SPECS[0])
        got = judge.grade(requests(judge))
        uploads = [r for r in api.requests if r.method == "POST" and r.path == "/v1/files"]
        assert len(uploads) == 1 and api.openai_batches.files == []
    assert len(judge.deleted) == 1 and judge.undeleted == {}
    assert all(r.error and "HTTP 400" in r.error for r in got.values())


def test_gemini_batch_mode_uploads_no_file(tmp_path: Path) -> None:
    """Gemini's batch judge inlines its requests: no file is uploaded, so none is left (and
    none is deleted)."""
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        judge = make(api, tmp_path, SPECS[1])
        judge.grade(requests(judge))
        assert not [r for r in api.requests if "/files" in r.path or "upload" in r.path]
    assert judge.deleted == [] and judge.undeleted == {}


# ---------------------------------------------------------------------------------------------
# A refused key trips the judge's breaker on the batch path as on the direct one


@pytest.mark.parametrize("spec", SPECS)
def test_a_refused_key_in_batch_mode_opens_the_judges_breaker(spec: str,
                                                              tmp_path: Path) -> None:
    """The batch API refuses the key at creation (OpenAI: 401; Google: 400
    ``API_KEY_INVALID``, as the real API answers): every run stays ungraded (never zero),
    the judge's breaker opens on a refused key — classified by the direct judge's rule —
    and the next batch step submits nothing."""
    from pytest_skilllift.model import AgentConfig
    from pytest_skilllift.run.batch_grade import BatchResults, grade_in_batches
    from pytest_skilllift.run.breaker import CircuitBreaker
    from pytest_skilllift.run.engine import WeekRun
    from pytest_skilllift.week.ledger import Ledger
    from tests.test_run_engine import FakeRunner
    from tests.test_run_engine import spec as run_spec

    week = tmp_path / "w"
    results = BatchResults(Ledger(week), spec)
    weekrun = WeekRun(Ledger(week), AgentConfig(claude_path="unused", skills_root=tmp_path),
                      FakeRunner, lambda: results)
    weekrun.judge_breaker = CircuitBreaker(tmp_path / "judge.log", 3)
    specs = [run_spec(rep=rep) for rep in range(1, 5)]
    for s in specs:
        weekrun.generate(s)
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        judge: BatchJudge = build_batch_judge(parse_judge_spec(spec), week,
                                              api_key="a-wrong-key-123456",
                                              base_url=api.base_url, poll_s=0.0)
        first = grade_in_batches(weekrun, specs, judge, results)
        refusals = {r.status for r in api.requests if r.kind == "batch"}
        assert refusals == {401 if spec.startswith("openai") else 400}
        assert first.graded == 0 and sorted(first.ungraded) == sorted(s.run_id for s in specs)
        cause = weekrun.judge_breaker.open_cause()
        assert cause is not None and cause.startswith("the judge's API refused the key"), cause
        assert "a-wrong-key-123456" not in cause
        calls = len(api.requests)
        again = grade_in_batches(weekrun, specs, judge, results)
        assert len(api.requests) == calls  # the breaker: nothing submitted
        assert set(again.ungraded.values()) == {f"not graded: {cause}"}
        judge.close()
    assert not list(week.glob("*/grades.json"))  # ungraded, never scored zero


def test_googles_invalid_key_400_is_a_refused_key_for_the_direct_judge_too() -> None:
    """Google answers a bad key 400 ``INVALID_ARGUMENT`` / ``API_KEY_INVALID``: the direct
    judge's classifier (the one the batch path reuses) calls it a refused key, not a bad
    request, so the breaker opens; another 400 stays a bad request, no outage."""
    from google.genai import errors

    from pytest_skilllift.judge.client import KEY_REFUSED
    from pytest_skilllift.judge.google_client import GoogleJudge
    from pytest_skilllift.run.breaker import judge_cause

    judge = GoogleJudge("gemini-2.5-flash", api_key="unused")
    bad_key = errors.ClientError(400, {"error": {
        "code": 400, "status": "INVALID_ARGUMENT",
        "message": "API key not valid. Please pass a valid API key.",
        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                     "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}})
    retryable, reason, _ = judge._classify_error(bad_key)
    assert not retryable and KEY_REFUSED in reason and reason.startswith("HTTP 400")
    assert judge_cause(f"judge call failed: {reason} (not retryable)").startswith(
        "the judge's API refused the key")
    other = errors.ClientError(400, {"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                               "message": "contents: must not be empty"}})
    retryable, reason, _ = judge._classify_error(other)
    assert not retryable and KEY_REFUSED not in reason
    assert judge_cause(f"judge call failed: {reason} (not retryable)") == ""
