"""Stores RocketMQ writes in non-default shapes (README.md: `rmq-<v>-batchcq`, `-lmq`, `-cqext`) against
RocketMQ's own answers: queue bounds (`getMin/MaxOffsetInQueue`) and backlogs (`getMessage` from every
committed consumer offset to the queue's end), through the Store API, `rmqstore info` / `verify` and the
Spark source's `startingOffsets group:` on both engines. A committed offset inside a BatchCQ batch
starts with that whole batch (docs/format.md §4.5), as getMessage returns it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from oracle import MAIN, ORACLES, QUEUE_SHAPES, open_store, store_dir
from pyspark.sql import SparkSession

from rmqstore.cli import main as cli_main

SHAPES = QUEUE_SHAPES
GROUPS = sorted({(name, b["group"]) for name in SHAPES for b in ORACLES[name]["backlogs"]
                 if not name.endswith("-lmq")})
"""Consumer groups of the BatchCQ and cqext fixtures (reading LMQ queues by name is not done yet)."""


def _backlog_rows(name: str) -> dict[tuple[str, int], list[int]]:
    """(topic, queueId) -> the commit-log offsets getMessage returned from the committed offset on."""
    return {(b["topic"], b["queueId"]): b["getMessage"] for b in ORACLES[name]["backlogs"]}


def test_shape_fixtures_present() -> None:
    assert {name.rsplit("-", 1)[-1] for name in SHAPES} == {"batchcq", "lmq", "cqext"}


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
    addresses and the `topic#T#<TAGS>` index entries (5.4.0+) are what RocketMQ writes, not damage."""
    status = cli_main(["verify", str(store_dir(name)), "--json", "--no-progress"])
    report = json.loads(capsys.readouterr().out)
    assert status == 0 and report["sound"], report


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


@pytest.mark.spark
@pytest.mark.parametrize("name", [n for n in SHAPES if n.endswith("-lmq")])
def test_lmq_queues_by_name_are_refused_and_other_queues_read(
    spark: SparkSession, engine_format: str, name: str
) -> None:
    """A read selecting `%LMQ%` queues by name fails naming them (their records keep their own topic, so
    it would silently select none, docs/format.md §4.6); the group's other queues read with `topics`."""
    store = str(store_dir(name))
    by_topic = spark.read.format(engine_format).option("topics", "%LMQ%q1").load(store)
    with pytest.raises(Exception, match=r"rmqstore option 'topics': \['%LMQ%q1'\] are LMQ queues"):
        by_topic.collect()
    by_group = spark.read.format(engine_format).option("startingOffsets", "group:shape-group").load(store)
    with pytest.raises(Exception, match=r"'startingOffsets': \['%LMQ%q1', '%LMQ%q2'\] are LMQ queues"):
        by_group.collect()
    rows = (spark.read.format(engine_format).option("startingOffsets", "group:shape-group")
            .option("topics", "TopicLmq").load(store).select("queueId", "commitLogOffset").collect())
    found: dict[tuple[str, int], list[int]] = defaultdict(list)
    for row in rows:
        found[("TopicLmq", row.queueId)].append(row.commitLogOffset)
    expected = {q: offsets for q, offsets in _backlog_rows(name).items() if q[0] == "TopicLmq" and offsets}
    assert {q: sorted(offsets) for q, offsets in found.items()} == expected
