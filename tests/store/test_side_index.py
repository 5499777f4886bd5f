"""The side index of what the broker's index lacks: ROLLBACK records, index files lost in recovery,
the log past the index's end. Lookups equal a full scan filtered, and once the side index exists a
key query reads index slots and the matching records only (< 1% of the log)."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

import pytest

from helpers.side_index_stores import (
    TOPICS,
    Rows,
    bytes_read_per_file,
    copy_store,
    delete_index_file,
    expected_offsets,
    log_bytes,
    log_size,
    scanned_rows,
    write_keyed_store,
)
from rmqstore.cachedir import CACHE_DIR_ENV
from rmqstore.plan.lookup import find_by_key, find_by_uniq_key
from rmqstore.store import Store
from rmqstore.store.side_index import index_holes, lacking_ranges

RECORDS = 6_000
ROLLBACK_KEYS = ["k7", "k37", "k3007", "k5977"]
"""Keys only ROLLBACK records carry (every 30th record from the 7th)."""
OTHER_KEYS = ["k8", "k2999", "k5998"]


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def rollback_heavy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """~3.4% ROLLBACK records, ~4 MB of log in 512 KiB segments, several index files."""
    path = tmp_path_factory.mktemp("side") / "store"
    write_keyed_store(path, RECORDS)
    return path


def _check_answers(store_path: Path) -> None:
    """find_by_key / find_by_uniq_key equal a full scan filtered, ROLLBACK-only keys included."""
    rows = scanned_rows(store_path)
    with Store.open(store_path) as store:
        for key in ROLLBACK_KEYS + OTHER_KEYS + ["g7", "absent"]:
            assert find_by_key(store, key) == expected_offsets(rows, "keys", key), key
        for uniq in ["u7", "u3007", "u8", "u5999"]:
            assert find_by_uniq_key(store, uniq) == expected_offsets(rows, "uniqKey", uniq), uniq
        assert find_by_key(store, "k7", topics=["Orders"]) == []  # record 7 is a Payments record
        assert find_by_key(store, "k7", topics=["Orders", "Payments"]) == expected_offsets(rows, "keys", "k7")


def _query_log_bytes(store_path: Path, key: str, rows: Rows) -> int:
    """Commit-log bytes a key query reads on a fresh Store once the side index exists (the valid end
    is found first: every read of a store does that)."""
    with Store.open(store_path) as store:
        assert store.max_offset
        with bytes_read_per_file() as counted:
            found = find_by_key(store, key)
            assert store.side_index().note is None  # opened from the cache, nothing scanned
        assert found == expected_offsets(rows, "keys", key)
        return log_bytes(counted)


def test_rollback_records_are_found_through_the_side_index(rollback_heavy: Path) -> None:
    with Store.open(rollback_heavy) as store:
        assert index_holes(store) == []  # the broker's index covers the log: only ROLLBACK records lack
        rolled_back = store.unindexed_ranges()
        assert len(rolled_back) == RECORDS // 30 and lacking_ranges(store) == rolled_back
        side = store.side_index()
        assert side.note and "built a side index" in side.note
        assert sum(part.shape[1] for part in side.parts) == 3 * len(rolled_back)  # uniq key + 2 KEYS tokens
        assert store.side_index() is side
    _check_answers(rollback_heavy)


def test_a_key_query_reads_under_one_percent_of_the_log(rollback_heavy: Path) -> None:
    with Store.open(rollback_heavy) as store:
        rolled_back = sum(end - start for start, end in store.unindexed_ranges())  # coverage: cached
        with bytes_read_per_file() as counted:
            store.side_index()
        built = log_bytes(counted)
    size, rows = log_size(rollback_heavy), scanned_rows(rollback_heavy)
    assert rolled_back <= built < 1.5 * rolled_back and rolled_back < 0.04 * size  # ROLLBACK records only
    for key in ROLLBACK_KEYS + OTHER_KEYS:
        assert _query_log_bytes(rollback_heavy, key, rows) < 0.01 * size, key


def test_newest_index_file_deleted(rollback_heavy: Path, tmp_path: Path) -> None:
    store_path = copy_store(rollback_heavy, tmp_path / "store")
    delete_index_file(store_path, -1)
    with Store.open(store_path) as store:
        holes = index_holes(store)
        assert len(holes) == 1 and holes[0][1] == store.max_offset and holes[0][0] > store.min_offset
        assert store.side_index().note
    _check_answers(store_path)
    size, rows = log_size(store_path), scanned_rows(store_path)
    assert holes[0][1] - holes[0][0] > 0.05 * size  # what used to be scanned by every query
    for key in ROLLBACK_KEYS + OTHER_KEYS:
        assert _query_log_bytes(store_path, key, rows) < 0.01 * size, key


def test_index_file_lost_between_others(rollback_heavy: Path, tmp_path: Path) -> None:
    """A file lost in the middle (a restart that destroyed the current file, then a new one): the
    records between the files' spans are found too."""
    store_path = copy_store(rollback_heavy, tmp_path / "store")
    with Store.open(store_path) as store:
        assert len(store.index_files) >= 4
    delete_index_file(store_path, 1)
    with Store.open(store_path) as store:
        (start, end), = index_holes(store)
        assert store.min_offset < start < end < store.max_offset
        rows = scanned_rows(store_path)
        inside = [o for o in expected_offsets(rows, "keys", "g7") if start <= o < end]
        assert inside and set(inside) <= set(find_by_key(store, "g7"))
    _check_answers(store_path)


def test_index_lagging_behind_the_log(tmp_path: Path) -> None:
    """The index of the first 4,500 records only (dispatch lagging, or not flushed before a crash)."""
    store_path, short = tmp_path / "store", tmp_path / "short"
    write_keyed_store(store_path, RECORDS)
    write_keyed_store(short, 4_500)
    with Store.open(short) as lagging:
        head = lagging.max_offset
    segment = sorted((short / "commitlog").iterdir())[0]
    assert segment.read_bytes() == (store_path / "commitlog" / segment.name).read_bytes()  # same records
    for name in os.listdir(store_path / "index"):
        os.unlink(store_path / "index" / name)
    for index_file in (short / "index").iterdir():
        (store_path / "index" / index_file.name).write_bytes(index_file.read_bytes())
    with Store.open(store_path) as store:
        holes = index_holes(store)
        assert holes == [(head, store.max_offset)]  # from the end of the last indexed record
        assert store.side_index().note
    _check_answers(store_path)
    size, rows = log_size(store_path), scanned_rows(store_path)
    for key in ["k5977", "k5998", "k8"]:
        assert _query_log_bytes(store_path, key, rows) < 0.01 * size, key


def test_appended_records_rebuild_only_the_changed_segments(tmp_path: Path, private_cache: Path) -> None:
    """New records change the active segment's cache key: its part is rebuilt and the new records are
    found; the sealed segments' parts are reused (same size and mtime)."""
    before, after = tmp_path / "before", tmp_path / "after"
    write_keyed_store(before, 4_900)
    write_keyed_store(after, 5_000)
    for name in os.listdir(after / "index"):  # the index of the first 4,900 records: lagging
        os.unlink(after / "index" / name)
    for index_file in (before / "index").iterdir():
        (after / "index" / index_file.name).write_bytes(index_file.read_bytes())
    store_path = copy_store(before, tmp_path / "store")
    with Store.open(store_path) as store:
        assert find_by_key(store, "k4950") == [] and store.side_index().note
    arrays = {p.name for p in private_cache.rglob("*.npy")}
    changed = set()
    for segment in (after / "commitlog").iterdir():  # the broker appends (and may roll a segment)
        target = store_path / "commitlog" / segment.name
        if not target.exists() or target.read_bytes() != segment.read_bytes():
            target.write_bytes(segment.read_bytes())
            changed.add(segment.name)
    for sub in ("index", "consumequeue"):
        shutil.rmtree(store_path / sub)
        shutil.copytree(after / sub, store_path / sub)
    rows = scanned_rows(store_path)
    with Store.open(store_path) as store:
        assert find_by_key(store, "k4950") == expected_offsets(rows, "keys", "k4950") != []
        assert store.side_index().note
        rebuilt = {p.name for p in private_cache.rglob("*.npy")} - arrays
        assert changed and {name.split("-")[0] for name in rebuilt} == changed
    _check_answers(store_path)


def test_a_segment_deleted_by_retention_drops_out(rollback_heavy: Path, tmp_path: Path,
                                                  private_cache: Path) -> None:
    store_path = copy_store(rollback_heavy, tmp_path / "store")
    with Store.open(store_path) as store:
        store.side_index()
        oldest = os.path.basename(store.segments[0].path)
    assert any(p.name.startswith(oldest) for p in private_cache.rglob("*.npy"))
    (store_path / "commitlog" / oldest).unlink()
    rows = scanned_rows(store_path)
    with Store.open(store_path) as store:
        assert store.min_offset > 0
        for key in ["k7", "k3007", "g7"]:
            assert find_by_key(store, key) == expected_offsets(rows, "keys", key)
        assert find_by_key(store, "k7") == []  # its record went with the segment
        assert store.side_index().note is None  # nothing to scan: the other segments' parts are reused
    assert not any(p.name.startswith(oldest) for p in private_cache.rglob("*.npy"))


def test_the_store_is_not_written(rollback_heavy: Path, tmp_path: Path, private_cache: Path) -> None:
    store_path = copy_store(rollback_heavy, tmp_path / "store")
    delete_index_file(store_path, -1)
    listing = sorted((p.relative_to(store_path), p.stat().st_size, p.stat().st_mtime_ns)
                     for p in store_path.rglob("*"))
    with Store.open(store_path) as store:
        store.side_index()
    assert sorted((p.relative_to(store_path), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in store_path.rglob("*")) == listing
    assert list(private_cache.rglob("*.npy"))


def test_a_remote_stores_side_index_travels_with_the_pickled_store(s3_server, tmp_path: Path,
                                                                   private_cache: Path) -> None:
    """A remote store's side index is cached like a local one's (segments keyed by their listed mtimes)
    and also shipped with the pickled Store (Spark tasks probe it on executors without scanning again)."""
    _, s3, upload = s3_server
    local = tmp_path / "store"
    write_keyed_store(local, 600, segment_size=64 << 10)
    upload(str(local), "side/store")
    rows = scanned_rows(local)
    remote = Store.open("side/store", filesystem=s3)
    side = remote.side_index()
    assert side.note and "cached in" in side.note and list(private_cache.rglob("*.npy"))
    shipped = pickle.loads(pickle.dumps(remote))
    assert shipped.max_offset == remote.max_offset
    shipped.stats.reset()
    found = find_by_key(shipped, "k37", topics=TOPICS)  # a ROLLBACK record; topics as the planner sends
    assert found == expected_offsets(rows, "keys", "k37") != [] and shipped.side_index().note is None
    assert shipped.stats.segments_touched == {found[0] // (64 << 10) * (64 << 10)}  # no scan: one read
    assert find_by_uniq_key(shipped, "u7", topics=TOPICS) == expected_offsets(rows, "uniqKey", "u7")


def test_a_record_split_between_index_files_lacks_when_the_next_file_is_lost(tmp_path: Path) -> None:
    """RocketMQ puts the entries of a record that no longer fit a full index file into the next file,
    which begins with that record (rmq-5.5.0-broker, written by RocketMQ: its third and fourth files
    share the record at 35032). With the newest file lost, the record's last keys are in no index file:
    the side index has them."""
    fixture = Path(__file__).parents[1] / "conformance" / "fixtures" / "rmq-5.5.0-broker" / "store"
    store_path = copy_store(fixture, tmp_path / "store")
    shared = delete_index_file(store_path, -1)
    rows = scanned_rows(store_path)
    with Store.open(store_path) as store:
        newest = store.index_files[-1]
        assert newest.geometry and newest.header and newest.header.index_count == newest.geometry[1]  # full
        assert index_holes(store) == [(newest.header.end_phy_offset, store.max_offset)]
        for key in sorted({token for _, keys, _ in rows for token in keys or ()}):
            assert find_by_key(store, key) == expected_offsets(rows, "keys", key), key
    assert shared.name > newest.name
