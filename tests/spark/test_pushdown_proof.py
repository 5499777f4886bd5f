"""Pushdown proven by what was read (statsDir JSON lines), explain(), and the disabled-conf path.

The proofs of what was read run on both engines (the `engine_format` fixture); those naming the
Python plan's task kinds read `rmqstore_python`. Spark's conf for Python sources' pushdown applies to
the Python engine only."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from helpers.spark_expected import expected_offsets, store_rows
from helpers.spark_stores import explain_text, read_stats
from rmqstore.store import Store


def _decoded(stats_dir: Path) -> int:
    return sum(r["records_decoded"] for r in read_stats(stats_dir) if r["event"] == "read")


def _read(spark: SparkSession, store: Path | str, stats_dir: Path, fmt: str = "rmqstore_python",
          **options: str):
    reader = spark.read.format(fmt).option("statsDir", str(stats_dir))
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load(str(store))


def test_key_lookup_decodes_only_candidates(spark: SparkSession, small_store: Path, engine_format: str,
                                            tmp_path: Path) -> None:
    rows = store_rows(small_store)
    key = next(r["keys"][0] for r in rows if r["keys"])
    expected = expected_offsets(rows, lambda r: r["key"] == key)
    got = [r.commitLogOffset for r in _read(spark, small_store, tmp_path / "on", engine_format)
           .where(F.col("key") == key).select("commitLogOffset").collect()]
    assert sorted(got) == expected
    plan = [r for r in read_stats(tmp_path / "on") if r["event"] == "plan"]
    assert plan[-1]["access"] == ["key-index"]
    containing = len([r for r in rows if key in (r["keys"] or [])])
    assert _decoded(tmp_path / "on") <= 2 * containing < len(rows)
    off = _read(spark, small_store, tmp_path / "off", engine_format, pushdown="false")
    off.where(F.col("key") == key).count()
    assert _decoded(tmp_path / "off") >= len(rows)


def test_time_window_reads_a_slice_of_the_log(spark: SparkSession, small_store: Path, engine_format: str,
                                              tmp_path: Path) -> None:
    rows = store_rows(small_store)
    times = sorted(r["storeTimestamp"] for r in rows)
    lo, hi = times[len(times) // 2], times[len(times) // 2 + 20]
    df = _read(spark, small_store, tmp_path, engine_format)
    got = df.where(F.col("storeTimestamp").between(lo, hi)).count()
    assert got == len(expected_offsets(rows, lambda r: lo <= r["storeTimestamp"] <= hi))
    assert _decoded(tmp_path) < len(rows) // 2


def test_a_first_time_window_on_s3_scans_and_the_executors_summarize_for_the_next(
        spark: SparkSession, small_store: Path, s3_server, tmp_path: Path) -> None:
    """On a remote store, a first window scans the segments whose store times are not summarized and
    its tasks (Python workers sharing the driver's cache directory) summarize them: the next window's
    plan joins their summaries (no walk by the driver) and reads ranges only."""
    endpoint, _, upload = s3_server
    upload(str(small_store), "proof/window")
    options = {"s3.accessKey": "testing", "s3.secretKey": "testing", "s3.endpoint": endpoint,
               "s3.scheme": "http", "s3.region": "us-east-1"}
    rows = store_rows(small_store)
    times = sorted(r["storeTimestamp"] for r in rows)
    plans = []
    for n, at in enumerate((len(times) // 2, len(times) // 3)):
        lo, hi = times[at], times[at + 20]
        df = (_read(spark, "s3://proof/window", tmp_path / str(n), **options)
              .where(F.col("storeTimestamp").between(lo, hi)))
        got = sorted(r.commitLogOffset for r in df.select("commitLogOffset").collect())
        assert got == expected_offsets(rows, lambda r, lo=lo, hi=hi: lo <= r["storeTimestamp"] <= hi) != []
        (plan,) = [r for r in read_stats(tmp_path / str(n)) if r["event"] == "plan"]
        plans.append(plan)
    with Store.open(str(small_store)) as store:
        log_bytes = store.max_offset - store.min_offset
    assert plans[0]["access"] == ["scan"] and plans[0]["range_bytes"] >= log_bytes
    assert plans[1]["access"] == ["range"] and plans[1]["range_bytes"] < log_bytes / 4
    assert plans[1]["notes"] == []  # joined from the tasks' pieces: no walk by the driver


def test_topic_reads_only_its_consume_queues(spark: SparkSession, small_store: Path, engine_format: str,
                                             tmp_path: Path) -> None:
    rows = store_rows(small_store)
    got = _read(spark, small_store, tmp_path, engine_format).where(F.col("topic") == "TopicB").count()
    assert got == len(expected_offsets(rows, lambda r: r["topic"] == "TopicB"))
    assert _decoded(tmp_path) == got
    assert [r for r in read_stats(tmp_path) if r["event"] == "plan"][-1]["access"] == ["queues"]


def test_explain_shows_pushed_filters(spark: SparkSession, engine_format: str, small_store: Path) -> None:
    df = spark.read.format(engine_format).load(str(small_store)).where(F.col("key") == "k1")
    assert "PushedFilters: [IsNotNull(key), EqualTo(key,k1)]" in explain_text(df)


def test_reads_work_with_the_pushdown_conf_off(spark: SparkSession, small_store: Path,
                                               tmp_path: Path) -> None:
    rows = store_rows(small_store)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    try:
        df = _read(spark, small_store, tmp_path)
        assert df.count() == len(rows)
        got = _read(spark, small_store, tmp_path).where(F.col("key") == "k1").count()
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    assert got == len(expected_offsets(rows, lambda r: r["key"] == "k1"))


def test_keys_option_finds_messages_having_the_key_among_several(spark: SparkSession, small_store: Path,
                                                                 engine_format: str, tmp_path: Path) -> None:
    rows = store_rows(small_store)
    got = sorted(r.commitLogOffset for r in _read(spark, small_store, tmp_path, engine_format, keys="k3,k4")
                 .select("commitLogOffset").collect())
    assert got == expected_offsets(rows, lambda r: {"k3", "k4"} & set(r["keys"] or []))
    assert any(len(r["keys"] or []) > 1 for r in rows if r["commitLogOffset"] in got)
    assert [r for r in read_stats(tmp_path) if r["event"] == "plan"][-1]["access"] == ["key-index"]


def test_many_keys_are_probed_on_executors_by_hash(spark: SparkSession, small_store: Path, engine_format: str,
                                                   tmp_path: Path) -> None:
    rows = store_rows(small_store)
    keys = sorted({r["key"] for r in rows if r["key"]}) + [f"absent-{i}" for i in range(200)]
    df = _read(spark, small_store, tmp_path, engine_format, keyProbePartitionThreshold="50")
    got = df.where(F.col("key").isin(keys))
    assert got.count() == len(expected_offsets(rows, lambda r: r["key"] in keys))
    tasks = {r["task"] for r in read_stats(tmp_path) if r["event"] == "read"}
    assert tasks == {"KeyProbeTask"}
    assert [r for r in read_stats(tmp_path) if r["event"] == "plan"][-1]["tasks"] > 1
