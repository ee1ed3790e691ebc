"""Installing a skill family: links inside stay links, links leaving it refuse the install.

Both runners install through ``runners.install``; the local runner's copy and the docker
runner's archive are checked here on the same hostile family (no CLI, no engine needed).
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from pytest_skilllift.model import AgentConfig, PromptSpec, RunSpec
from pytest_skilllift.runners.install import InstallError, copy_family, family_entries
from pytest_skilllift.runners.local import LocalRunner
from pytest_skilllift.week.files import STDERR_FILE


def _family(root: Path) -> Path:
    fam = root / "skills" / "fam"
    (fam / "sub").mkdir(parents=True)
    (fam / "SKILL.md").write_text("---\nname: fam\ndescription: d. Use when x.\n---\nbody\n")
    (fam / "sub" / "ref.md").write_text("reference\n")
    (fam / "alias.md").symlink_to("sub/ref.md")  # relative, inside
    (fam / "abs-alias.md").symlink_to(fam / "SKILL.md")  # absolute, inside
    (fam / "sub" / "up").symlink_to("..")  # a directory link back to the family root
    return fam


def test_links_inside_the_family_are_installed_as_relative_links(tmp_path: Path) -> None:
    fam = _family(tmp_path)
    dest = tmp_path / "home" / ".claude" / "skills" / "fam"
    copy_family(fam, dest)
    assert os.readlink(dest / "alias.md") == "sub/ref.md"
    assert os.readlink(dest / "abs-alias.md") == "SKILL.md"  # absolute → relative, inside
    assert os.readlink(dest / "sub" / "up") == ".."
    assert (dest / "alias.md").read_text() == "reference\n"
    assert (dest / "abs-alias.md").resolve() == (dest / "SKILL.md").resolve()
    # The loop-shaped link did not make the copy recurse: a handful of real files only.
    files = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")
                   if p.is_file() and not p.is_symlink())
    assert files == ["SKILL.md", "sub/ref.md"]


@pytest.mark.parametrize("target", ["../../outside.txt", "/etc/passwd", "../..", "../../other"])
def test_a_link_leaving_the_family_refuses_the_install(tmp_path: Path, target: str) -> None:
    fam = _family(tmp_path)
    (tmp_path / "outside.txt").write_text("secret")
    (tmp_path / "skills" / "other").mkdir()
    (fam / "sub" / "escape").symlink_to(target)
    with pytest.raises(InstallError, match=rf"symlink fam/sub/escape -> {target} leaves the "
                       "skill family .*Fix: copy the file into the family"):
        family_entries(fam)


def test_a_link_loop_and_a_fifo_refuse_the_install(tmp_path: Path) -> None:
    fam = _family(tmp_path)
    (fam / "a").symlink_to("b")
    (fam / "b").symlink_to("a")
    with pytest.raises(InstallError, match="symlink fam/a -> b cannot be resolved"):
        family_entries(fam)
    (fam / "a").unlink()
    (fam / "b").unlink()
    os.mkfifo(fam / "pipe")  # copying it would block forever
    with pytest.raises(InstallError, match="fam/pipe is not a regular file"):
        family_entries(fam)


def test_local_runner_reports_a_refused_install_as_invalid(tmp_path: Path) -> None:
    fam = _family(tmp_path)
    (fam / "notes.md").symlink_to("../../outside.txt")
    (tmp_path / "outside.txt").write_text("secret")
    never = tmp_path / "never-run"
    spec = RunSpec(PromptSpec(Path("p.json"), "p", "a", "q", (), "fam/SKILL.md"),
                   "haiku", "haiku", "with-skill", 1, "p-haiku-with-skill-r1-w")
    out = LocalRunner().run(spec, AgentConfig(str(never), tmp_path / "skills"), tmp_path / "r")
    assert out.invalid_install and out.exit_code is None
    assert "symlink fam/notes.md -> ../../outside.txt leaves the skill family" in (out.error or "")
    assert "leaves the skill family" in (tmp_path / "r" / STDERR_FILE).read_text()


def test_docker_archive_keeps_inside_links_and_refuses_outside_ones(tmp_path: Path) -> None:
    docker_runner = pytest.importorskip("pytest_skilllift.runners.docker")
    fam = _family(tmp_path)
    data = docker_runner.skill_archive(fam, prompt="--help " + "x" * 200_000)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        prompt = tar.extractfile(members[docker_runner.PROMPT_FILE])
        assert prompt is not None and prompt.read().startswith(b"--help xxx")
    base = ".claude/skills/fam"
    assert members[f"{base}/alias.md"].issym()
    assert members[f"{base}/alias.md"].linkname == "sub/ref.md"
    assert members[f"{base}/abs-alias.md"].linkname == "SKILL.md"
    assert members[f"{base}/sub/up"].linkname == ".."
    assert members[f"{base}/sub/ref.md"].isfile()
    assert members[docker_runner.PROMPT_FILE].mode == 0o600
    assert {(m.uid, m.uname) for m in members.values()} == {(1000, "agent")}
    (fam / "leak").symlink_to("/etc/passwd")
    with pytest.raises(InstallError, match="symlink fam/leak -> /etc/passwd leaves"):
        docker_runner.skill_archive(fam)


def test_sibling_families_follow_the_same_policy(tmp_path: Path) -> None:
    """Trigger tests with every family installed: each sibling is installed like the
    prompt's own family, and one sibling's leaving link refuses the whole install, in the
    local copy and in the docker archive alike, before anything is written."""
    fam = _family(tmp_path)
    sib = tmp_path / "skills" / "sib"
    sib.mkdir()
    (sib / "SKILL.md").write_text("---\nname: sib\ndescription: s. Use when y.\n---\n")
    (sib / "same.md").symlink_to("SKILL.md")
    prompt = PromptSpec(Path("p.json"), "p", "a", "q", (), "fam/SKILL.md",
                        sibling_families=("sib",))
    spec = RunSpec(prompt, "haiku", "haiku", "with-skill", 1, "p-haiku-with-skill-r1-w")
    cfg = AgentConfig(str(tmp_path / "never-run"), tmp_path / "skills")
    home = tmp_path / "home"
    assert LocalRunner().install_skill(spec, cfg, home) is None
    assert os.readlink(home / ".claude" / "skills" / "sib" / "same.md") == "SKILL.md"
    assert (home / ".claude" / "skills" / "fam" / "SKILL.md").is_file()

    docker_runner = pytest.importorskip("pytest_skilllift.runners.docker")
    with tarfile.open(fileobj=io.BytesIO(docker_runner.skill_archive(
            fam, siblings=[sib]))) as tar:
        names = set(tar.getnames())
    assert {".claude/skills/fam/SKILL.md", ".claude/skills/sib/same.md"} <= names
    assert sorted(n for n in names if n.count("/") <= 1) == [".claude", ".claude/skills"]

    (sib / "leak.md").symlink_to("/etc/passwd")
    home2 = tmp_path / "home2"
    error = LocalRunner().install_skill(spec, cfg, home2)
    assert error is not None and "symlink sib/leak.md -> /etc/passwd leaves" in error
    assert not (home2 / ".claude" / "skills" / "fam").exists()  # nothing copied first
    with pytest.raises(InstallError, match=r"symlink sib/leak\.md -> /etc/passwd leaves"):
        docker_runner.skill_archive(fam, siblings=[sib])
    out = LocalRunner().run(spec, cfg, tmp_path / "r")
    assert out.invalid_install and "sib/leak.md" in (out.error or "")
