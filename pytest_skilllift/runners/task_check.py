"""The oracle and no-op probes of ``skilllift tasks check``: a task's verifier run without an agent.

Harbor's oracle check, in the task's own containers, with no agent call and no spend:

- **oracle**: ``solution/`` is copied to ``/solution`` and ``bash /solution/solve.sh`` runs
  in place of the agent (as the image's user, in its ``WORKDIR``, under ``[agent]
  timeout_sec``), then the verifier exactly as a task run's (``TaskRunner._isolate``: every
  process solve.sh left is stopped; ``TaskRunner._verify``: only then ``tests/`` is copied to
  ``/tests``);
- **no-op**: nothing runs in place of the agent; then the verifier.

Each probe is a fresh container of the task's with-skill image (the same image a week's
with-skill runs use: built once per content hash, reused by the week); its run folder gets
the verifier's files as a task run's does, and ``task.json`` the verifier's exit, so
``run/tasks/results.read_result`` reads both alike. What the rewards mean is judged in
``run/tasks/check.py``.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import tarfile
import time
from pathlib import Path
from typing import Any

from pytest_skilllift.model import WITH_SKILL, AgentConfig, PromptSpec, RunSpec
from pytest_skilllift.runners.task_docker import TaskRunner, _Failed
from pytest_skilllift.runners.task_image import TaskImageError
from pytest_skilllift.week.files import TASK_FILE

ORACLE, NOOP = "oracle", "noop"
#: Where Harbor's oracle agent puts the reference solution.
SOLUTION_MOUNT = "/solution"
SOLVE_OUTPUT = "solve.txt"
MAX_SOLVE_OUTPUT = 256 * 1024


@dataclasses.dataclass(frozen=True)
class ProbeOutcome:
    """One probe's run: where its files are, and the harness error if it did not finish."""

    run_dir: Path
    error: str = ""
    seconds: float = 0.0


class TaskProbe(TaskRunner):
    """Runs a task's oracle and no-op probes (the task runner's container handling)."""

    name = "docker-task-check"

    def probe(self, spec: PromptSpec, mode: str, run_dir: Path) -> ProbeOutcome:
        """Run the ``mode`` probe (:data:`ORACLE` / :data:`NOOP`) of the task ``spec``."""
        task = spec.task
        if task is None:
            raise ValueError(f"{spec.path}: not a task")
        run_dir.mkdir(parents=True, exist_ok=True)
        run = RunSpec(prompt=spec, model_label=mode, model_id=mode, condition=WITH_SKILL,
                      rep=1, run_id=f"check-{task.root.name}-{mode}")
        cfg = AgentConfig(claude_path="", skills_root=task.root,
                          timeout_s=task.agent_timeout_s + task.verifier_timeout_s + 60)
        t0 = time.monotonic()
        info: dict[str, Any] = {"probe": mode}
        timings: dict[str, float] = {}
        container_id: str | None = None
        error = ""
        try:
            try:
                image = self.images.get(task, True)
            except TaskImageError as exc:
                raise _Failed(str(exc)) from None
            self.image, self.image_id = image.tag, image.image_id
            self.user, self.workdir = image.user, image.workdir
            self.memory = f"{task.memory_mb or self.default_memory_mb}m"
            self.cpus = task.cpus or self.default_cpus
            info.update(image=image.tag, workdir=image.workdir)
            container_id = self._create(run, cfg)
            self.client.api.start(container_id)
            if mode == ORACLE:
                info["solve"] = self._solve(container_id, task.root / "solution", run_dir,
                                            task.agent_timeout_s)
            # What solve.sh left running is stopped as an agent's is: the verifier runs alone.
            info["agent_processes_killed"] = self._isolate(container_id)
            info["verifier"] = self._verify(container_id, run, run_dir, timings)
        except _Failed as exc:
            error = str(exc)
        except Exception as exc:  # a harness failure is the probe's outcome, not a crash
            error = f"docker: {type(exc).__name__}: {exc}"
        finally:
            if container_id is not None:
                self._cleanup(container_id)
        info["timings"] = {k: round(v, 3) for k, v in timings.items()}
        if error:
            info["error"] = error
        (run_dir / TASK_FILE).write_text(json.dumps(info, indent=1, sort_keys=True),
                                         encoding="utf-8")
        return ProbeOutcome(run_dir, error, time.monotonic() - t0)

    def _solve(self, container_id: str, solution: Path, run_dir: Path,
               timeout_s: float) -> dict[str, Any]:
        """``solution/`` → ``/solution``, then ``bash /solution/solve.sh`` as the image's user."""
        if not self.client.api.put_archive(container_id, "/", _solution_archive(solution)):
            raise _Failed("put_archive of solution/ into /solution failed")
        limit = max(1, math.ceil(timeout_s))
        exec_id = self.client.api.exec_create(
            container_id, ["sh", "-c", f"exec timeout -s KILL {limit} bash {SOLUTION_MOUNT}/"
                                       "solve.sh"],
            user=self.user or "0", workdir=self.workdir, stdout=True, stderr=True)["Id"]
        output = self.client.api.exec_start(exec_id)
        state = self.client.api.exec_inspect(exec_id)
        (run_dir / SOLVE_OUTPUT).write_bytes(output[:MAX_SOLVE_OUTPUT])
        return {"exit_code": state.get("ExitCode"), "output_bytes": len(output)}


def _solution_archive(solution: Path) -> bytes:
    """``solution/`` as a tar rooted at ``solution/`` (extracted at ``/``), readable by all."""
    buf = io.BytesIO()

    def readable(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        info.mode |= 0o755 if info.isdir() else 0o644
        return info

    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(solution, arcname=SOLUTION_MOUNT.lstrip("/"), filter=readable)
    return buf.getvalue()
