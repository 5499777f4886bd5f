"""Segment listing: 20-digit names, several directories, a first segment after retention, bad layouts."""

from __future__ import annotations

import os

import pytest

from helpers.store_builder import StoreBuilder, fill
from rmqstore.plan.tasks import split_spans
from rmqstore.store import Store, StoreLayoutError


def test_multi_directory_commit_log_merges_listings(tmp_path):
    dirs = [str(tmp_path / "disk1" / "commitlog"), str(tmp_path / "disk2" / "commitlog")]
    b = StoreBuilder(str(tmp_path / "store"), segment_size=2048, commitlog_dirs=dirs)
    written = fill(b, 40)
    b.finish()
    assert len(os.listdir(dirs[0])) > 1 and len(os.listdir(dirs[1])) > 1
    for spec in (",".join(dirs), dirs, " , ".join(dirs) + ","):
        store = Store.open(b.root, commitlog_dirs=spec)
        assert [s.base_offset for s in store.segments] == sorted(b.segments)
        assert store.segment_size == 2048
        offsets = [o for batch in store.scan(columns=["commitLogOffset"]) for o in batch[0].to_pylist()]
        assert offsets == [w.offset for w in written]


def test_relative_commitlog_dirs_are_under_the_root(tmp_path):
    root = tmp_path / "store"
    b = StoreBuilder(str(root), commitlog_dirs=[str(root / "cl-a"), str(root / "cl-b")])
    fill(b, 10)
    b.finish()
    store = Store.open(root, commitlog_dirs="cl-a,cl-b")
    assert store.max_offset == b.cursor


def test_first_segment_after_retention(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), segment_size=1024, first_offset=5 * 1024)
    written = fill(b, 12)
    b.finish()
    store = Store.open(b.root)
    assert store.min_offset == 5 * 1024 and store.segments[0].path.endswith("00000000000000005120")
    assert store.max_offset == written[-1].offset + written[-1].size


def test_other_files_are_ignored_and_empty_segments_reported(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"))
    fill(b, 3)
    b.finish(guard=False)
    commitlog = tmp_path / "store" / "commitlog"
    (commitlog / "README").write_text("x")
    (commitlog / "0000000000000000000").write_bytes(b"short name")
    (commitlog / "00000000000000999999").write_bytes(b"")
    store = Store.open(b.root)
    assert [s.base_offset for s in store.segments] == [0, 4096]
    assert any("empty segment" in p for p in store.problems)


def test_same_segment_in_two_directories_is_an_error(tmp_path):
    one, two = tmp_path / "a", tmp_path / "b"
    for d in (one, two):
        d.mkdir()
        (d / "00000000000000000000").write_bytes(bytes(64))
    with pytest.raises(StoreLayoutError, match="exists twice"):
        Store.open(tmp_path, commitlog_dirs=[str(one), str(two)])


def test_missing_store_and_missing_commitlog_are_clear_errors(tmp_path):
    with pytest.raises(StoreLayoutError, match="no such store directory"):
        Store.open(tmp_path / "nope")
    with pytest.raises(StoreLayoutError, match="commitlog_dirs"):
        Store.open(tmp_path)


def test_empty_store_has_equal_bounds(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"))
    b.finish()
    store = Store.open(b.root)
    assert store.min_offset == store.max_offset == 0
    assert list(store.scan()) == [] and split_spans(store.segment_spans(), 100) == []
