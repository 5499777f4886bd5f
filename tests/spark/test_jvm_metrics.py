"""The JVM engine's Spark UI metrics (RmqMetrics.scala), read from the executed plan's scan node.

`indexProbes` counts one hash-slot read and chain walk per `topic#key` per index file with entries:
made on the driver for a lookup planned there (`Scan.reportDriverMetrics`), in the probe tasks for a
long IN list (`PartitionReader.currentMetricsValues`); both report the same total, and so do the
statsDir lines (`index_probes` of the plan and read lines).
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from helpers.spark_expected import expected_offsets, store_rows
from helpers.spark_stores import KEY_POOL, read_stats, scan_metrics
from rmqstore.spark.jar import PROVIDER_CLASS
from rmqstore.store import Store


def _read(spark: SparkSession, store: Path, stats_dir: Path, **options: str) -> DataFrame:
    reader = spark.read.format(PROVIDER_CLASS).option("statsDir", str(stats_dir))
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load(str(store))


def _stats_probes(stats_dir: Path) -> tuple[int, int]:
    """(index probes of the plan line, sum over the read lines) of the one query logged in `stats_dir`."""
    lines = read_stats(stats_dir)
    plans = [r["index_probes"] for r in lines if r["event"] == "plan"]
    assert len(plans) == 1, lines
    return plans[0], sum(r["index_probes"] for r in lines if r["event"] == "read")


def test_index_probes_are_counted_on_the_driver_and_on_executors_alike(spark: SparkSession, small_store: Path,
                                                                      tmp_path: Path) -> None:
    index_files = len(list((small_store / "index").iterdir()))
    assert index_files >= 2  # every one has entries: the writer opens the next when one is full
    with Store.open(str(small_store)) as store:
        topics = len(store.indexed_topics())  # no topic predicate: every topic that can be indexed is probed
    rows = store_rows(small_store)

    key = KEY_POOL[1]
    df = _read(spark, small_store, tmp_path / "key").where(F.col("key") == key).select("commitLogOffset")
    _, metrics = scan_metrics(df)
    assert metrics["indexProbes"] == topics * index_files
    assert _stats_probes(tmp_path / "key") == (topics * index_files, 0)
    assert metrics["recordsDecoded"] < len(rows)

    keys = list(KEY_POOL)
    totals = {}
    for where, threshold in (("driver", "64"), ("executors", "2")):
        stats = tmp_path / where
        df = _read(spark, small_store, stats, keyProbePartitionThreshold=threshold) \
            .where(F.col("key").isin(keys)).select("commitLogOffset")
        got, metrics = scan_metrics(df)
        assert sorted(r.commitLogOffset for r in got) == expected_offsets(rows, lambda r: r["key"] in keys)
        totals[where] = metrics["indexProbes"]
        planned, tasks = _stats_probes(stats)
        assert (planned > 0, tasks > 0) == (where == "driver", where == "executors")
        assert planned + tasks == totals[where]
    expected = topics * len(keys) * index_files
    assert totals == {"driver": expected, "executors": expected}


def test_a_scan_makes_no_index_probe(spark: SparkSession, small_store: Path, tmp_path: Path) -> None:
    _, metrics = scan_metrics(_read(spark, small_store, tmp_path).select("commitLogOffset"))
    assert metrics["indexProbes"] == 0
    assert metrics["recordsDecoded"] == len(store_rows(small_store))
    assert _stats_probes(tmp_path) == (0, 0)
