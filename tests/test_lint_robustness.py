"""Whatever is on disk, the linter answers with findings and valid JSON, never a traceback."""

from __future__ import annotations

import argparse
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.cli import score as cli
from pytest_skilllift.lint.analyze import analyze, score_path
from pytest_skilllift.skill.skillfile import MAX_BYTES, load_skill
from pytest_skilllift.testing.skill_dirs import write_skill


def score_json(path: Path) -> dict[str, Any]:
    """``skilllift score PATH --output json`` in-process; the output must be strict JSON."""
    out = io.StringIO()
    args = cli_args("score", str(path), "--output", "json")
    rc = cli.run_score(args, out)
    assert rc == 0

    def no_nan(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    report = json.loads(out.getvalue(), parse_constant=no_nan)
    assert isinstance(report, dict)
    return report


def cli_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.add_parser(parser.add_subparsers())
    return parser.parse_args(list(argv))


def all_flags(report_json: dict[str, Any]) -> set[str]:
    layer = report_json["layers"][0]
    return {f["flag"] for f in layer["anti_patterns"] + layer["findings"]}


def test_binary_file(tmp_path: Path) -> None:
    d = tmp_path / "bin"
    d.mkdir()
    (d / "SKILL.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00" + bytes(range(256)) * 20)
    j = score_json(d)
    assert {"BINARY_FILE", "EMPTY_DESCRIPTION", "MISSING_TRIGGER"} <= all_flags(j)
    assert 0 <= j["composite"]["score"] <= 100


def test_non_utf8_is_analysed_with_replacement(tmp_path: Path) -> None:
    d = tmp_path / "latin"
    d.mkdir()
    (d / "SKILL.md").write_bytes(
        b'---\nname: latin\ndescription: "Caf\xe9 sizing. Use when sizing, or scaling."\n---\n'
    )
    j = score_json(d)
    assert all_flags(j) == {"NOT_UTF8"}  # the rest of the file still parsed
    assert "byte 33" in j["layers"][0]["findings"][0]["evidence"]


def test_empty_file(tmp_path: Path) -> None:
    d = tmp_path / "empty"
    d.mkdir()
    (d / "SKILL.md").write_bytes(b"")
    assert {"EMPTY_FILE", "EMPTY_DESCRIPTION", "MISSING_TRIGGER"} == all_flags(score_json(d))


def test_missing_frontmatter(tmp_path: Path) -> None:
    d = tmp_path / "plain"
    d.mkdir()
    (d / "SKILL.md").write_text("# Title\n\nJust prose.\n", encoding="utf-8")
    assert "NO_FRONTMATTER" in all_flags(score_json(d))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('---\nname: x\ndescription: "open quote\n---\nbody\n', "YAML error"),
        ("---\n- a\n- b\n---\nbody\n", "YAML list"),
        ("---\nname: x\nno closing fence\n", "never closed"),
        ("---\n\tname: tab\n---\n", "YAML error"),
    ],
)
def test_broken_frontmatter(tmp_path: Path, text: str, expected: str) -> None:
    d = tmp_path / "broken"
    d.mkdir()
    (d / "SKILL.md").write_text(text, encoding="utf-8")
    j = score_json(d)
    (f,) = [f for f in j["layers"][0]["findings"] if f["flag"] == "BROKEN_FRONTMATTER"]
    assert expected in f["evidence"]


def test_symlink_loops(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root / "looping", name="looping")
    os.symlink("..", root / "looping" / "up")  # directory loop back to the root
    (root / "looping" / "references").mkdir()
    os.symlink("../references", root / "looping" / "references" / "again")
    (root / "selfref").mkdir()
    os.symlink("SKILL.md", root / "selfref" / "SKILL.md")  # SKILL.md -> itself
    os.symlink("ring", root / "ring")  # a link to itself
    run = score_path(root)
    by_id = {r.skill.rel_id: r for r in run.reports}
    assert set(by_id) == {"looping", "selfref"}
    # The file check and the security scan (a link that cannot be resolved) both say so.
    assert [f.flag for f in by_id["selfref"].findings] == ["SYMLINK_LOOP", "SKL803"]
    assert "SYMLINK_LOOP" in {f.flag for f in by_id["looping"].findings}
    assert {f.flag for f in run.walk_findings} == {"SYMLINK_LOOP"}
    score_json(root)  # and the JSON is still strict


def test_huge_file_is_capped_and_says_so(tmp_path: Path) -> None:
    d = tmp_path / "huge"
    write_skill(d, name="huge", body="Use the MUST word sparingly in this line.\n" * 60_000)
    assert (d / "SKILL.md").stat().st_size > MAX_BYTES
    skill = load_skill(d)
    assert skill.line_count == 60_004  # counted over the whole file, not the analysed part
    report = analyze(skill)
    (big,) = [f for f in report.findings if f.flag == "FILE_TOO_LARGE"]
    assert "60,004 lines" in big.evidence
    assert {"OVER_CONSTRAINED", "BLOATED_SKILL"} <= {f.flag for f in report.anti_patterns}


def test_skill_md_that_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "odd" / "SKILL.md").mkdir(parents=True)
    assert "UNREADABLE" in all_flags(score_json(tmp_path / "odd"))


def test_unknown_link_targets_do_not_crash(tmp_path: Path) -> None:
    body = (
        "[a](<references/with space.md>) [b](references/%ZZ.md) [c](..\\\\win\\\\SKILL.md) "
        "[d](" + "x" * 5000 + "/SKILL.md) [e](mailto:a@b.c) [f](#anchor)\n"
    )
    write_skill(tmp_path / "links", body=body)
    flags = all_flags(score_json(tmp_path / "links"))
    assert "ORPHAN_REFERENCE" in flags and "DEAD_CROSS_REF" in flags


def test_non_utf8_directory_name_through_the_cli(tmp_path: Path) -> None:
    """A skill directory whose name is not UTF-8 still yields valid JSON and text."""
    import subprocess
    import sys

    bad = os.fsencode(tmp_path) + b"/skills/caf\xe9"
    os.makedirs(bad)
    with open(bad + b"/SKILL.md", "wb") as fh:
        fh.write(b"---\nname: cafe\ndescription: Use when testing, or probing names.\n---\n")
    # a strict stdout, as under an en_US.UTF-8 locale (the C locale is lenient by default)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    for fmt in ("json", "text"):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest_skilllift.cli.score",
                "score",
                str(tmp_path / "skills"),
                "--output",
                fmt,
            ],
            capture_output=True,
            check=False,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        assert b"Traceback" not in proc.stderr
    assert (
        json.loads(
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest_skilllift.cli.score",
                    "score",
                    str(tmp_path / "skills"),
                    "--output",
                    "json",
                ],
                capture_output=True,
                check=False,
            ).stdout
        )["n_skills"]
        == 1
    )
