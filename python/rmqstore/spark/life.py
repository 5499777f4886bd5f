"""A message's life as a DataFrame (§3.4): `message_life(spark, paths, key=..., uniq_key=..., msg_id=...)`.

The copies come from Spark reads of the stores with pushdown (the `keys` option, `uniqKey` / `msgId`
filters, the op-half topic's queue), and so are the trace records of its UNIQ_KEYs (`trace_records`, §10),
so either engine serves them (`engine`); the driver then applies
`rmqstore.plan.life`'s rule, with each broker's log bounds and committed offsets read from its store, and
returns the same events as `rmqstore trace --json`.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType

from rmqstore.plan.life import (
    COPY_COLUMNS,
    EVENT_COLUMNS,
    OP_TOPIC,
    Copy,
    Event,
    about,
    collect_copies,
    life_events,
    traced_ids,
)
from rmqstore.plan.life_store import broker_state, index_past_end
from rmqstore.spark.engine import ENGINES
from rmqstore.spark.jar import PROVIDER_CLASS
from rmqstore.spark.options import RmqOptions, parse_options
from rmqstore.spark.stores import open_store
from rmqstore.spark.trace import trace_records

_TYPES = {"time": TimestampType(), "queueId": IntegerType(), "reconsumeTimes": IntegerType(),
          "queueOffset": LongType(), "commitLogOffset": LongType()}
LIFE_SCHEMA = StructType([StructField(name, _TYPES.get(name, StringType())) for name in EVENT_COLUMNS])
"""The message_life DataFrame's columns: `Event.to_json`'s, `time` a timestamp."""
_FORMATS = {"auto": "rmqstore", "jvm": PROVIDER_CLASS, "python": "rmqstore_python"}


class SparkLookup:
    """`CopyLookup` through Spark reads of the stores (`options` as given to `message_life`)."""

    def __init__(self, spark: SparkSession, fmt: str, options: dict[str, str], parsed: RmqOptions) -> None:
        self.spark, self.fmt, self.options, self.parsed = spark, fmt, options, parsed

    def _read(self, condition: Column | None, columns: Sequence[str] = COPY_COLUMNS,
              **options: str) -> list[Copy]:
        """One fresh read (never a reused DataFrame: README "Pushdown") of the copies `condition` selects."""
        df = self.spark.read.format(self.fmt).options(**self.options, **options).load()
        if condition is not None:
            df = df.filter(condition)
        selected = [F.unix_millis(c).alias(c) if c == "storeTimestamp" else F.col(c) for c in columns]
        return [Copy.from_row(row["broker"], {**row.asDict(), "body": _bytes(row.asDict().get("body"))})
                for row in df.select(*selected, "broker").collect()]

    def find(self, column: str, values: Sequence[str]) -> list[Copy]:
        if column == "keys":
            return self._read(None, keys=json.dumps(list(values)))
        return self._read(F.col(column).isin(list(values)))

    def op_records(self, queues: Sequence[tuple[str, int]]) -> list[Copy]:
        condition = functools.reduce(operator.or_, [(F.col("broker") == b) & (F.col("queueId") == q)
                                                    for b, q in queues])
        return self._read(condition, (*COPY_COLUMNS, "body"), topics=OP_TOPIC)

    def past_end(self, column: str, values: Sequence[str]) -> list[tuple[str, str, int]]:
        found = []
        for broker, path in zip(self.parsed.broker_names, self.parsed.paths, strict=True):
            with open_store(self.parsed, path) as store:
                found += [(v, broker, offset) for v in values for offset in index_past_end(store, column, v)]
        return found


def _bytes(value: bytearray | bytes | None) -> bytes | None:
    return None if value is None else bytes(value)


def message_life(spark: SparkSession, paths: str | Sequence[str], key: str | None = None,
                 uniq_key: str | None = None, msg_id: str | None = None, *, engine: str = "auto",
                 **options: str) -> DataFrame:
    """Every stored copy of the message with KEYS token `key`, UNIQ_KEY `uniq_key` or offsetMsgId `msg_id`
    (exactly one) on the brokers' stores `paths`, labelled, with the trace records of its UNIQ_KEYs
    (`trace_records`, §10), then each consumer group's state (§3.4); one row per
    `rmqstore.plan.life.Event`. `engine`: "jvm", "python", or "auto" (the session's `rmqstore`);
    `options`: read options (`brokerNames`, s3.*, ...)."""
    if engine not in ENGINES:
        raise ValueError(f"rmqstore: engine {engine!r} is not one of {', '.join(ENGINES)}")
    asked = [(c, v) for c, v in (("keys", key), ("uniqKey", uniq_key), ("msgId", msg_id)) if v is not None]
    if len(asked) != 1:
        raise ValueError("rmqstore: message_life needs exactly one of key, uniq_key, msg_id")
    listed = [paths] if isinstance(paths, str) else list(paths)
    raw = {**options, "paths": json.dumps(listed)}
    parsed = parse_options(raw)
    found = collect_copies(SparkLookup(spark, _FORMATS[engine], raw, parsed), *asked[0])
    rows = [row.asDict() for uniq in traced_ids(found) for row in trace_records(
        spark, listed, msg_id=uniq, engine=engine, **options).withColumn(
        "timestamp", F.unix_millis("timestamp")).collect()]
    states = []
    for broker, path in zip(parsed.broker_names, parsed.paths, strict=True):
        with open_store(parsed, path) as store:
            states.append(broker_state(broker, store))
    return events_frame(spark, life_events(found, states, about(found, rows)))


def events_frame(spark: SparkSession, events: Sequence[Event]) -> DataFrame:
    """`events` as a DataFrame of `LIFE_SCHEMA`, in their order."""
    millis = StructType([StructField("time", LongType()), *LIFE_SCHEMA.fields[1:]])
    frame = spark.createDataFrame([tuple(e.to_json().values()) for e in events], millis)
    return frame.withColumn("time", F.timestamp_millis("time"))
