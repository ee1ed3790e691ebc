"""Does parallelism pay? A 20-run week against a Messages stand-in with per-call latency.

Builds a project of 5 prompts (the packaged demo's skills) × 1 model × 2 conditions × 2 reps
= 20 runs, then runs the week with **2 s of latency on every agent API request and 0.5 s on
every judge request** (the stand-in sleeps that long before answering each call; a Claude Code
run makes several calls: the bench counts them from the stand-in's request log), serially
and at ``-n 4``.

The stand-in is **independent** of the session by default (``--standin external``): the
package's ``StandIn`` served from this bench process, reached through ``ANTHROPIC_BASE_URL``
by a plain ``pytest --skill-lift`` session, so nothing of it runs in the pytest controller.
``--standin session`` measures ``pytest --skill-lift-demo`` with its
``--skill-lift-demo-latency`` / ``--skill-lift-demo-judge-latency`` (the stand-in inside the
controller), as earlier revisions of this bench did.

"Work" is measured, not assumed: the sum of every run's own wall time (run.json
``wall_ms``: the CLI from spawn to exit) plus every judge call's time (grades.json
``judge_ms``); **effective parallelism = work ÷ session wall**.

The timeline comes from ``timeline_plugin.py`` (loaded into the controller and every worker:
each process's phases and every test item's start and end, with the process's CPU and its
children's — the CLIs it ran) and from a sampler here that reads ``/proc`` for every process
of the session every 0.1 s (when each CLI lived and what CPU it used). It accounts for every
worker-second of ``workers × wall``: before the first run, in runs (the CLI, the judge, the
harness around them), idle between runs, after the last run.

    python benchmarks/bench_week.py                          # serial, -n 4, bare CLI
    python benchmarks/bench_week.py --no-serial --repeat 3   # only -n 4, three sessions
    python benchmarks/bench_week.py --no-serial --json t.json  # keep the raw timeline
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEMO_PROJECT = REPO / "pytest_skilllift" / "demo"  # the demo project shipped in the package
AGENT_LATENCY, JUDGE_LATENCY = 2.0, 0.5
PROMPTS, REPS, CONDITIONS = 5, 2, 2
RUNS = PROMPTS * REPS * CONDITIONS
WEEK = "evals/weekly-bench"
TICK = os.sysconf("SC_CLK_TCK")
# The project's own paths, spelled unlike the options' defaults: --skill-lift-demo points
# every path option left at its default at the packaged demo (its prompts, checks, triggers).
INI = """[pytest]
skill_lift_prompts = ./evals/test-prompts
skill_lift_skills = ./skills
skill_lift_checks = ./evals/checks
skill_lift_triggers = ./evals/triggers
"""


def make_project(root: Path) -> None:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    prompts = root / "evals" / "test-prompts"
    prompts.mkdir(parents=True)
    sources = sorted((DEMO_PROJECT / "evals" / "test-prompts").glob("*.json"))
    for i in range(PROMPTS):
        data = json.loads(sources[i % len(sources)].read_text())
        data["name"] = f"{data['name']}-{i}"
        (prompts / f"{data['name']}.json").write_text(json.dumps(data))
    (root / "pytest.ini").write_text(INI)


# -- the stand-in -----------------------------------------------------------------------------
@contextmanager
def standin() -> Iterator[Any]:
    """The package's Messages stand-in, served from this process: the demo's scripted models
    and keyword judge, each request delayed by its kind's latency."""
    from pytest_skilllift.testing.demo import demo_agent
    from pytest_skilllift.testing.judge_script import keyword_judge
    from pytest_skilllift.testing.server import StandIn

    with StandIn(agent=demo_agent(), judge=keyword_judge, latency_s=AGENT_LATENCY,
                 judge_latency_s=JUDGE_LATENCY) as api:
        yield api


def calls(api: Any, since: int) -> dict[str, int]:
    """Requests the stand-in answered since index ``since``, by kind (agent, judge, aux)."""
    out: dict[str, int] = {}
    for r in api.requests[since:]:
        out[r.kind] = out.get(r.kind, 0) + 1
    return out


# -- a sampler of the session's processes -----------------------------------------------------
class ProcSampler:
    """Every ``interval`` s: each descendant of ``root``'s start, name and CPU (/proc)."""

    def __init__(self, root: int, interval: float = 0.1) -> None:
        self.root, self.interval = root, interval
        self.procs: dict[int, dict[str, Any]] = {}
        self._stop = threading.Event()
        self._boot = time.time() - float(Path("/proc/uptime").read_text().split()[0])
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> ProcSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        now = time.time()
        parents: dict[int, int] = {}
        stats: dict[int, list[str]] = {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            pid = int(entry.name)
            parents[pid], stats[pid] = int(fields[1]), fields
        family = {self.root}
        for pid in sorted(parents):  # a child's pid is usually above its parent's
            if parents[pid] in family:
                family.add(pid)
        for pid in sorted(parents):  # again, for the wrapped-around pids
            if parents[pid] in family:
                family.add(pid)
        for pid in family & stats.keys():
            f = stats[pid]
            rec = self.procs.get(pid)
            if rec is None:
                try:
                    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    argv = [b"?"]
                rec = self.procs[pid] = {
                    "pid": pid, "ppid": parents[pid], "name": _name(argv),
                    "start": self._boot + int(f[19]) / TICK, "first_seen": now,
                    "last_seen": now}
            if f[0] == "Z":  # exited, not yet reaped: its end
                rec.setdefault("exited", now)
            else:
                rec["last_seen"] = now
            rec["cpu"] = (int(f[11]) + int(f[12])) / TICK  # utime + stime (this process)


def _name(argv: list[bytes]) -> str:
    exe = Path(argv[0].decode(errors="replace")).name
    if exe == "claude":
        return "claude"
    if b"pytest" in argv[:3]:
        return "pytest"
    if exe.startswith("python") and len(argv) > 1 and argv[1] == b"-c":
        return "xdist-worker"
    return exe or "?"


# -- one session ------------------------------------------------------------------------------
def run_week(root: Path, workers: int, mode: str, api: Any,
             pycache: Path | None = None) -> dict[str, Any]:
    """One session of the week; ``pycache``: let Python and pytest cache bytecode there
    (``PYTHONPYCACHEPREFIX``) instead of compiling every module in every process."""
    shutil.rmtree(root / WEEK, ignore_errors=True)
    args = ["-n", str(workers)] if workers > 1 else ["-p", "no:xdist"]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "--skill-lift-models=sonnet", f"--skill-lift-reps={REPS}",
           f"--skill-lift-out={WEEK}", "-p", "timeline_plugin", *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).parent), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    if mode == "external":
        cmd.insert(3, "--skill-lift")
        env.update(ANTHROPIC_BASE_URL=api.base_url, ANTHROPIC_API_KEY="bench-not-a-secret")
    else:
        cmd[3:3] = ["--skill-lift-demo", f"--skill-lift-demo-latency={AGENT_LATENCY}",
                    f"--skill-lift-demo-judge-latency={JUDGE_LATENCY}"]
    events_file = root / f"timeline-{workers}.jsonl"
    events_file.unlink(missing_ok=True)
    env["SKILLLIFT_BENCH_TIMELINE"] = str(events_file)
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    load = os.getloadavg()
    since = len(api.requests) if api is not None else 0
    self_cpu = _self_cpu()
    t_start = time.time()
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    with ProcSampler(proc.pid) as sampler:
        out, err = proc.communicate()
        wall = time.monotonic() - started  # before the sampler's last pass
    load_after = os.getloadavg()
    standin_cpu = _self_cpu() - self_cpu  # the stand-in's threads (and the sampler's)
    if proc.returncode != 0:
        raise SystemExit(out[-3000:] + err[-3000:])
    week = root / WEEK
    runs = {p.parent.name: json.loads(p.read_text()) for p in week.glob("*/run.json")}
    grades = {p.parent.name: json.loads(p.read_text()) for p in week.glob("*/grades.json")}
    if len(runs) != RUNS or len(grades) != RUNS:
        raise SystemExit(f"expected {RUNS} generated and graded runs in {week}, found "
                         f"{len(runs)} and {len(grades)}: the session did not run the bench's "
                         f"own project\n{out[-2000:]}")
    run_s = sum(r["wall_ms"] for r in runs.values()) / 1000
    judge_s = sum(g["judge_ms"] for g in grades.values()) / 1000
    with_runs = [r["wall_ms"] / 1000 for r in runs.values() if r["condition"] == "with-skill"]
    ev = read_events(events_file, t_start)
    return {"workers": workers, "mode": mode, "runs": len(runs), "wall": wall, "run_s": run_s,
            "judge_s": judge_s, "work": run_s + judge_s,
            "with_run_s": sum(with_runs) / len(with_runs), "load": load,
            "load_after": load_after, "bytecode_cache": pycache is not None,
            "cli_s": {rid: r["wall_ms"] / 1000 for rid, r in runs.items()},
            "calls": calls(api, since) if api is not None else {},
            "standin_cpu": standin_cpu if api is not None else None,
            "timeline": timeline(ev, runs, grades, wall, t_start),
            "procs": proc_table(sampler.procs, t_start), "events": ev}


def prime(root: Path, pycache: Path) -> None:
    """One ``--collect-only`` with the bytecode cache on: every later process finds the
    plugin's modules compiled (and rewritten by pytest) there."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(pycache), "ANTHROPIC_API_KEY": "bench",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), str(REPO),
                                          *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    "--skill-lift", "--skill-lift-models=sonnet", "--collect-only",
                    "-p", "timeline_plugin", "-n", "1"], cwd=root, env=env, check=True,
                   capture_output=True)


def _self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def read_events(path: Path, t_start: float) -> list[dict[str, Any]]:
    """timeline_plugin's events, ``t`` made seconds since the session started."""
    out = []
    for line in path.read_text().splitlines():
        e = json.loads(line)
        e["t"] -= t_start
        out.append(e)
    return out


def run_key(nodeid: str) -> str:
    """``<prompt file>::<model>::<condition>::r<rep>`` of a rubric item's node id."""
    return nodeid.rsplit("::", 1)[0]


def run_id_of(key: str, runs: dict[str, dict[str, Any]]) -> str | None:
    path, model, condition, rep = key.split("::")
    prompt = Path(path).stem
    for run_id, r in runs.items():
        if (r["prompt"], r["model"], r["condition"], f"r{r['rep']}") == (prompt, model,
                                                                          condition, rep):
            return run_id
    return None


def timeline(ev: list[dict[str, Any]], runs: dict[str, dict[str, Any]],
             grades: dict[str, dict[str, Any]], wall: float, t_start: float) -> dict[str, Any]:
    """Per process: its phases, its runs and the idle gaps between them; and the account of
    every worker-second of ``workers × wall``."""
    procs: dict[str, dict[str, Any]] = {}
    for e in ev:
        p = procs.setdefault(e["who"], {"phases": {}, "items": [], "cpu": 0.0,
                                        "children_cpu": 0.0})
        p["cpu"] = max(p["cpu"], e["cpu"])
        p["children_cpu"] = max(p["children_cpu"], e["children_cpu"])
        if e["event"] in ("item_start", "item_end"):
            p["items"].append(e)
        else:
            p["phases"].setdefault(e["event"], (e["t"], e["cpu"]))
    workers = sorted(w for w in procs if w != "controller") or ["controller"]
    account = {"before_first_run": 0.0, "cli": 0.0, "judge": 0.0, "harness_in_run": 0.0,
               "idle_between_runs": 0.0, "after_last_run": 0.0}
    for who in workers:
        p = procs[who]
        spans: list[dict[str, Any]] = []
        open_items: dict[str, dict[str, Any]] = {}
        for e in p["items"]:
            key = run_key(e["nodeid"])
            if e["event"] == "item_start":
                open_items[e["nodeid"]] = e
                if not spans or spans[-1]["key"] != key:
                    spans.append({"key": key, "start": e["t"], "end": e["t"],
                                  "cc0": e["children_cpu"], "cc1": e["children_cpu"],
                                  "items": 0})
            else:
                s = spans[-1]
                s["end"], s["cc1"], s["items"] = e["t"], e["children_cpu"], s["items"] + 1
        for s in spans:
            rid = run_id_of(s["key"], runs)
            s["run_id"] = rid
            s["cli"] = runs[rid]["wall_ms"] / 1000 if rid in runs else 0.0
            s["judge"] = grades[rid]["judge_ms"] / 1000 if rid in grades else 0.0
            s["cli_cpu"] = s["cc1"] - s["cc0"]
        gaps = [b["start"] - a["end"] for a, b in itertools.pairwise(spans)]
        p["runs"], p["gaps"] = spans, gaps
        if spans:
            account["before_first_run"] += spans[0]["start"]
            account["after_last_run"] += wall - spans[-1]["end"]
            account["idle_between_runs"] += sum(gaps)
            for s in spans:
                account["cli"] += s["cli"]
                account["judge"] += s["judge"]
                account["harness_in_run"] += s["end"] - s["start"] - s["cli"] - s["judge"]
        else:
            account["before_first_run"] += wall
    return {"procs": procs, "workers": workers, "account": account}


def proc_table(procs: dict[int, dict[str, Any]], t_start: float) -> list[dict[str, Any]]:
    out = []
    for rec in sorted(procs.values(), key=lambda r: r["start"]):
        out.append({**rec, "start": rec["start"] - t_start,
                    "last_seen": rec["last_seen"] - t_start,
                    "first_seen": rec["first_seen"] - t_start,
                    "exited": rec.get("exited", rec["last_seen"]) - t_start})
    return out


# -- the bare CLI -----------------------------------------------------------------------------
def bare_cli(root: Path, api: Any) -> dict[str, float]:
    """The bare CLI (no harness) over the week's prompts, each with and without its skill,
    once, against the same stand-in: its wall, its CPU (``os.wait4``: all its threads and
    the children it waited for) and its API calls."""
    from pytest_skilllift.agents.claude_code import QUIET_ENV
    from pytest_skilllift.runners.claude import bundled_claude

    claude = str(bundled_claude())
    prompts = [json.loads(p.read_text())
               for p in sorted((root / "evals" / "test-prompts").glob("*.json"))]
    rows: dict[str, list[tuple[float, float, int, float]]] = {"with-skill": [], "no-skill": []}
    for prompt in prompts:
        for condition in rows:
            home = Path(tempfile.mkdtemp())
            family = prompt["skill_url"].split("/")[3]
            if condition == "with-skill":
                shutil.copytree(root / "skills" / family, home / ".claude" / "skills" / family)
            env = {"HOME": str(home), "PATH": os.environ["PATH"], **QUIET_ENV,
                   "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "bench"}
            since = len(api.requests)
            started = time.monotonic()
            t0 = time.time()
            p = subprocess.Popen([claude, "-p", "--output-format", "stream-json", "--verbose",
                                  "--model", "sonnet", "--permission-mode", "dontAsk",
                                  "--allowedTools",
                                  "Skill,WebSearch,WebFetch,Read,Grep,Glob,Bash",
                                  "--no-session-persistence"], env=env, cwd=home,
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            assert p.stdin is not None
            p.stdin.write(prompt["prompt"].encode())
            p.stdin.close()
            _, status, usage = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            wall = time.monotonic() - started
            reqs = api.requests[since:]
            first = reqs[0].ts - t0 if reqs else wall
            rows[condition].append((wall, usage.ru_utime + usage.ru_stime, len(reqs), first))
            shutil.rmtree(home)
    out: dict[str, float] = {}
    for condition, vals in rows.items():
        n = len(vals)
        out[f"{condition} wall"] = sum(v[0] for v in vals) / n
        out[f"{condition} cpu"] = sum(v[1] for v in vals) / n
        out[f"{condition} calls"] = sum(v[2] for v in vals) / n
        out[f"{condition} to first call"] = sum(v[3] for v in vals) / n
    return out


# -- the report -------------------------------------------------------------------------------
def print_summary_row(label: str, r: dict[str, Any], serial: dict[str, Any] | None) -> None:
    a = r["timeline"]["account"]
    c = r["calls"]
    by_serial = f"**{serial['work'] / r['wall']:.2f}**" if serial else "(no serial session)"
    calls_txt = (f"{c.get('agent', 0)} agent + {c.get('judge', 0)} judge + {c.get('aux', 0)} aux"
                 if c else "(in the session)")
    print(f"| {label} | {r['mode']}{', bytecode cached' if r['bytecode_cache'] else ''} | "
          f"{r['wall']:.1f} s | {by_serial} | {r['work']:.1f} s "
          f"({r['run_s']:.1f} + {r['judge_s']:.1f}) | {r['work'] / r['wall']:.2f} | "
          f"{a['before_first_run']:.1f} | {a['harness_in_run']:.1f} | "
          f"{a['idle_between_runs']:.1f} | {a['after_last_run']:.1f} | {calls_txt} | "
          f"{r['load'][0]:.1f} → {r['load_after'][0]:.1f} |")


def print_processes(label: str, r: dict[str, Any]) -> None:
    """Per process: start, ready, first run, runs, idle gaps, end (s since session start)."""
    tl = r["timeline"]
    print(f"\n{label} ({r['mode']} stand-in, wall {r['wall']:.1f} s, load "
          f"{r['load'][0]:.1f}): every process, seconds since the session started")
    print("| process | start | plugin loaded | collected | first run | runs | in runs (CLI + "
          "judge + harness) | idle gaps (n, Σ, max) | last run ends | exit | CPU own | CPU "
          "of its CLIs |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for who in ["controller", *[w for w in tl["workers"] if w != "controller"]]:
        p = tl["procs"].get(who)
        if p is None:
            continue
        ph = p["phases"]

        def at(*names: str, ph: dict[str, Any] = ph) -> str:
            for n in names:
                if n in ph:
                    return f"{ph[n][0]:.2f}"
            return ""

        collected = at("collection_finish") or _last_node_collected(ph)
        spans = p.get("runs", [])
        gaps = p.get("gaps", [])
        if spans:
            cli = sum(s["cli"] for s in spans)
            judge = sum(s["judge"] for s in spans)
            busy = sum(s["end"] - s["start"] for s in spans)
            in_runs = f"{busy:.1f} ({cli:.1f} + {judge:.1f} + {busy - cli - judge:.1f})"
            gap_txt = (f"{len(gaps)}, {sum(gaps):.2f}, {max(gaps):.2f}" if gaps else "0")
            first, last = f"{spans[0]['start']:.2f}", f"{spans[-1]['end']:.2f}"
        else:
            in_runs = gap_txt = first = last = ""
        print(f"| {who} | {at('process_start')} | {at('plugin_loaded')} | {collected} | "
              f"{first} | {len(spans) or ''} | {in_runs} | {gap_txt} | {last} | "
              f"{at('atexit')} | {p['cpu']:.2f} s | {p['children_cpu']:.2f} s |")
    print("\nruns, per worker (start → end of its items, s since session start; the CLI's "
          "wall from run.json, its CPU from the worker's RUSAGE_CHILDREN)")
    for who in tl["workers"]:
        spans = tl["procs"][who].get("runs", [])
        cells = [f"{s['start']:.1f}→{s['end']:.1f} {_short(s['run_id'])} CLI {s['cli']:.1f} s"
                 f"/{s['cli_cpu']:.2f} s CPU, judge {s['judge']:.1f} s" for s in spans]
        print(f"- {who}: " + "; ".join(cells))
    procs = r["procs"]
    clis = [p for p in procs if p["name"] == "claude"]
    others: dict[str, int] = {}
    for p in procs:
        if p["name"] not in ("claude", "pytest", "xdist-worker"):
            others[p["name"]] = others.get(p["name"], 0) + 1
    print(f"\nprocesses seen by the /proc sampler: {len(clis)} claude"
          + "".join(f", {n} {k}" for k, n in sorted(others.items())))


def _last_node_collected(ph: dict[str, Any]) -> str:
    ts = [v[0] for k, v in ph.items() if k.startswith("node_collected:")]
    return f"{max(ts):.2f} (last worker)" if ts else ""


def _short(run_id: str | None) -> str:
    if not run_id:
        return "?"
    parts = run_id.split("-")
    cond = "with" if "with-skill" in run_id else "no"
    return f"{'-'.join(parts[:2])}…{cond}-{parts[-3] if len(parts) > 3 else ''}"


def critical_path(r: dict[str, Any], serial: dict[str, Any] | None) -> list[tuple[str, float]]:
    """The session's wall time as a sum of parts, in order: start-up (along the worker that
    collected last: the first run waits for every worker), the runs window (the ideal
    ``serial work / workers`` plus what made it longer) and the wrap-up. The parts add up to
    the wall time; without a serial session the "ideal" is the session's own work."""
    tl = r["timeline"]
    workers = [w for w in tl["workers"] if tl["procs"][w].get("runs")]
    n = len(workers)
    ctrl = tl["procs"]["controller"]["phases"]

    def t(ph: dict[str, Any], name: str, default: float) -> float:
        return float(ph[name][0]) if name in ph else default

    starts = {w: tl["procs"][w]["runs"][0]["start"] for w in workers}
    ends = {w: tl["procs"][w]["runs"][-1]["end"] for w in workers}
    first_run, last_end = min(starts.values()), max(ends.values())
    parts: list[tuple[str, float]] = []
    if workers == ["controller"]:  # serial: the controller runs everything
        parts.append(("start-up: interpreter, pytest, plugins, configure, collection",
                      first_run))
    else:
        gate = max(workers, key=lambda w: t(tl["procs"][w]["phases"], "collection_finish", 0))
        ph = tl["procs"][gate]["phases"]
        up = t(ctrl, "sessionstart", 0.0)
        boot = t(ph, "process_start", up)
        loaded = t(ph, "plugin_loaded", boot)
        ready = t(ph, "sessionstart", loaded)
        collected = t(ph, "collection_finish", ready)
        parts += [("start-up: controller (interpreter, pytest, plugins, configure)", up),
                  (f"start-up: until the last-collecting worker ({gate}) is spawned",
                   boot - up),
                  (f"start-up: {gate} boots (interpreter, execnet, pytest import)",
                   loaded - boot),
                  (f"start-up: {gate} loads the plugins and configures", ready - loaded),
                  (f"start-up: {gate} collects", collected - ready),
                  ("start-up: scheduling, the first item's set-up", first_run - collected)]
    cli = sum(s["cli"] for w in workers for s in tl["procs"][w]["runs"])
    judge = sum(s["judge"] for w in workers for s in tl["procs"][w]["runs"])
    harness = tl["account"]["harness_in_run"]
    gaps = tl["account"]["idle_between_runs"]
    base_cli, base_judge = (serial["run_s"], serial["judge_s"]) if serial else (cli, judge)
    parts.append(("runs: the ideal, serial work / workers" if serial else
                  "runs: the session's own work / workers", (base_cli + base_judge) / n))
    if serial:
        parts += [("runs: the CLIs slower than in the serial session (Σ / workers)",
                   (cli - base_cli) / n),
                  ("runs: the judge calls slower than serially (Σ / workers)",
                   (judge - base_judge) / n)]
    parts += [("runs: harness inside a run's items, beyond CLI and judge (Σ / workers)",
               harness / n),
              ("runs: idle between a worker's runs (Σ / workers)", gaps / n),
              ("runs: imbalance (workers idle before the last run ends; late first runs)",
               sum(last_end - e for e in ends.values()) / n
               + sum(s - first_run for s in starts.values()) / n)]
    fin0 = t(ctrl, "sessionfinish_start", last_end)
    fin1 = t(ctrl, "sessionfinish_end", fin0)
    unc = t(ctrl, "unconfigure_end", fin1)
    atexit_t = t(ctrl, "atexit", unc)
    parts += [("wrap-up: workers shut down (last run's end → sessionfinish)", fin0 - last_end),
              ("wrap-up: CSVs, scorecard, plots (sessionfinish)", fin1 - fin0),
              ("wrap-up: terminal summary, unconfigure", unc - fin1),
              ("wrap-up: atexit handlers", atexit_t - unc),
              ("wrap-up: interpreter finalization and exit (atexit → wall)",
               r["wall"] - atexit_t)]
    return parts


def runs_window_cpu(r: dict[str, Any]) -> dict[str, float]:
    """CPU used between the first run's start and the last run's end, by whom: the CLIs
    (the workers' RUSAGE_CHILDREN), the workers' own, the controller's (its phase marks
    around the window: the workers' collection and sessionfinish)."""
    tl = r["timeline"]
    workers = [w for w in tl["workers"] if tl["procs"][w].get("runs")]
    out = {"window": 0.0, "cli": 0.0, "workers": 0.0, "controller": 0.0}
    first = min(tl["procs"][w]["runs"][0]["start"] for w in workers)
    last = max(tl["procs"][w]["runs"][-1]["end"] for w in workers)
    out["window"] = last - first
    for w in workers:
        p = tl["procs"][w]
        out["cli"] += p["runs"][-1]["cc1"] - p["runs"][0]["cc0"]
        if w != "controller":
            ph = p["phases"]
            if "first_item" in ph and "sessionfinish_start" in ph:
                out["workers"] += ph["sessionfinish_start"][1] - ph["first_item"][1]
    ctrl = tl["procs"]["controller"]["phases"]
    collected = [v for k, v in ctrl.items() if k.startswith("node_collected:")]
    if collected and "sessionfinish_start" in ctrl:
        out["controller"] = ctrl["sessionfinish_start"][1] - max(collected)[1]
    return out


def print_critical_path(label: str, r: dict[str, Any], serial: dict[str, Any] | None) -> None:
    parts = critical_path(r, serial)
    n = len([w for w in r["timeline"]["workers"] if r["timeline"]["procs"][w].get("runs")])
    work = serial["work"] if serial else r["work"]
    print(f"\n{label}: where the wall time goes ({r['wall']:.1f} s; "
          f"{'serial' if serial else 'own'} work {work:.1f} s / {n} workers = "
          f"{work / n:.1f} s; effective parallelism {work / r['wall']:.2f})")
    print("| part | s |\n| --- | ---: |")
    for name, v in parts:
        print(f"| {name} | {v:.2f} |")
    print(f"| **sum (= wall {r['wall']:.2f})** | **{sum(v for _, v in parts):.2f}** |")
    if n > 1:
        c = runs_window_cpu(r)
        cores = os.cpu_count() or 2
        sin = r["standin_cpu"] or 0.0
        print(f"\nCPU in the runs window ({c['window']:.1f} s × {cores} cores = "
              f"{c['window'] * cores:.1f} core-s): the CLIs {c['cli']:.1f} s, the workers' "
              f"own {c['workers']:.1f} s, the controller {c['controller']:.1f} s, the bench's "
              f"stand-in ≤ {sin:.1f} s (whole session). The harness's CPU there could slow "
              f"the CLIs by at most {(c['workers'] + c['controller']) / cores:.1f} s of wall;"
              f" the CLIs' own CPU needs {c['cli'] / cores:.1f} s of the {cores} cores.")


def print_account(label: str, r: dict[str, Any]) -> None:
    """Where workers × wall went, and the CPU the session used against 2 cores × wall."""
    a = r["timeline"]["account"]
    n = len(r["timeline"]["workers"])
    total = n * r["wall"]
    print(f"\n{label}: {n} workers × {r['wall']:.1f} s wall = {total:.1f} worker-seconds")
    print("| part | worker-seconds | share |\n| --- | --- | --- |")
    names = {"before_first_run": "before the first run (process start, imports, configure, "
                                 "collection)",
             "cli": "in the CLI (run.json wall_ms) — work",
             "judge": "waiting on the judge (grades.json judge_ms) — work",
             "harness_in_run": "harness inside a run's items, beyond CLI and judge",
             "idle_between_runs": "idle between a worker's runs",
             "after_last_run": "after a worker's last run (the tail, wrap-up, exit)"}
    for k, v in a.items():
        print(f"| {names[k]} | {v:.1f} | {v / total:.0%} |")
    tl = r["timeline"]["procs"]
    ctrl = tl.get("controller", {}).get("cpu", 0.0)
    own = sum(tl[w]["cpu"] for w in r["timeline"]["workers"] if w != "controller")
    clis = sum(tl[w]["children_cpu"] for w in r["timeline"]["workers"])
    sin = r["standin_cpu"] or 0.0
    cores = os.cpu_count() or 2
    print(f"\nCPU: CLIs {clis:.1f} s ({clis / r['runs']:.2f} s per run), workers' own "
          f"{own:.1f} s, controller {ctrl:.1f} s, stand-in {sin:.1f} s; total "
          f"{clis + own + ctrl + sin:.1f} s of {cores} cores × {r['wall']:.1f} s = "
          f"{cores * r['wall']:.1f} s ({(clis + own + ctrl + sin) / (cores * r['wall']):.0%}). "
          f"The CLIs' CPU alone needs {clis / cores:.1f} s of the {cores} cores.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=1, help="parallel sessions to time")
    ap.add_argument("--standin", choices=("external", "session"), default="external",
                    help="external: the stand-in in this process (default); session: "
                         "--skill-lift-demo's own, inside the pytest controller")
    ap.add_argument("--no-serial", action="store_true",
                    help="skip the serial session and the bare CLI (only the -n timeline)")
    ap.add_argument("--events", action="store_true",
                    help="also print every process's raw phase times (timeline_plugin)")
    ap.add_argument("--json", metavar="PATH", help="write every session's timeline here")
    ap.add_argument("--bytecode-cache", action="store_true",
                    help="let the sessions cache bytecode (and pytest its rewritten modules) "
                         "in a temporary PYTHONPYCACHEPREFIX, primed by one --collect-only: "
                         "without it, under PYTHONDONTWRITEBYTECODE every process compiles "
                         "every module of the plugin")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, standin() as api:
        root = Path(tmp)
        make_project(root)
        ext = api if args.standin == "external" else None
        pycache = root / "pycache" if args.bytecode_cache else None
        if pycache is not None:
            prime(root, pycache)
        serial = None if args.no_serial else run_week(root, 1, args.standin, ext, pycache)
        parallel = [run_week(root, args.workers, args.standin, ext, pycache)
                    for _ in range(args.repeat)]
        bare = None if args.no_serial else bare_cli(root, api)
    n = args.workers
    print("| session | stand-in | wall | effective parallelism (serial work / wall) | own "
          "work (Σ run + Σ judge) | own work / wall | before first run | harness in runs | "
          "idle between runs | after last run | API calls | load (1 min, before → after) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    if serial is not None:
        print_summary_row("serial", serial, serial)
    for r in parallel:
        print_summary_row(f"-n {n}", r, serial)
    print("\n(worker-seconds: summed over the workers)")
    for r in ([serial] if serial else []) + parallel:
        label = "serial" if r is serial else f"-n {n}"
        print_processes(label, r)
        print_account(label, r)
        print_critical_path(label, r, serial if r is not serial else None)
        if args.events:
            print_events(label, r)
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"serial": serial, "parallel": parallel, "bare": bare}, indent=1, default=str))
    if serial is None or bare is None:
        return
    par = parallel[0]
    per_run_harness = (serial["wall"] - serial["work"]) / serial["runs"]
    print("\n| measure | value |\n| --- | --- |")
    print(f"| runs in the week | {serial['runs']} |")
    print(f"| serial work (Σ run wall + Σ judge) | {serial['work']:.1f} s "
          f"({serial['run_s']:.1f} + {serial['judge_s']:.1f}) |")
    print(f"| session wall, serial (-p no:xdist) | {serial['wall']:.1f} s |")
    print(f"| session wall, -n {n} | {par['wall']:.1f} s |")
    print(f"| -n {n} wall / serial work of the serial session | "
          f"{par['wall'] / serial['work']:.2f} (floor {1 / n:.2f}) |")
    print(f"| effective parallelism at -n {n}: its own work / its wall | "
          f"{par['work'] / par['wall']:.2f} (limit {n}) |")
    for cond in ("with-skill", "no-skill"):
        print(f"| bare CLI, {cond} run (mean of {PROMPTS}): wall / CPU / API calls / first "
              f"call after | {bare[cond + ' wall']:.2f} s / {bare[cond + ' cpu']:.2f} s / "
              f"{bare[cond + ' calls']:.1f} / {bare[cond + ' to first call']:.2f} s |")
    print(f"| runner, with-skill run (mean, serial session) | {serial['with_run_s']:.2f} s |")
    print(f"| runner overhead per with-skill run over the bare CLI | "
          f"{serial['with_run_s'] - bare['with-skill wall']:.2f} s |")
    print(f"| harness beyond runs and judge, per run (serial) | {per_run_harness:.2f} s |")


def print_events(label: str, r: dict[str, Any]) -> None:
    """Per process, when it reached each phase (seconds since the session started)."""
    print(f"\n{label}: phases, seconds since session start (CPU so far)")
    for who, p in sorted(r["timeline"]["procs"].items()):
        print(f"  {who:10s} " + "  ".join(f"{k}={t:.2f}({c:.2f})" for k, (t, c) in
                                          sorted(p["phases"].items(), key=lambda kv: kv[1])))


if __name__ == "__main__":
    main()
