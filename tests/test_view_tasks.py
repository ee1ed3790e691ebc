"""The data of a task's viewer page (view/tasks.py): a run's files as the page shows them."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_skilllift.view.tasks import MAX_FILE_TEXT, MAX_FILES, artifacts


def test_files_text_binary_links_caps_and_what_the_run_cut(tmp_path: Path) -> None:
    run = tmp_path / "run"
    art = run / "artifacts"
    (art / "sub").mkdir(parents=True)
    (art / "sub" / "a.csv").write_text("x,y\n1,2\n")
    (art / "b.bin").write_bytes(b"\x00\x01\x02" * 10)
    (art / "long.txt").write_text("é" * MAX_FILE_TEXT)  # 2 bytes each: cut mid-way
    secret = tmp_path / "secret.txt"
    secret.write_text("never shown")
    (art / "link.txt").symlink_to(secret)
    (run / "task.json").write_text(json.dumps({"artifacts": {
        "cut": [{"path": "huge.parquet", "bytes": 9_000_000, "reason": "file over the cap"}],
        "deleted": ["/app/old.csv"]}}))
    shown = artifacts(run)
    files = {f["path"]: f for f in shown["files"]}
    assert files["sub/a.csv"] == {"path": "sub/a.csv", "bytes": 8, "text": "x,y\n1,2\n",
                                  "cut_bytes": 0}
    assert files["b.bin"] == {"path": "b.bin", "bytes": 30, "binary": True}
    assert files["long.txt"]["cut_bytes"] == MAX_FILE_TEXT
    assert files["long.txt"]["text"] == "é" * (MAX_FILE_TEXT // 2)
    left = {f["path"]: f["why"] for f in shown["left_out"]}
    assert "link" in left["link.txt"] and "link.txt" not in files
    assert left["huge.parquet"] == "not saved by the run (file over the cap, 9000000 bytes)"
    assert left["/app/old.csv"] == "deleted by the agent"


def test_past_the_file_cap_each_file_is_named(tmp_path: Path) -> None:
    art = tmp_path / "run" / "artifacts"
    art.mkdir(parents=True)
    for i in range(MAX_FILES + 3):
        (art / f"f{i:03d}.txt").write_text(str(i))
    shown = artifacts(tmp_path / "run")
    assert len(shown["files"]) == MAX_FILES
    assert [f["path"] for f in shown["left_out"]] == [f"f{i:03d}.txt" for i in
                                                      range(MAX_FILES, MAX_FILES + 3)]
