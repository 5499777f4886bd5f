"""One side index and one coverage cache for both engines: the cache files python/rmqstore/store/
side_index.py and coverage.py write are the ones the JVM engine's store/SideIndex.scala and
Coverage.scala read and write, so whichever engine builds them first, the other answers from them. The
side index is proven by the commit-log bytes each engine reads (the JVM's `bytesRead` /
`recordsDecoded` scan metrics, driver and tasks; the Python Store's file reads); the coverage by
emptying the queues after the first engine decided it (the second then still sees the first's gaps)."""

from __future__ import annotations

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
from rmqstore.plan.lookup import find_by_key
from rmqstore.spark.jar import PROVIDER_CLASS
from rmqstore.store import Store
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
