"""Trace records (docs/format.md §10) of the rmq-5.5.0-life fixture against RocketMQ's own decoding: its
oracle's `traceRecords` are `TraceDataEncoder.decoderFromTraceDataString` of each trace message the 5.5.0
clients sent. A decoded TraceContext also holds defaults the body does not carry (a fresh requestId, the
local clientHost), so each record is compared on the columns of the variant 5.5.0 writes for its type."""

from __future__ import annotations

import datetime
import json

from oracle import ORACLES, store_dir
from pyspark.sql import Row, SparkSession

from rmqstore.format import contract_trace as ct
from rmqstore.spark import trace_records

FIXTURE = "rmq-5.5.0-life"
WRITTEN = {t: [c for c in at if c] for t, at, _, current in ct.VARIANTS if current}
"""Type -> the columns a 5.5.0 client's record of that type carries."""
CONTEXT = {"traceType", "timestamp", "regionId", "groupName", "costTime", "success", "requestId",
           "contextCode"}
"""Columns that are TraceContext fields; the rest are fields of its TraceBean."""
ORACLE_NAMES = {"timestamp": "timeStamp", "key": "keys"}


def _oracle(record: dict) -> tuple[int, str]:
    bean = record["traceBeans"][0]
    columns = WRITTEN[record["traceType"]]
    values = {c: (record if c in CONTEXT else bean)[ORACLE_NAMES.get(c, c)] for c in columns}
    return record["commitLogOffset"], json.dumps(values, sort_keys=True)


def _row(row: Row) -> tuple[int, str]:
    values = {c: row[c] for c in WRITTEN[row.traceType]}
    stamp = values["timestamp"].replace(tzinfo=datetime.UTC)  # the session's time zone is UTC
    values["timestamp"] = round(stamp.timestamp() * 1000)
    return row.commitLogOffset, json.dumps(values, sort_keys=True)


def test_trace_records_are_rocketmqs(spark: SparkSession, engine: str) -> None:
    expected = sorted(_oracle(r) for r in ORACLES[FIXTURE]["traceRecords"])
    got = sorted(_row(r) for r in trace_records(spark, str(store_dir(FIXTURE)), engine=engine).collect())
    assert len(expected) == 112
    assert got == expected
