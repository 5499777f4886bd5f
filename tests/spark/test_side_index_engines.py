"""One side index for both engines: the cache files python/rmqstore/store/side_index.py writes are the
ones the JVM engine's store/SideIndex.scala reads and writes, so whichever engine builds it first, the
other answers a key query from it without scanning what the broker's index lacks. Proven by the
commit-log bytes each engine reads (the JVM's `bytesRead` / `recordsDecoded` scan metrics, driver and
tasks; the Python Store's file reads)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from spark_stores import read_stats, scan_metrics

from rmqstore.spark.jar import PROVIDER_CLASS
from rmqstore.store import Store
from rmqstore.store.side_index import lacking_ranges

sys.path.insert(0, str(Path(__file__).parents[1] / "store"))
from side_index_stores import (
    bytes_read_per_file,
    copy_store,
    delete_index_file,
    expected_offsets,
    log_bytes,
    log_size,
    scanned_rows,
    write_keyed_store,
)

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
    """`find_by_key('k37')` on a fresh Store: offsets, whether the side index was built, log bytes read."""
    with Store.open(path) as store:
        assert store.max_offset  # the valid end first: every read of a store finds it
        with bytes_read_per_file() as counted:
            built = store.side_index().note is not None
            found = store.find_by_key(KEY)
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
