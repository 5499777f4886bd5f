"""Stores RocketMQ writes in non-default shapes (README.md: `rmq-<v>-batchcq`, `-lmq`, `-cqext`, `-rdb`)
against RocketMQ's own answers: queue bounds (`getMin/MaxOffsetInQueue`) and backlogs (`getMessage` from every
committed consumer offset to the queue's end), through the Store API, `rmqstore info` / `verify` and the
Spark source's `startingOffsets group:` on both engines. A committed offset inside a BatchCQ batch
starts with that whole batch (docs/format.md §4.5), as getMessage returns it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from oracle import MAIN, ORACLES, QUEUE_SHAPES, getmessage_rows, open_store, store_dir
from pyspark.sql import DataFrameReader, SparkSession

from rmqstore.cli import main as cli_main
from rmqstore.format.consumequeue import (
    DEFAULT_DELAY_LEVEL_TABLE,
    DEFAULT_MESSAGE_DELAY_LEVEL,
    parse_delay_levels,
)

SHAPES = QUEUE_SHAPES
LMQ = [n for n in SHAPES if n.endswith("-lmq")]
GROUPS = sorted({(name, b["group"]) for name in SHAPES for b in ORACLES[name]["backlogs"]
                  if not ORACLES[name]["config"].get("enableLmq")})
"""Consumer groups of the BatchCQ and cqext fixtures (the LMQ stores' rows are read through several
queues: `test_lmq_group_start_reads_every_queue_backlog`, test_conformance_rdb.py)."""
ROW = ("commitLogOffset", "topic", "queueId", "queueOffset")


def _backlog_rows(name: str) -> dict[tuple[str, int], list[int]]:
    """(topic, queueId) -> the commit-log offsets getMessage returned from the committed offset on."""
    return {(b["topic"], b["queueId"]): b["getMessage"] for b in ORACLES[name]["backlogs"]}


def test_shape_fixtures_present() -> None:
    assert {name.rsplit("-", 1)[-1] for name in SHAPES} == {"batchcq", "lmq", "cqext", "rdb"}


@pytest.mark.parametrize("name", SHAPES)
def test_queue_bounds_and_backlogs_match_rocketmq(name: str) -> None:
    with open_store(name) as store:
        for q in ORACLES[name]["queues"]:
            cq = store.consume_queue(q["topic"], q["queueId"])
            assert (cq.min_offset, cq.max_offset) == (q["minOffset"], q["maxOffset"]), q
        for b in ORACLES[name]["backlogs"]:
            cq = store.consume_queue(b["topic"], b["queueId"])
            assert cq.max_offset - b["committedOffset"] == b["backlog"], b
            assert cq.units(b["committedOffset"])["phy"].tolist() == b["getMessage"], b


@pytest.mark.parametrize("name", MAIN)
def test_verify_finds_healthy_stores_sound(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Every healthy fixture (DLedger and RocksDB ones included): BatchCQ units, LMQ units, ext
    addresses and the `topic#T#<TAGS>` index entries (5.4.0+) are what RocketMQ writes, not damage; the
    schedule topic's delivery times follow the broker's `messageDelayLevel`."""
    levels = ORACLES[name].get("config", {}).get("messageDelayLevel")
    delay_levels = ["--delay-levels", levels] if levels else []
    status = cli_main(["verify", str(store_dir(name)), "--json", "--no-progress", *delay_levels])
    report = json.loads(capsys.readouterr().out)
    assert status == 0 and report["sound"], report


@pytest.mark.parametrize("name", [name for name in MAIN if ORACLES[name].get("config", {}).get(
    "messageDelayLevel", DEFAULT_MESSAGE_DELAY_LEVEL) != DEFAULT_MESSAGE_DELAY_LEVEL])
def test_verify_checks_schedule_units_against_the_brokers_delay_levels(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Schedule-topic tagsCodes are store time + the broker's delay for the level: with RocketMQ's default
    levels instead of the broker's, every scheduled unit whose delay differs is reported."""
    assert cli_main(["verify", str(store_dir(name)), "--json", "--no-progress"]) == 1
    report = json.loads(capsys.readouterr().out)
    broker = parse_delay_levels(ORACLES[name]["config"]["messageDelayLevel"])
    levels = [int(r["properties"]["DELAY"])
              for r in ORACLES[name]["records"] if r["topic"] == "SCHEDULE_TOPIC_XXXX"]
    differing = [level for level in levels if broker[level] != DEFAULT_DELAY_LEVEL_TABLE[level]]
    assert differing and report["errors"] == {"consume queues": len(differing)}
    assert all("SCHEDULE_TOPIC_XXXX/" in text for text in report["errorExamples"]["consume queues"])


@pytest.mark.parametrize("name", SHAPES)
def test_info_lag_is_rocketmq_backlog(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["info", str(store_dir(name)), "--json", "--no-progress"]) == 0
    lags = {(g["topic"], g["group"]): g["lag"] for g in json.loads(capsys.readouterr().out)["consumerGroups"]}
    expected: dict[tuple[str, str], int] = defaultdict(int)
    for b in ORACLES[name]["backlogs"]:
        expected[(b["topic"], b["group"])] += b["backlog"]
    assert lags == expected


@pytest.mark.spark
@pytest.mark.parametrize("pushdown", [True, False], ids=["pushdown", "no-pushdown"])
@pytest.mark.parametrize(("name", "group"), GROUPS)
def test_group_start_reads_the_backlog_getmessage_returns(
    spark: SparkSession, engine_format: str, tmp_path: Path, name: str, group: str, pushdown: bool
) -> None:
    reader = spark.read.format(engine_format).option("startingOffsets", f"group:{group}")
    if not pushdown:
        reader = reader.option("pushdown", "false")
    rows = reader.load(str(store_dir(name))).select("topic", "queueId", "commitLogOffset").collect()
    found: dict[tuple[str, int], list[int]] = defaultdict(list)
    for row in rows:
        found[(row.topic, row.queueId)].append(row.commitLogOffset)
    expected = {queue: offsets for queue, offsets in _backlog_rows(name).items() if offsets}
    assert {queue: sorted(offsets) for queue, offsets in found.items()} == expected


@pytest.mark.parametrize("name", [n for n in SHAPES if n.endswith("-lmq")])
def test_query_topic_reads_an_lmq_queue(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`query --topic %LMQ%q` prints the queue's messages (as many as RocketMQ's max - min offset), each
    with its own stored topic; they are the records whose INNER_MULTI_DISPATCH names the queue."""
    for q in (q for q in ORACLES[name]["queues"] if q["topic"].startswith("%LMQ%")):
        status = cli_main(["query", str(store_dir(name)), "--topic", q["topic"], "--no-progress",
                           "--columns", "topic,commitLogOffset"])
        rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        wanted = [r for r in ORACLES[name]["records"]
                  if q["topic"] in r["properties"].get("INNER_MULTI_DISPATCH", "").split(",")]
        assert status == 0 and len(rows) == q["maxOffset"] - q["minOffset"], q
        assert rows == [{"topic": r["topic"], "commitLogOffset": r["commitLogOffset"]} for r in wanted], q


def _queue_rows(name: str, queue: str) -> list[tuple]:
    """The rows of every record in `queue` (its own topic, or an LMQ queue its properties name)."""
    return sorted((r["commitLogOffset"], r["topic"], r["queueId"], r["queueOffset"])
                  for r in ORACLES[name]["records"]
                  if queue in (r["topic"], *r["properties"].get("INNER_MULTI_DISPATCH", "").split(",")))


def _rows(reader, store: str, pushdown: bool, where: str | None = None) -> list[tuple]:
    if not pushdown:
        reader = reader.option("pushdown", "false")
    frame = reader.load(store)
    if where is not None:
        frame = frame.where(where)
    return sorted(tuple(row) for row in frame.select(*ROW).collect())


@pytest.mark.spark
@pytest.mark.parametrize("pushdown", [True, False], ids=["pushdown", "no-pushdown"])
@pytest.mark.parametrize("name", LMQ)
def test_lmq_group_start_reads_every_queue_backlog(
    spark: SparkSession, engine_format: str, name: str, pushdown: bool
) -> None:
    """`group:` reads the group's LMQ queues too (consumerOffset.json `%LMQ%q1@group`): one row per queue
    unit getMessage returns, so a record in two of the group's queues is two rows (docs/format.md §4.6)."""
    rows = _rows(spark.read.format(engine_format).option("startingOffsets", "group:shape-group"),
                 str(store_dir(name)), pushdown)
    assert rows == getmessage_rows(name)
    assert len(set(rows)) < len(rows)  # the fixture has records in two of the group's queues


@pytest.mark.spark
@pytest.mark.parametrize("pushdown", [True, False], ids=["pushdown", "no-pushdown"])
@pytest.mark.parametrize("name", LMQ)
def test_topics_option_reads_an_lmq_queue(spark: SparkSession, engine_format: str, name: str,
                                          pushdown: bool) -> None:
    """`topics=%LMQ%q` reads the queue's records as stored; its offsets are the queue's own (the group's
    committed one, JSON ones), while SQL on the `topic` / `queueOffset` columns sees the stored values,
    pushed down or not."""
    store = str(store_dir(name))

    def read(**options: str) -> DataFrameReader:
        return spark.read.format(engine_format).options(**options)

    rows = _rows(read(topics="%LMQ%q1", startingOffsets="group:shape-group"), store, pushdown)
    assert rows == getmessage_rows(name, {"%LMQ%q1"})
    rows = _rows(read(topics="%LMQ%q1"), store, pushdown, where="queueOffset >= 3")
    assert rows == [r for r in _queue_rows(name, "%LMQ%q1") if r[3] >= 3]
    both = _rows(read(topics="TopicLmq,%LMQ%q1"), store, pushdown, where="key IN ('lmq-4', 'lmq-5')")
    assert both == sorted([r for r in _queue_rows(name, "TopicLmq") + _queue_rows(name, "%LMQ%q1")
                           if r[0] in (1055, 1451)])  # lmq-4 is in both queues: two rows
    window = read(startingOffsets='{"%LMQ%q2": {"0": 7}}', endingOffsets='{"%LMQ%q2": {"0": 8}}')
    assert _rows(window, store, pushdown) == [(2944, "TopicLmq", 1, 5)]  # q2 offset 7 (properties)
    assert _rows(read(), store, pushdown, where="topic = '%LMQ%q1'") == []  # no record's topic is an LMQ name


@pytest.mark.spark
@pytest.mark.parametrize("name", LMQ)
def test_lmq_stream_reads_the_queue_backlog(spark: SparkSession, engine_format: str, name: str,
                                            tmp_path: Path) -> None:
    """An AvailableNow stream over a group's queues, LMQ ones included, returns the batch's rows; its
    offsets are keyed by the LMQ queue's name and queue id 0, in the queue's own offsets."""
    query_name = f"lmq_{engine_format.replace('.', '_')}"
    query = (spark.readStream.format(engine_format).option("startingOffsets", "group:shape-group")
             .load(str(store_dir(name))).writeStream.format("memory").queryName(query_name)
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    try:
        query.awaitTermination(120)
        assert query.exception() is None
        rows = sorted(tuple(r) for r in spark.sql(f"SELECT {', '.join(ROW)} FROM {query_name}").collect())
        end = json.loads(query.lastProgress["sources"][0]["endOffset"])
    finally:
        query.stop()
    assert rows == getmessage_rows(name)
    assert end[next(iter(end))]["queueOffsets"]["%LMQ%q1"] == {"0": 10}
