"""The Spark source (`spark.read.format("rmqstore")`) against stores written by real RocketMQ and
RocketMQ's own answers (oracle.json), each read with filter pushdown and without (`pushdown=false`).

A filter selects table rows, so pushed down or not it must return every record that satisfies it as
MessageDecoder decoded the record. Against RocketMQ's index answers that is: exactly the uncapped
answer plus the records RocketMQ never indexes (TRANSACTION_ROLLBACK_TYPE, `oracle.not_indexed`).
SQL `key = v` compares the whole KEYS string; RocketMQ's meaning (v is one of the space-separated
KEYS tokens) is the source's `keys` option. `msgId = v` compares the offsetMsgId column. Many values go
into one IN query per fixture (one Spark job each) and the rows are grouped per value. The access path a
read took comes from the source's `statsDir` diagnostics, so the pushdown variant is known to have
used the index / offsets / consume queues and the other one a scan. Every test runs on both engines
(the `engine_format` fixture), with the same expected access paths.
Fixtures: README.md.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from oracle import (
    CONFIG_V2,
    CRASH,
    DLEDGER,
    EPOCH,
    FILE_QUEUES,
    MAIN,
    QUEUE_SHAPES,
    expected_row,
    index_queries,
    msg_id_queries,
    records,
    store_dir,
    stored_within,
    table_row,
    time_windows,
)
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rmqstore.format.table import COLUMN_NAMES

pytestmark = pytest.mark.spark

PUSHDOWN = [pytest.param(True, id="pushdown"), pytest.param(False, id="no-pushdown")]
FEW = [name for name in FILE_QUEUES if name not in DLEDGER and name not in QUEUE_SHAPES]
"""Fixtures of the tests that the DLedger, RocksDB and queue-shape fixtures skip: the DLedger ones read
like the others (the Store and CLI conformance tests run every query on them), so Spark checks only
their scan, topic and msgId reads; the RocksDB and queue-shape ones differ only in their queues
(FILE_QUEUES; test_conformance_shapes.py reads their queues through Spark)."""
RECORDS = [name for name in MAIN if name not in CONFIG_V2]
"""MAIN without the v2 config storage fixture: its records and queues are those of rmq-5.4.0-lmq (the same
scenario and commit-log bytes; only config/ differs), so Spark reads it only from a group's offsets
(test_conformance_rdb.py), not repeated here for CI time."""


class Read:
    """One configured read of a fixture plus the plan diagnostics it writes to `statsDir`."""

    def __init__(self, spark: SparkSession, fmt: str, name: str, pushdown: bool, stats_dir: Path,
                 **options: str):
        self.pushdown = pushdown
        self.stats_dir = stats_dir
        reader = spark.read.format(fmt).option("statsDir", str(stats_dir))
        if not pushdown:
            reader = reader.option("pushdown", "false")
        for option, value in options.items():
            reader = reader.option(option, value)
        self.df: DataFrame = reader.load(str(store_dir(name)))

    def assert_access(self, pushed_access: str) -> None:
        """The plan consumed the filters and used `pushed_access`, or (no pushdown) consumed none."""
        events = [json.loads(line) for path in self.stats_dir.glob("*.jsonl") for line in path.open()]
        plans = [e for e in events if e["event"] == "plan"]
        assert plans, "the source wrote no plan diagnostics"
        for plan in plans:
            assert bool(plan["pushed"]) == self.pushdown, plan
            assert plan["access"] == [pushed_access if self.pushdown else "scan"], plan


def _rows(df: DataFrame, *columns: str) -> list[dict[str, Any]]:
    return df.select(*columns).toArrow().to_pylist()


def _grouped(rows: list[dict[str, Any]], *by: str) -> dict[tuple[Any, ...], list[int]]:
    """Sorted commitLogOffsets per value of the `by` columns."""
    groups: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[c] for c in by)].append(row["commitLogOffset"])
    return {value: sorted(offsets) for value, offsets in groups.items()}


def _assert_rows_match_message_decoder(rows: list[dict[str, Any]], name: str,
                                       topics: set[str] | None = None) -> None:
    """`rows` are the records of the store (of `topics` only, when given), each as RocketMQ decodes it."""
    actual = sorted((table_row(r) for r in rows), key=lambda r: r["commitLogOffset"])
    expected = [expected_row(r) for r in records(name)  # crash copies: up to the recovered end
                if topics is None or r["topic"] in topics]
    got_offsets = [r["commitLogOffset"] for r in actual]
    wanted_offsets = [r["commitLogOffset"] for r in expected]
    missing = sorted(set(wanted_offsets) - set(got_offsets))
    extra = sorted(set(got_offsets) - set(wanted_offsets))
    assert got_offsets == wanted_offsets, f"records missing at {missing}, unexpected at {extra}"
    for got, wanted in zip(actual, expected, strict=True):
        assert got == wanted, f"record at {wanted['commitLogOffset']}"


@pytest.mark.parametrize("pushdown", PUSHDOWN)
@pytest.mark.parametrize("name", RECORDS + CRASH)
def test_every_record_matches_message_decoder(
    spark: SparkSession, engine_format: str, tmp_path: Path, name: str, pushdown: bool
) -> None:
    """`commitLogOffset >= 0` selects everything; pushed down it is planned as a commit-log range."""
    read = Read(spark, engine_format, name, pushdown, tmp_path)
    _assert_rows_match_message_decoder(_rows(read.df.where("commitLogOffset >= 0"), *COLUMN_NAMES), name)
    read.assert_access("scan")


@pytest.mark.parametrize("pushdown", PUSHDOWN)
@pytest.mark.parametrize("name", RECORDS)
def test_topic_filter_returns_every_record_of_its_topics(
    spark: SparkSession, engine_format: str, tmp_path: Path, name: str, pushdown: bool
) -> None:
    """`topic IN (every topic but the most frequent)`: pushed down it reads the consume queues, which
    RocketMQ does not fill with PREPARED / ROLLBACK transaction records; those rows must still come back.
    (Every topic would select every record: a dense selection is scanned, see the next test.)"""
    counts = Counter(r["topic"] for r in records(name))
    topics = sorted(set(counts) - {counts.most_common(1)[0][0]})
    read = Read(spark, engine_format, name, pushdown, tmp_path)
    rows = _rows(read.df.where(F.col("topic").isin(topics)), *COLUMN_NAMES)
    _assert_rows_match_message_decoder(rows, name, set(topics))
    read.assert_access("queues")


@pytest.mark.parametrize("name", ["rmq-5.5.0-broker"])
def test_a_topic_filter_selecting_every_record_is_scanned(
    spark: SparkSession, engine_format: str, tmp_path: Path, name: str
) -> None:
    """`topic IN (every topic)` on a store the queues cover: reading by offset would cost more than the
    scan (planner.DENSE_SHARE, ScanPlanner.DenseShare), so each engine's pushed plan scans and confirms;
    every record comes back."""
    topics = sorted({r["topic"] for r in records(name)})
    read = Read(spark, engine_format, name, True, tmp_path)
    _assert_rows_match_message_decoder(_rows(read.df.where(F.col("topic").isin(topics)), *COLUMN_NAMES), name)
    read.assert_access("scan")


@pytest.mark.parametrize("pushdown", PUSHDOWN)
@pytest.mark.parametrize("name", FEW)
def test_store_timestamp_window_returns_every_record_stored_in_it(
    spark: SparkSession, engine_format: str, tmp_path: Path, name: str, pushdown: bool
) -> None:
    """`storeTimestamp BETWEEN lo AND hi` returns every record RocketMQ stored with a time in the window,
    wherever it sits in the log: also the records written while the broker's clock had stepped back
    (`oracle.time_windows`), which lie after records with later times."""
    for lo, hi in time_windows(name):
        read = Read(spark, engine_format, name, pushdown, tmp_path / f"{lo}-{hi}")
        window = F.col("storeTimestamp").between(_instant(lo), _instant(hi))
        found = sorted(r["commitLogOffset"] for r in _rows(read.df.where(window), "commitLogOffset"))
        assert found == stored_within(name, (lo, hi)), f"storeTimestamp in [{lo}, {hi}]"


def _instant(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)


@pytest.mark.parametrize("pushdown", PUSHDOWN)
@pytest.mark.parametrize("name", FEW)
def test_key_equals_whole_keys_string(
    spark: SparkSession, engine_format: str, tmp_path: Path, name: str, pushdown: bool
) -> None:
    """`key IN (...)` with every KEYS token and probe RocketMQ was asked about: the rows whose whole KEYS
    string is one of them."""
    values = sorted({q.key for q in index_queries(name) if q.kind == "key"})
    read = Read(spark, engine_format, name, pushdown, tmp_path)
    found = _grouped(_rows(read.df.where(F.col("key").isin(values)), "commitLogOffset", "topic", "key"),
                     "topic", "key")
    assert found == _grouped([r for r in records(name) if r["key"] in values], "topic", "key")
    read.assert_access("key-index")


@pytest.mark.parametrize("pushdown", PUSHDOWN)
@pytest.mark.parametrize("name", FEW)
def test_keys_option_matches_rocketmq_key_queries(
    spark: SparkSession, engine_format: str, tmp_path: Path, name: str, pushdown: bool
) -> None:
    """The `keys` option (a KEYS token, RocketMQ's meaning) with every token RocketMQ was asked about.
    It is part of the DataFrame, not a pushed filter, so it applies with and without pushdown."""
    queries = [q for q in index_queries(name) if q.kind == "key"]
    keys = json.dumps(sorted({q.key for q in queries}))
    read = Read(spark, engine_format, name, pushdown, tmp_path, keys=keys)
    rows = _rows(read.df, "commitLogOffset", "topic", "keys")
    assert sorted(r["commitLogOffset"] for r in rows) == sorted({o for q in queries for o in q.table})
    for query in queries:
        query.check_table(r["commitLogOffset"] for r in rows
                          if r["topic"] == query.topic and query.key in r["keys"])


@pytest.mark.parametrize("pushdown", PUSHDOWN)
@pytest.mark.parametrize("name", FEW)
def test_uniq_key_matches_rocketmq(
    spark: SparkSession, engine_format: str, tmp_path: Path, name: str, pushdown: bool
) -> None:
    """`uniqKey IN (every UNIQ_KEY)`, rows grouped per (topic, UNIQ_KEY) like RocketMQ's questions."""
    queries = [q for q in index_queries(name) if q.kind == "uniqKey"]
    read = Read(spark, engine_format, name, pushdown, tmp_path)
    where = F.col("uniqKey").isin(sorted({q.key for q in queries}))
    found = _grouped(_rows(read.df.where(where), "commitLogOffset", "topic", "uniqKey"), "topic", "uniqKey")
    for query in queries:
        query.check_table(found.get((query.topic, query.key), []))
    assert sum(map(len, found.values())) == len({o for q in queries for o in q.table})
    read.assert_access("key-index")


@pytest.mark.parametrize("pushdown", PUSHDOWN)
@pytest.mark.parametrize("name", [name for name in FILE_QUEUES if name in RECORDS])
def test_msg_id_matches_rocketmq(
    spark: SparkSession, engine_format: str, tmp_path: Path, name: str, pushdown: bool
) -> None:
    """`msgId IN (...)`: an offsetMsgId RocketMQ found gives that record; ids naming no record give none."""
    queries = msg_id_queries(name)
    read = Read(spark, engine_format, name, pushdown, tmp_path)
    where = F.col("msgId").isin([q.msg_id for q in queries])
    found = _grouped(_rows(read.df.where(where), "commitLogOffset", "msgId"), "msgId")
    for query in queries:
        expected = [] if query.offset is None else [query.offset]
        assert found.get((query.msg_id,), []) == expected, query.msg_id
    read.assert_access("offsets")


@pytest.mark.parametrize("name", FEW)
def test_single_value_equalities_match_rocketmq(
    spark: SparkSession, engine_format: str, tmp_path: Path, name: str
) -> None:
    """`=` instead of IN, pushed down: `uniqKey =` the unique key of most records (RocketMQ's capped
    question, 32 of 35, where the fixture has it), `key =` a key that is a whole KEYS string (capped where
    the fixture has one: the broker's "hot"), and `msgId =` one record's offsetMsgId."""
    queries = index_queries(name)
    uniq = max((q for q in queries if q.kind == "uniqKey"), key=lambda q: len(q.table))
    key_of = {r["commitLogOffset"]: r["key"] for r in records(name)}
    whole = sorted((q for q in queries if q.kind == "key" and any(key_of[o] == q.key for o in q.table)),
                   key=lambda q: not q.capped)[0]
    msg_id = next(q for q in msg_id_queries(name) if q.offset is not None)
    checks = [
        ("uniqKey", uniq.key, uniq.topic, "key-index", list(uniq.table)),
        ("key", whole.key, whole.topic, "key-index", [o for o in whole.table if key_of[o] == whole.key]),
        ("msgId", msg_id.msg_id, None, "offsets", [msg_id.offset]),
    ]
    for column, value, topic, access, expected in checks:
        read = Read(spark, engine_format, name, True, tmp_path / column)
        where = F.col(column) == value
        if topic is not None:
            where = where & (F.col("topic") == topic)
        found = sorted(r["commitLogOffset"] for r in _rows(read.df.where(where), "commitLogOffset"))
        assert found == expected, f"{column} = {value!r}"
        read.assert_access(access)
