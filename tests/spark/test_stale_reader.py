"""The Spark 4.1–4.3 stale-reader bug (design §7.3) never gives silently wrong rows: the Python
engine's guard (rmqstore.spark.guard), so every read names it (`rmqstore_python`) whatever engine
`format("rmqstore")` resolves to. The JVM engine builds a new scan for every planned query."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import PythonException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

PYTHON = "rmqstore_python"


def _key_with_rows(spark: SparkSession, store: Path) -> tuple[str, int, int]:
    df = spark.read.format(PYTHON).load(str(store))
    total = df.count()
    row = df.where(F.col("key").isNotNull()).select("key").first()
    key = row["key"]
    matching = spark.read.format(PYTHON).load(str(store)).where(F.col("key") == key).count()
    assert 0 < matching < total
    return key, matching, total


def test_dataframe_reused_after_filtered_query_fails_loudly(spark: SparkSession, small_store: Path) -> None:
    key, matching, _ = _key_with_rows(spark, small_store)
    df = spark.read.format(PYTHON).load(str(small_store))
    assert df.where(F.col("key") == key).count() == matching
    with pytest.raises(PythonException, match="already used by another Spark query"):
        df.count()


def test_temp_view_reused_after_filtered_query_fails_loudly(spark: SparkSession, small_store: Path) -> None:
    key, matching, _ = _key_with_rows(spark, small_store)
    spark.read.format(PYTHON).load(str(small_store)).createOrReplaceTempView("stale_v1")
    assert spark.sql(f"SELECT count(*) AS n FROM stale_v1 WHERE key = '{key}'").first()["n"] == matching
    with pytest.raises(PythonException, match="already used by another Spark query"):
        spark.sql("SELECT count(*) AS n FROM stale_v1").first()


def test_sql_using_view_reused_after_filtered_query_fails_loudly(spark: SparkSession,
                                                                 small_store: Path) -> None:
    key, matching, _ = _key_with_rows(spark, small_store)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW stale_v2 USING {PYTHON} OPTIONS (path '{small_store}')")
    assert spark.sql(f"SELECT count(*) AS n FROM stale_v2 WHERE key = '{key}'").first()["n"] == matching
    with pytest.raises(PythonException, match="already used by another Spark query"):
        spark.sql("SELECT count(*) AS n FROM stale_v2").first()


def test_fresh_dataframe_per_query_and_repeated_filtered_counts_are_fine(spark: SparkSession,
                                                                         small_store: Path) -> None:
    key, matching, total = _key_with_rows(spark, small_store)
    filtered = spark.read.format(PYTHON).load(str(small_store)).where(F.col("key") == key)
    assert filtered.count() == matching
    assert filtered.count() == matching  # count() re-plans, so pushFilters runs again: a new plan token
    assert spark.read.format(PYTHON).load(str(small_store)).count() == total
    other = spark.read.format(PYTHON).load(str(small_store))
    assert other.where(F.col("key") == key).count() == matching
    assert other.where(F.col("key") != key).count() <= total  # a different filter re-plans the same df


def test_stale_check_can_be_disabled(spark: SparkSession, small_store: Path) -> None:
    key, matching, _ = _key_with_rows(spark, small_store)
    df = spark.read.format(PYTHON).option("staleReaderCheck", "false").load(str(small_store))
    assert df.where(F.col("key") == key).count() == matching
    assert df.count() == matching  # the Spark bug itself, visible once the guard is off


def test_repeated_collect_on_one_filtered_dataframe_is_refused_and_cache_is_the_way(
        spark: SparkSession, small_store: Path) -> None:
    key, matching, _ = _key_with_rows(spark, small_store)
    filtered = spark.read.format(PYTHON).load(str(small_store)).where(F.col("key") == key)
    assert len(filtered.collect()) == matching
    # collect() re-runs the same planned query without calling pushFilters again: Python cannot tell
    # it from a stale reuse, so it is refused (loudly) rather than risk wrong rows elsewhere
    with pytest.raises(PythonException, match="already used by another Spark query"):
        filtered.collect()
    cached = spark.read.format(PYTHON).load(str(small_store)).where(F.col("key") == key).cache()
    assert len(cached.collect()) == matching
    assert len(cached.collect()) == matching
    cached.unpersist()


def test_jvm_engine_reuses_no_reader(spark: SparkSession, small_store: Path) -> None:
    """The same reuse on the JVM engine: every planned query gets a new scan, so the unfiltered
    query after a filtered one on the same DataFrame or view reads every row."""
    from rmqstore.spark.jar import PROVIDER_CLASS

    key, matching, total = _key_with_rows(spark, small_store)
    df = spark.read.format(PROVIDER_CLASS).load(str(small_store))
    assert df.where(F.col("key") == key).count() == matching
    assert df.count() == total
    df.createOrReplaceTempView("stale_jvm")
    assert spark.sql(f"SELECT count(*) AS n FROM stale_jvm WHERE key = '{key}'").first()["n"] == matching
    assert spark.sql("SELECT count(*) AS n FROM stale_jvm").first()["n"] == total


def test_recorded_master_decides_where_filters_are_pushed(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    """`record_master` (rmqstore.spark.session) keys the master by the application; planning workers of
    that application see a cluster master (no pushdown there), never a local one or another's."""
    from rmqstore.spark import guard

    monkeypatch.setenv("RMQSTORE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(guard, "application_key", lambda: "/tmp/spark-a/userFiles-a")
    assert guard.cluster_master() is None  # nothing recorded: filters pushed, tasks checked by claim
    guard.record_master("spark://10.0.0.1:7077")
    assert guard.cluster_master() == "spark://10.0.0.1:7077"
    for local in ("local", "local[2]", "local[*]", "local[4,3]"):
        guard.record_master(local)
        assert guard.cluster_master() is None, local
    guard.record_master("local-cluster[2,1,1024]")  # separate executor JVMs: a cluster
    assert guard.cluster_master() == "local-cluster[2,1,1024]"
    monkeypatch.setattr(guard, "application_key", lambda: "/tmp/spark-b/userFiles-b")
    assert guard.cluster_master() is None  # another application
