"""One side index, one coverage cache and one timeline cache for both engines: the cache files
python/rmqstore/store/side_index.py, coverage.py and timeline.py write are the ones the JVM engine's
store/SideIndex.scala, Coverage.scala and Timeline.scala read and write, so whichever engine builds them
first, the other answers from them. The side index is proven by the commit-log bytes each engine reads
(the JVM's `bytesRead` / `recordsDecoded` scan metrics, driver and tasks; the Python Store's file
reads); the coverage by emptying the queues after the first engine decided it (the second then still
sees the first's gaps); the timeline by moving the cached store times a day later (the second engine
then finds nothing in the window)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from helpers.side_index_stores import (
    bytes_read_per_file,
    copy_store,
    delete_index_file,
    expected_offsets,
    log_bytes,
    log_size,
    scanned_rows,
    write_keyed_store,
)
from helpers.spark_stores import read_stats, scan_metrics
from helpers.store_builder import BASE_TS, StoreBuilder
from rmqstore.plan.lookup import find_by_key
from rmqstore.spark.jar import PROVIDER_CLASS
from rmqstore.store import Store
from rmqstore.store.contract_store import TIMELINE_CACHE_KIND
from rmqstore.store.segment_cache import cache_dir
from rmqstore.store.side_index import lacking_ranges

RECORDS = 6_000
KEY, WHOLE_KEYS = "k37", "k37 g37"
"""Only record 37, a ROLLBACK record (every 30th from the 7th), carries this key."""
BUILT = "built a side index"
VARIANTS = ("rollback-heavy", "newest-index-file-deleted")


@pytest.fixture(scope="module")
def rollback_heavy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """~3.4% ROLLBACK records, ~4 MB of log in 512 KiB segments, several index files."""
    path = tmp_path_factory.mktemp("engines-side") / "store"
    write_keyed_store(path, RECORDS)
    return path


def _store(source: Path, tmp_path: Path, variant: str) -> Path:
    """A copy of its own (a new store identity: nothing of it cached yet), damaged as `variant` says."""
    path = copy_store(source, tmp_path / "store")
    if variant == "newest-index-file-deleted":
        delete_index_file(path, -1)
    return path


def _lacking_bytes(path: Path) -> int:
    """The bytes a key lookup scanned on every query before the side index: ROLLBACK records and the
    log the index lacks (computing them caches the Python engine's coverage, not the side index)."""
    with Store.open(path) as store:
        return sum(end - start for start, end in lacking_ranges(store))


def _jvm_lookup(spark: SparkSession, path: Path,
                stats_dir: Path) -> tuple[list[int], dict[str, int], list[str]]:
    """`key = 'k37 g37'` on the JVM engine: offsets found, scan metrics and the plan's notes."""
    df = (spark.read.format(PROVIDER_CLASS).option("statsDir", str(stats_dir)).load(str(path))
          .where(F.col("key") == WHOLE_KEYS).select("commitLogOffset"))
    rows, metrics = scan_metrics(df)
    plans = [line for line in read_stats(stats_dir) if line["event"] == "plan"]
    assert len(plans) == 1 and plans[0]["access"] == ["key-index"], plans
    return sorted(r.commitLogOffset for r in rows), metrics, plans[0]["notes"]


def _python_lookup(path: Path) -> tuple[list[int], bool, int]:
    """`find_by_key(store, 'k37')` on a fresh Store: offsets, whether the side index was built, log bytes."""
    with Store.open(path) as store:
        assert store.max_offset  # the valid end first: every read of a store finds it
        with bytes_read_per_file() as counted:
            built = store.side_index().note is not None
            found = find_by_key(store, KEY)
        return found, built, log_bytes(counted)


@pytest.mark.parametrize("variant", VARIANTS)
def test_built_by_the_jvm_used_by_python(spark: SparkSession, rollback_heavy: Path, tmp_path: Path,
                                         variant: str) -> None:
    path = _store(rollback_heavy, tmp_path, variant)
    expected = expected_offsets(scanned_rows(path), "keys", KEY)
    size, lacking = log_size(path), _lacking_bytes(path)
    assert len(expected) == 1 and lacking > 0.03 * size

    found, metrics, notes = _jvm_lookup(spark, path, tmp_path / "jvm")
    assert found == expected
    assert any(BUILT in note for note in notes), notes
    assert metrics["bytesRead"] >= lacking  # the build's scan is counted where it happens (the driver)

    found, built, read = _python_lookup(path)
    assert found == expected and not built
    assert read < 0.01 * size


@pytest.mark.parametrize("variant", VARIANTS)
def test_built_by_python_used_by_the_jvm(spark: SparkSession, rollback_heavy: Path, tmp_path: Path,
                                         variant: str) -> None:
    path = _store(rollback_heavy, tmp_path, variant)
    expected = expected_offsets(scanned_rows(path), "keys", KEY)
    size, lacking = log_size(path), _lacking_bytes(path)

    found, built, read = _python_lookup(path)
    assert found == expected and built and read >= lacking

    found, metrics, notes = _jvm_lookup(spark, path, tmp_path / "jvm")
    assert found == expected
    assert not any(BUILT in note for note in notes), notes
    assert metrics["bytesRead"] < 0.01 * size, metrics  # index slots and the matching record only
    assert metrics["recordsDecoded"] <= 2, metrics


def _empty_queues(path: Path) -> None:
    """Truncate every consume-queue file (names kept: the coverage cache's salt is the set of queues)."""
    for file in (path / "consumequeue").rglob("*"):
        if file.is_file():
            file.write_bytes(b"")


def _jvm_uncovered_note(spark: SparkSession, path: Path, stats_dir: Path) -> str:
    """The plan note of `topic = 'Orders'` on the JVM engine naming the bytes no queue covers."""
    df = spark.read.format(PROVIDER_CLASS).option("statsDir", str(stats_dir)).load(str(path))
    df.where(F.col("topic") == "Orders").select("commitLogOffset").collect()
    plans = [line for line in read_stats(stats_dir) if line["event"] == "plan"]
    assert len(plans) == 1, plans
    notes = [note for note in plans[0]["notes"] if "not covered by consume queues" in note]
    assert len(notes) == 1, plans[0]["notes"]
    return notes[0]


@pytest.mark.parametrize("first", ["jvm", "python"])
def test_coverage_decided_by_one_engine_serves_the_other(spark: SparkSession, rollback_heavy: Path,
                                                         tmp_path: Path, first: str) -> None:
    with Store.open(rollback_heavy) as store:
        uncovered = store.uncovered_ranges()  # the ROLLBACK records: the queues cover everything else
    assert len(uncovered) == RECORDS // 30
    note = f"{len(uncovered)} commit-log range(s), {sum(b - a for a, b in uncovered)} bytes"
    path = copy_store(rollback_heavy, tmp_path / "store")
    if first == "jvm":
        assert note in _jvm_uncovered_note(spark, path, tmp_path / "jvm")
    else:
        with Store.open(path) as store:
            assert store.uncovered_ranges() == uncovered
    _empty_queues(path)  # decided again, every byte would be uncovered
    if first == "jvm":
        with Store.open(path) as store:
            assert store.uncovered_ranges() == uncovered
    else:
        assert note in _jvm_uncovered_note(spark, path, tmp_path / "jvm")


DAY_MS = 86_400_000


def _window(path: Path) -> tuple[int, int, list[int]]:
    """A window [begin, end] (ms) over the middle fifth of the log's records, and their offsets."""
    with Store.open(path) as store:
        rows = [(offset, ts.value // 1000)
                for batch in store.scan(columns=["commitLogOffset", "storeTimestamp"])
                for offset, ts in zip(batch.column(0).to_pylist(), batch.column(1), strict=True)]
    begin, end = rows[2 * len(rows) // 5][1], rows[3 * len(rows) // 5][1]
    return begin, end, [offset for offset, ms in rows if begin <= ms <= end]


def _engine_window(spark: SparkSession, engine: str, path: Path, begin: int, end: int) -> list[int]:
    """The offsets of the window's records, found by the JVM engine's plan or by the Python Store's."""
    if engine == "python":
        with Store.open(path) as store:
            return [offset for start, stop in store.time_ranges(begin, end)
                    for batch in store.scan(start, stop, ["commitLogOffset", "storeTimestamp"])
                    for offset, ts in zip(batch.column(0).to_pylist(), batch.column(1), strict=True)
                    if begin <= ts.value // 1000 <= end]
    df = spark.read.format(PROVIDER_CLASS).load(str(path))
    window = F.col("storeTimestamp").between(F.lit(begin / 1000).cast("timestamp"),
                                             F.lit(end / 1000).cast("timestamp"))
    return sorted(r.commitLogOffset for r in df.where(window).select("commitLogOffset").collect())


@pytest.mark.parametrize("first", ["jvm", "python"])
def test_timeline_summarized_by_one_engine_serves_the_other(spark: SparkSession, rollback_heavy: Path,
                                                            tmp_path: Path, first: str) -> None:
    path = copy_store(rollback_heavy, tmp_path / "store")
    begin, end, expected = _window(rollback_heavy)
    assert 0 < len(expected) < RECORDS // 4
    assert _engine_window(spark, first, path, begin, end) == expected
    with Store.open(path) as store:
        live = [Path(seg.path).name for seg in store.segments if seg.base_offset < store.max_offset]
    assert sorted(_move_cached_times(path)) == sorted(live)
    second = "python" if first == "jvm" else "jvm"
    assert _engine_window(spark, second, path, begin, end) == []


def _move_cached_times(path: Path, *, unordered: bool = False) -> list[str]:
    """Move the store times of every cached run a day later (and mark them `unordered`); the names of the
    segments cached."""
    with Store.open(path) as store:
        cached = Path(cache_dir(TIMELINE_CACHE_KIND)) / store.cache_identity.file_name
    doc = json.loads(cached.read_text())
    for entry in doc["segments"].values():  # [size, mtime, records' end, last record, *runs]
        for run in entry[4:]:
            run[2], run[3] = run[2] + DAY_MS, run[3] + DAY_MS
            run[4] = run[4] and not unordered
    cached.write_text(json.dumps(doc))
    return list(doc["segments"])


def _timed_store(root: Path, records: int) -> StoreBuilder:
    """`records` records a second apart in one 64 KiB segment (the same first records for any count)."""
    b = StoreBuilder(str(root), segment_size=1 << 16)
    for i in range(records):
        b.append("T", b"g" * 60, store_ts=BASE_TS + i * 1000)
    b.finish(guard=False)
    return b


def test_the_jvm_walks_a_grown_segment_only_from_where_its_cached_summary_ends(spark: SparkSession,
                                                                             tmp_path: Path) -> None:
    """The segment holding the valid end has grown since Python summarized it: the JVM goes on from the
    cached runs and walks only the records after them, as Python does (design §3.5). The cached run is
    made an unordered one a day later here (its last record's time is then not checked): with the new
    records it becomes one unordered run from the first new record's time, so a window over the older
    records finds none, and one over the new records scans the segment and finds them."""
    live = tmp_path / "live"
    shutil.copytree(_timed_store(tmp_path / "v1", 150).root, live)
    with Store.open(live) as store:
        assert store.time_ranges(BASE_TS, BASE_TS) and store.timeline.note is not None  # summarized, cached
    assert _move_cached_times(live, unordered=True) == [f"{0:020d}"]
    grown = _timed_store(tmp_path / "v2", 200)
    shutil.copytree(grown.root, live, dirs_exist_ok=True)
    os.utime(live / "commitlog" / f"{0:020d}")
    assert _engine_window(spark, "jvm", live, BASE_TS + 10_000, BASE_TS + 20_000) == []
    assert _engine_window(spark, "jvm", live, BASE_TS + 160_000, BASE_TS + 170_000) == [
        w.offset for w in grown.written[160:171]]
