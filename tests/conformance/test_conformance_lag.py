"""Consumer lag (design §10) against RocketMQ's answers: the committed offsets the broker stored
(`consumerOffsets`), its queue bounds (`queues`, `getMin/MaxOffsetInQueue`), the records it wrote
(`storeSize`, `storeTimestamp`) and, where the oracle has them, getMessage's backlogs; through the Store API,
`rmqstore lag` / `info`, and the lag DataFrame of both engines. The expected lag is computed here from the
oracle alone; a store with its first commit-log segment deleted (as retention deletes it) has a committed
offset below its queue's min offset.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from oracle import MAIN, ORACLES, TRANSACTION_TYPE_MASK, open_store, store_dir
from pyspark.sql import SparkSession
from pyspark.sql.functions import col

from rmqstore import Store
from rmqstore.cli import main as cli_main
from rmqstore.cli.lag import format_age
from rmqstore.plan.lag import LAG_COLUMNS, consumer_lag
from rmqstore.spark import lag
from rmqstore.spark.lag import LAG_SCHEMA

PREPARED_OR_ROLLBACK = (0x04, 0x0C)
"""Transaction types of records in no consume queue (docs/format.md §2.5)."""
LIFE = [name for name in MAIN if "consumeStats" in ORACLES[name]]
"""Fixtures with RocketMQ's own lag answer: `examineConsumeStats` per group, taken on the running broker."""
RETAINED = "rmq-4.9.8"
"""Its 8 KiB segments: deleting the first one leaves TopicTest queues starting after committed offsets."""


def expected_lag(oracle: dict[str, Any]) -> tuple[int | None, list[dict[str, Any]]]:
    """(log end store time, rows as `QueueLag.to_json`) from the oracle alone."""
    queued = [r for r in oracle["records"]
              if r["sysFlag"] & TRANSACTION_TYPE_MASK not in PREPARED_OR_ROLLBACK]
    by_phy = {r["commitLogOffset"]: r for r in queued}
    bounds = {(q["topic"], q["queueId"]): (q["minOffset"], q["maxOffset"]) for q in oracle["queues"]}
    backlogs = {(b["topic"], b["group"], b["queueId"]): b["getMessage"] for b in oracle.get("backlogs", ())}
    end = max(by_phy.items())[1]["storeTimestamp"] if by_phy else None
    table = {tuple(key.split("@", 1)): {int(q): o for q, o in queues.items()}
             for key, queues in oracle["consumerOffsets"].items()}
    for group in {g for _, g in table}:
        if any(t == f"%RETRY%{group}" for t, _ in bounds):
            table.setdefault((f"%RETRY%{group}", group), {})
    rows = []
    for (topic, group), offsets in sorted(table.items(), key=lambda item: (item[0][1], item[0][0])):
        for queue_id in sorted(set(offsets) | {q for t, q in bounds if t == topic}):
            lo, hi = bounds.get((topic, queue_id), (0, 0))
            committed = offsets.get(queue_id)
            values = (group, topic, queue_id, "ok", committed, lo, hi, None, None, None, None)
            row = dict(zip(LAG_COLUMNS, values, strict=True))
            if committed is None or not lo <= committed <= hi:
                row["state"] = "no-offset" if committed is None else (
                    "offset-past-end" if committed > hi else "retained-away")
                rows.append(row)
                continue
            phys = backlogs.get((topic, group, queue_id)) or sorted(
                r["commitLogOffset"] for r in queued
                if (r["topic"], r["queueId"]) == (topic, queue_id) and committed <= r["queueOffset"] < hi)
            oldest = by_phy[phys[0]]["storeTimestamp"] if phys else None
            row.update(lagMessages=hi - committed, lagBytes=sum(by_phy[p]["storeSize"] for p in phys),
                       oldestStoreTimestamp=oldest, lagMs=0 if hi == committed else end - oldest)
            rows.append(row)
    return end, rows


def consumer_progress(oracle: dict[str, Any]) -> list[tuple[str, str, int, int]]:
    """(group, topic, queueId, brokerOffset - consumerOffset) of every queue `examineConsumeStats` reports:
    mqadmin consumerProgress's diff."""
    return sorted((group, q["topic"], q["queueId"], q["brokerOffset"] - q["consumerOffset"])
                  for group, stats in oracle["consumeStats"].items() for q in stats["queues"])


def retained_store(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A copy of `RETAINED` without its first commit-log segment, and its oracle: the records and queue
    units of that segment gone, as after the broker's retention (`deleteExpiredFile`, then the queues' min
    offsets)."""
    root = tmp_path / "retained"
    shutil.copytree(store_dir(RETAINED), root)
    first = sorted((root / "commitlog").iterdir())[0]
    gone = first.stat().st_size
    first.unlink()
    oracle = json.loads(json.dumps(ORACLES[RETAINED]))
    oracle["records"] = [r for r in oracle["records"] if r["commitLogOffset"] >= gone]
    for q in oracle["queues"]:
        left = [r["queueOffset"] for r in oracle["records"]
                if (r["topic"], r["queueId"]) == (q["topic"], q["queueId"])]
        q["minOffset"] = min(left, default=q["maxOffset"])
    return root, oracle


@pytest.mark.parametrize("name", MAIN)
def test_lag_is_what_rocketmq_stored(name: str) -> None:
    with open_store(name) as store:
        report = consumer_lag(store)
    end, rows = expected_lag(ORACLES[name])
    assert report.log_end_time == end
    assert [q.to_json() for q in report.queues] == rows


@pytest.mark.parametrize("name", LIFE)
def test_lag_is_rocketmqs_consumer_progress(name: str) -> None:
    """Per (group, topic, queue) of the groups the broker served: rmqstore's lag is consumerProgress's diff
    (a queue held by a blocked listener, retry topics, the transaction topic included)."""
    expected = consumer_progress(ORACLES[name])
    groups = {group for group, *_ in expected}
    with open_store(name) as store:
        report = consumer_lag(store)
    got = sorted((q.group, q.topic, q.queue_id, q.messages) for q in report.queues if q.group in groups)
    assert got == expected and any(lag > 0 for *_, lag in expected)


def test_lag_of_retained_away_offsets(tmp_path: Path) -> None:
    root, oracle = retained_store(tmp_path)
    with Store.open(root) as store:
        report = consumer_lag(store)
    end, rows = expected_lag(oracle)
    assert "retained-away" in {r["state"] for r in rows}
    assert (report.log_end_time, [q.to_json() for q in report.queues]) == (end, rows)


def test_lag_command_and_info(capsys: pytest.CaptureFixture[str]) -> None:
    """`rmqstore lag` filters by group and topic; unknown lags read "unknown", in `info` too, never 0."""
    path = str(store_dir("rmq-5.3.1-crc"))
    assert cli_main(["lag", path, "--group", "group-a", "--topic", "TopicTest", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    end, rows = expected_lag(ORACLES["rmq-5.3.1-crc"])
    assert doc == {"logEndTimestamp": end,
                   "queues": [r for r in rows if (r["group"], r["topic"]) == ("group-a", "TopicTest")]}
    assert cli_main(["lag", path]) == 0
    text = capsys.readouterr().out
    assert "offset-past-end" in text and "unknown" in text
    assert cli_main(["info", path, "--json"]) == 0
    groups = {(g["topic"], g["group"]): (g["lag"], g["unknown"]) for g in json.loads(capsys.readouterr().out)
              ["consumerGroups"]}
    assert groups == {("%RETRY%group-a", "group-a"): (0, 0), ("HotTopic", "group-b"): (None, 2),
                      ("TopicTest", "group-a"): (None, 3)}
    assert cli_main(["lag", path, "--group", "no-such-group"]) == 2
    assert "no-such-group" in capsys.readouterr().err
    assert cli_main(["lag", path, "--group", "group-b", "--topic", "TopicTest"]) == 2
    assert "topic 'TopicTest' has no committed offsets of group 'group-b'" in capsys.readouterr().err


AGES = [(None, ""), (0, "0s"), (1554, "1.554s"), (-3_600_500, "-1h 0m 0.5s"), (172_861_000, "2d 0h 1m 1s")]


@pytest.mark.parametrize(("ms", "text"), AGES)
def test_lag_in_time_reads_for_people(ms: int | None, text: str) -> None:
    assert format_age(ms) == text


def _frame_rows(end: int | None, rows: list[dict[str, Any]]) -> list[tuple]:
    def time(ms: int | None) -> datetime | None:
        return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)

    return [(*{**r, "oldestStoreTimestamp": time(r["oldestStoreTimestamp"])}.values(), time(end))
            for r in rows]


@pytest.mark.spark
@pytest.mark.parametrize("name", LIFE)
def test_lag_frame_of_both_engines_is_rocketmqs_consumer_progress(spark: SparkSession, engine: str,
                                                                  name: str) -> None:
    expected = consumer_progress(ORACLES[name])
    groups = sorted({group for group, *_ in expected})
    frame = lag(spark, str(store_dir(name)), engine=engine).where(col("group").isin(groups))
    schema = "group string, topic string, queueId int, lagMessages long"
    assert_df_equality(frame.select("group", "topic", "queueId", "lagMessages"),
                       spark.createDataFrame(expected, schema), ignore_row_order=True, ignore_nullable=True)


@pytest.mark.spark
@pytest.mark.parametrize("name", ["rmq-5.5.0-broker", "rmq-5.3.1-crc", "rmq-5.4.0-batchcq",
                                  "rmq-5.4.0-dledger", "rmq-5.3.3-rdb", "retained"])
def test_lag_frame_of_both_engines_is_rocketmq_lag(spark: SparkSession, engine: str, tmp_path: Path,
                                                   name: str) -> None:
    root, oracle = retained_store(tmp_path) if name == "retained" else (store_dir(name), ORACLES[name])
    expected = spark.createDataFrame(_frame_rows(*expected_lag(oracle)), LAG_SCHEMA)
    assert_df_equality(lag(spark, str(root), engine=engine), expected)
    group, topic = expected.first()["group"], expected.first()["topic"]
    assert_df_equality(lag(spark, str(root), group, topic, engine=engine),
                       expected.where(f"group = '{group}' AND topic = '{topic}'"))
    with pytest.raises(Exception, match="topic 'Typo' has no committed offsets"):
        lag(spark, str(root), topic="Typo", engine=engine)
