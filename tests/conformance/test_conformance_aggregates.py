"""Aggregates the JVM engine answers from metadata (README "Pushdown", MetadataAggregates.scala) against the
same query scanned (`pushdown=false`), RocketMQ's records (oracle.json) and the Python engine, which has no
aggregate pushdown, on stores written by real RocketMQ: file queues with transaction records (PREPARED /
ROLLBACK ones are in no queue), crash copies, a DLedger log, LMQ copies, RocksDB queues, and BatchCQ, whose
units hold batches: metadata does not answer it, Spark scans. `verifyCrc=false` on every read: with it on, a
scan checks every body, which metadata cannot, so nothing is pushed (test_verify_crc_keeps_the_scan).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from chispa import assert_df_equality
from oracle import CRASH, DLEDGER, MAIN, records, store_dir
from pyspark.sql import DataFrame, SparkSession

from helpers.spark_stores import explain_text, read_stats, scan_metrics
from rmqstore.spark.jar import PROVIDER_CLASS
from rmqstore.store import Store

pytestmark = pytest.mark.spark

SCANNED = ["rmq-5.4.0-batchcq"]
ANSWERED = [name for name in sorted(MAIN + CRASH) if name not in SCANNED]
SHAPES = ["rmq-5.5.0", "rmq-4.9.7-crash", "rmq-5.4.0-dledger"]
"""Fixtures every query shape runs on (the others check the counts per topic)."""


def _queries(name: str) -> list[str]:
    """The aggregate shapes metadata answers, with filters taken from the fixture's own records."""
    rows = records(name)
    topics = Counter(r["topic"] for r in rows)
    two = "', '".join(sorted(topics)[:2])
    middle = sorted(r["storeTimestamp"] for r in rows)[len(rows) // 2]
    half = rows[len(rows) // 2]["commitLogOffset"]
    busiest = topics.most_common(1)[0][0]
    return [
        "SELECT count(*) AS n FROM t",
        "SELECT topic, count(*) AS n, min(queueOffset) AS q0, max(queueOffset) AS q1, "
        "min(commitLogOffset) AS p0, max(commitLogOffset) AS p1 FROM t GROUP BY topic",
        f"SELECT topic, queueId, count(msgId) AS n FROM t WHERE topic IN ('{two}') AND queueOffset >= 1 "
        f"AND commitLogOffset < {half} GROUP BY topic, queueId",
        "SELECT min(storeTimestamp) AS t0, max(storeTimestamp) AS t1, count(*) AS n FROM t",
        f"SELECT topic, count(*) AS n FROM t WHERE storeTimestamp >= timestamp_millis({middle}) "
        "GROUP BY topic",
        f"SELECT queueId, count(*) AS n FROM t WHERE topic = '{busiest}' OR commitLogOffset < {half} "
        "GROUP BY queueId",
    ]


def _sql(spark: SparkSession, fmt: str, name: str, query: str, **options: str) -> DataFrame:
    reader = spark.read.format(fmt).option("verifyCrc", "false")
    for option, value in options.items():
        reader = reader.option(option, value)
    reader.load(str(store_dir(name))).createOrReplaceTempView("t")
    return spark.sql(query)


@pytest.mark.parametrize("name", SHAPES)
def test_metadata_answers_equal_the_scan(spark: SparkSession, name: str) -> None:
    """Every shape is pushed (explain shows it) and equals the same query scanned and counted by Spark."""
    for query in _queries(name):
        pushed = _sql(spark, PROVIDER_CLASS, name, query)
        assert "PushedAggregation" in explain_text(pushed), query
        scanned = _sql(spark, PROVIDER_CLASS, name, query, pushdown="false")
        assert_df_equality(pushed, scanned, ignore_row_order=True)


@pytest.mark.parametrize("name", ANSWERED)
def test_counts_per_topic_are_rocketmqs(spark: SparkSession, name: str, tmp_path: Path) -> None:
    """`GROUP BY topic` counts are those of the records RocketMQ decodes (every transaction type). Answering
    read no record a unit points to: only the bytes no unit covers (the bytesRead metric and the statsDir
    plan line). A DLedger log's uncovered bytes are walked in windows of the log (CommitLog.chunks), which
    read around them, so only its counts are checked here."""
    pushed = _sql(spark, PROVIDER_CLASS, name, COUNTS, statsDir=str(tmp_path))
    rows, metrics = scan_metrics(pushed)
    assert {r.topic: r.n for r in rows} == Counter(r["topic"] for r in records(name))
    with Store.open(str(store_dir(name))) as store:
        uncovered = sum(end - start for start, end in store.uncovered_ranges())
    assert name in DLEDGER or metrics["bytesRead"] <= uncovered
    plans = {(tuple(p["access"]), p["bytes_read"]) for p in read_stats(tmp_path) if p["event"] == "plan"}
    assert plans == {(("metadata",), metrics["bytesRead"])}


COUNTS = "SELECT topic, count(*) AS n FROM t GROUP BY topic"


@pytest.mark.parametrize("name", SHAPES[:2])
def test_the_python_engine_scans_to_the_same_counts(spark: SparkSession, name: str) -> None:
    jvm = _sql(spark, PROVIDER_CLASS, name, COUNTS)
    assert_df_equality(jvm, _sql(spark, "rmqstore_python", name, COUNTS), ignore_row_order=True)


def test_transaction_records_outside_the_queues_are_read_and_counted(spark: SparkSession) -> None:
    """rmq-5.5.0 holds PREPARED / ROLLBACK records, which no unit points to: they are the bytes answering
    reads (their headers), and they are counted."""
    name = "rmq-5.5.0"
    outside = [r for r in records(name) if r["sysFlag"] & 0xC in (0x4, 0xC)]
    assert outside, "the fixture has no PREPARED / ROLLBACK record"
    query = "SELECT count(*) AS n FROM t WHERE commitLogOffset >= 0"  # not the tallies kept per queue
    rows, metrics = scan_metrics(_sql(spark, PROVIDER_CLASS, name, query))
    assert rows[0].n == len(records(name))
    assert metrics["bytesRead"] >= sum(r["storeSize"] for r in outside)


@pytest.mark.parametrize("name", SCANNED)
def test_shapes_metadata_cannot_answer_are_scanned(spark: SparkSession, name: str) -> None:
    """BatchCQ units hold several messages: Spark scans, same answer."""
    query = _queries(name)[1]
    pushed = _sql(spark, PROVIDER_CLASS, name, query)
    assert "PushedAggregation" not in explain_text(pushed)
    scanned = _sql(spark, PROVIDER_CLASS, name, query, pushdown="false")
    assert_df_equality(pushed, scanned, ignore_row_order=True)


def test_verify_crc_keeps_the_scan(spark: SparkSession) -> None:
    """With verifyCrc on (the default) a count must fail or skip a corrupt body like the scan: not pushed."""
    df = spark.read.format(PROVIDER_CLASS).load(str(store_dir("rmq-5.5.0")))
    df.createOrReplaceTempView("t")
    query = spark.sql("SELECT count(*) AS n FROM t")
    assert "PushedAggregation" not in explain_text(query)
    assert query.collect()[0].n == len(records("rmq-5.5.0"))
