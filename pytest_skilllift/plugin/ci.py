"""CI verdicts of one ``pytest --skill-lift`` session (controller only; no pytest imports).

* at configure: the gates are validated against the session's models and prompts, and the
  week's identity starts being computed in the background (the judge model's default needs the
  ``anthropic`` SDK, seconds of imports that overlap collection and worker start-up);
* before the first run: :meth:`SessionVerdicts.open_week` compares that identity with the
  week's ``week.json`` — refusing to mix two measurements in one week — and writes it;
* at the end: the gates are measured on the week's scorecard, the result decides the exit
  status (a failed hard gate, or the coverage guard), and with ``GITHUB_STEP_SUMMARY`` set the
  gate and lift tables are appended to the job summary.

The computing lives in ``week.identity``, ``report.gates`` and ``report.verdicts``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_skilllift.config import SettingsError
from pytest_skilllift.model import (
    ARMS,
    WITH_ALL,
    WITH_REF,
    WITH_REF_PREFIX,
    arm_ref,
    task_tools,
)
from pytest_skilllift.report import gates as gatemod
from pytest_skilllift.report.gates import measure
from pytest_skilllift.run.triggers import skill_families
from pytest_skilllift.warm import Warmed
from pytest_skilllift.week import identity as ident
from pytest_skilllift.week.files import RUN_FILE

if TYPE_CHECKING:
    from pytest_skilllift.config import Settings
    from pytest_skilllift.model import PromptSpec
    from pytest_skilllift.report.summarize import Summary
    from pytest_skilllift.run.matrix import Matrix
    from pytest_skilllift.run.revisions import Revision


class SessionVerdicts:
    """Identity at the start, gates at the end, of a session with ``settings`` whose runs are
    ``matrix()`` (read when the gates are validated, not before)."""

    def __init__(self, settings: Settings, matrix: Callable[[], Matrix], *,
                 other_agents: Callable[[], list[str]] = list,
                 revision: Callable[[], Revision | None] = lambda: None) -> None:
        self.settings = settings
        self._matrix = matrix
        self._other_agents = other_agents  # the agents beside Claude Code the labels name
        self._revision = revision  # the with-skill@REF arm's resolved revision, or None
        self.gates: list[gatemod.Gate] = []
        self.notes: list[str] = []
        self.report: gatemod.GateReport | None = None
        self.record: ident.WeekRecord | None = None
        self._specs: list[PromptSpec] = []
        self._identity: Warmed[ident.Identity] | None = None
        #: The agent CLIs the docker image carries (its skilllift.agents label).
        self._image_agents: dict[str, str] = {}

    # -- configure ----------------------------------------------------------------------
    def prepare(self, *, identity: bool = True) -> list[str]:
        """Validate the gates (``SettingsError`` on the first bad one) and, with ``identity``,
        start computing the week's identity (not when only listing tests: it runs the CLI for
        its version). Returns warnings (gates that always pass)."""
        s = self.settings
        # The session's valid prompt files (a bad one is a collection error, reported there).
        self._specs = list({run.prompt.name: run.prompt for run in self._matrix().runs}
                           .values())
        scopes = gatemod.Scopes(models=tuple(m for m, _ in s.models), conditions=s.conditions,
                                prompts=tuple(sp.name for sp in self._specs))
        try:
            self.gates, warnings = gatemod.load_gates(s.gates, scopes)
        except gatemod.GateError as exc:
            raise SettingsError(f"--skill-lift-gate / skill_lift_gates: {exc}") from None
        if identity:
            self._identity = Warmed(self._build_identity)
            self._identity.warm("skilllift-identity")
        return warnings

    def _build_identity(self) -> ident.Identity:
        from pytest_skilllift.judge.protocol import PROMPT_VERSION

        s = self.settings
        image_id, cli = None, ""
        agent_clis: dict[str, str] = {}
        if s.runner == "docker":
            image_id, cli = self._docker_image(s.image)
            for agent in self._other_agents():  # the image's own agent CLIs
                agent_clis[agent] = self._image_agents.get(agent, "")
        else:
            from pytest_skilllift.runners import agents
            from pytest_skilllift.runners.claude import cli_version, find_claude

            claude = find_claude(s.claude or None)
            cli = cli_version(claude) if claude else ""
            for agent in self._other_agents():  # the labels' other agents, pinned too
                path = agents.find_cli(agent)
                agent_clis[agent] = agents.cli_version(path) if path else ""
        judge = s.judge_model
        if s.judges:  # a panel: its judges, in order (judge.panel.panel_name)
            judge = ",".join(s.judges)
        elif not judge:
            from pytest_skilllift.judge.client import default_judge_model

            judge = default_judge_model()
        revision = self._revision()
        revision_skills = ({f"{f}@{revision.ref}": ident.skill_family_hash(revision.root, f)
                            for f in sorted({sp.family for sp in self._specs})}
                           if revision else {})
        families = sorted({sp.family for sp in self._specs} | set(
            skill_families(s.skills_root) if WITH_ALL in s.conditions else ()))  # with-all
        return ident.Identity(
            models=dict(s.models), reps=s.reps, allowed_tools=tuple(s.allowed_tools),
            permission_mode=s.permission_mode, max_turns=s.max_turns,
            max_budget_usd=s.max_budget_usd, runner=s.runner, image_id=image_id,
            cli_version=cli, judge_model=judge, judge_prompt_version=PROMPT_VERSION,
            judge_samples=s.judge_samples, evidence=s.evidence, judge_mask=s.judge_mask,
            prompts={sp.name: ident.PromptIdentity.of(
                sp.prompt, [(i.type, i.text) for i in sp.rubric], sp.family)
                for sp in self._specs},
            skills={**{f: ident.skill_family_hash(s.skills_root, f) for f in families},
                    **revision_skills},
            revision=revision.to_json() if revision else None,
            agent_clis=agent_clis,
            # A measurement parameter of task runs (docs/tasks.md), recorded with tasks only.
            task_tools=(task_tools(tuple(s.allowed_tools))
                        if any(sp.task is not None for sp in self._specs) else None),
        )

    def _docker_image(self, image: str) -> tuple[str | None, str]:
        try:
            import docker.client

            from pytest_skilllift.runners.agent_image import image_agent_versions
            from pytest_skilllift.runners.image import image_cli_version

            client = docker.client.from_env()
            try:
                img = client.images.get(image)
                self._image_agents = image_agent_versions(dict(img.labels or {}))
                return img.id, image_cli_version(client, image)
            finally:
                client.close()
        except Exception as exc:  # the runner reports an unusable engine or image itself
            self.notes.append(f"week identity: docker image {image!r} could not be read "
                              f"({exc}); recorded without its id and CLI version")
            return None, ""

    # -- before the first run -------------------------------------------------------------
    def open_week(self) -> None:
        """Compare with week.json and record the session's identity and verdict settings.

        Raises ``SettingsError`` (a refusal naming each difference and the way out, or an
        unreadable week.json)."""
        from pytest_skilllift.run.engine import make_run_id
        from pytest_skilllift.week.guard import NotAWeek, check_week_dir

        s = self.settings
        try:  # a typo in --skill-lift-out must not overwrite someone's folder
            check_week_dir(s.out_dir)
        except NotAWeek as exc:
            raise SettingsError(str(exc)) from None
        if self._identity is None:
            return
        try:
            proposed = self._identity.get()
        except Exception as exc:  # e.g. the judge SDK cannot be imported
            raise SettingsError(f"could not compute the week's identity for {s.out_dir}: "
                                f"{exc}") from None
        out = s.out_dir
        try:
            recorded = ident.read_week_record(out)
        except ident.WeekFileError as exc:
            raise SettingsError(str(exc)) from None
        base = recorded.identity if recorded else proposed
        all_prompts = {**base.prompts, **proposed.prompts}
        models = sorted(set(base.models) | set(proposed.models))
        reps = max(base.reps, proposed.reps)
        session_arms = (*(a for a in ARMS if a != WITH_REF), *(
            c for c in s.conditions if arm_ref(c) is not None))

        def has_runs(model: str | None = None, prompt: str | None = None,
                     with_skill_family: str | None = None) -> bool:
            if model is None and prompt is None and with_skill_family is None:
                return next(out.glob(f"*/{RUN_FILE}"), None) is not None
            # "<family>@<REF>": the with-skill@REF arm's copy of the family.
            family, at, ref = (with_skill_family or "").partition("@")
            names = [p for p in all_prompts if (prompt is None or p == prompt) and (
                not family or all_prompts[p].family == family)]
            conds: tuple[str, ...] = ((f"{WITH_REF_PREFIX}{ref}",) if at else ("with-skill",)
                                      ) if family else session_arms
            pairs = [(p, conds) for p in names]
            if family and not at:  # with-all runs of every prompt installed the family too
                pairs += [(p, (WITH_ALL,)) for p in all_prompts if prompt is None or p == prompt]
            for p, arms in pairs:
                for m in ([model] if model else models):
                    for c in arms:
                        for r in range(1, reps + 1):
                            if (out / make_run_id(p, m, c, r, s.week) / RUN_FILE).is_file():
                                return True
            return False

        try:  # a path the user can paste: relative to the rootdir when it is inside it
            hint = f"{out.relative_to(s.rootdir).as_posix()}-2"
        except ValueError:
            hint = f"{out}-2"
        try:
            with ident.locked(out):
                self.record, notes = ident.open_week(
                    out, proposed, pass_threshold=s.pass_threshold,
                    min_coverage=s.min_coverage, gates=s.gates, fresh=s.fresh,
                    has_runs=has_runs, new_week_hint=hint)
                # Whether the runs can fetch a published skills site (the configured site,
                # or the prompts' skill_url): the scorecard's site sections need one.
                self.record.extra[ident.SKILLS_SITE] = self._site_host()
                ident.write_week_record(out, self.record)
        except (ident.IdentityRefused, ident.WeekFileError) as exc:
            raise SettingsError(str(exc)) from None
        self.notes += notes

    def _site_host(self) -> str:
        """The published skills site's host this session's runs watch for, "" for none."""
        from urllib.parse import urlsplit

        hosts = sorted({urlsplit(self.settings.site or spec.prompt.skill_url).hostname or ""
                        for spec in self._matrix().runs} - {""})
        return ", ".join(hosts)

    # -- the end ----------------------------------------------------------------------------
    def finish(self, summary: Summary | None) -> None:
        """Record the run count and the judge overrides, measure the gates, append the CI job
        summary."""
        s = self.settings
        if self.record is not None and summary is not None:
            data = summary.data
            self.notes += ident.record_session_end(
                s.out_dir, runs=int(data.get("coverage", {}).get("total_runs", 0)),
                judge_overrides=data.get("judge", {}).get("overrides", {}))
        if self.gates:
            self.report = measure(self.gates, summary, s.min_coverage, s.week)
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary and (self.report is not None or summary is not None):
            gatemod.append_step_summary(Path(step_summary), self.report,
                                        summary.data if summary is not None else None)

    def terminal_lines(self) -> list[str]:
        """The week.json notes and the gate table, for the terminal summary."""
        lines = [f"week.json: {n}" for n in self.notes]
        if self.report is not None:
            lines += gatemod.text_lines(self.report)
        return lines

    @property
    def failed(self) -> bool:
        """A hard gate failed or the coverage guard tripped (exit status 1)."""
        return self.report is not None and not self.report.passed
