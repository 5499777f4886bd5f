"""Old marker files go, at most one sweep per interval (rmqstore.cachedir.remove_old_entries)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from rmqstore.cachedir import SWEEP_STAMP, remove_old_entries

DAY = 24 * 3600


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_removes_old_files_and_trees_keeps_fresh_ones(tmp_path: Path) -> None:
    (tmp_path / "old-file").write_text("x")
    tree = tmp_path / "old-tree"
    tree.mkdir()
    (tree / "p0").write_text("sql-1")
    (tmp_path / "fresh").write_text("x")
    _age(tmp_path / "old-file", 2 * DAY)
    _age(tree, 2 * DAY)
    remove_old_entries(tmp_path, DAY)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["fresh", SWEEP_STAMP])


def test_sweeps_at_most_once_per_interval(tmp_path: Path) -> None:
    remove_old_entries(tmp_path, DAY, every_s=3600)
    (tmp_path / "old").write_text("x")
    _age(tmp_path / "old", 2 * DAY)
    remove_old_entries(tmp_path, DAY, every_s=3600)
    assert (tmp_path / "old").exists()  # swept a moment ago: the call costs one stat
    _age(tmp_path / SWEEP_STAMP, 3601)
    remove_old_entries(tmp_path, DAY, every_s=3600)
    assert not (tmp_path / "old").exists()


def test_missing_directory_is_nothing_to_sweep(tmp_path: Path) -> None:
    remove_old_entries(tmp_path / "absent", DAY)
    assert not (tmp_path / "absent").exists()
