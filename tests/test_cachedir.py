"""Old marker files go, at most one sweep per interval (rmqstore.cachedir.remove_old_entries)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from rmqstore.cachedir import SWEEP_STAMP, cache_root, remove_old_entries

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


def test_cache_root_rule_is_the_jvm_engines(monkeypatch) -> None:
    """`$RMQSTORE_CACHE_DIR`, else `$XDG_CACHE_HOME/rmqstore`, else `$HOME/.cache/rmqstore`, else the
    account's home (the JVM's user.home): the cases of the connector's CacheDirSuite."""
    import rmqstore.cachedir as cachedir

    monkeypatch.setattr(cachedir, "_account_home", lambda: "/account/home")
    every = {"RMQSTORE_CACHE_DIR": "/explicit", "XDG_CACHE_HOME": "/xdg", "HOME": "/env/home"}
    assert cache_root(every) == Path("/explicit")
    assert cache_root({k: v for k, v in every.items() if k != "RMQSTORE_CACHE_DIR"}) == Path("/xdg/rmqstore")
    assert cache_root({"HOME": "/env/home"}) == Path("/env/home/.cache/rmqstore")  # $HOME wins over user.home
    assert cache_root({}) == Path("/account/home/.cache/rmqstore")
    assert cache_root(dict.fromkeys(every, "")) == Path("/account/home/.cache/rmqstore")
    monkeypatch.setenv("RMQSTORE_CACHE_DIR", "/from/env")
    assert cache_root() == Path("/from/env")  # this process's environment by default


def test_connector_jar_is_exported_where_the_readme_says() -> None:
    import rmqstore.spark
    from rmqstore.spark import connector_jar
    from rmqstore.spark.jar import connector_jar as defined

    assert connector_jar is defined and "connector_jar" in rmqstore.spark.__all__
