"""Consumer lag as a DataFrame (design §10): `lag(spark, path, group=None, topic=None)`, one row per
(group, topic, queue), computed by the JVM engine (`io.rmqstore.spark.RmqLag`) or the Python one
(`rmqstore.plan.lag`) with the same rule and schema."""

from __future__ import annotations

import datetime
from collections.abc import Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType

from rmqstore.plan.lag import LAG_COLUMNS, consumer_lag
from rmqstore.spark.engine import ENGINES, has_connector
from rmqstore.spark.options import OptionError, parse_options
from rmqstore.spark.stores import open_store

_TYPES = {"queueId": IntegerType(), "group": StringType(), "topic": StringType(), "state": StringType(),
          "oldestStoreTimestamp": TimestampType(), "logEndTimestamp": TimestampType()}
LAG_SCHEMA = StructType([StructField(name, _TYPES.get(name, LongType()))
                         for name in (*LAG_COLUMNS, "logEndTimestamp")])
"""The lag DataFrame's columns (`RmqLag.Schema` on the JVM): `QueueLag.to_json`'s and the log end's time."""


def lag(spark: SparkSession, path: str, group: str | None = None, topic: str | None = None, *,
        engine: str = "auto", options: Mapping[str, str] | None = None) -> DataFrame:
    """Each (group, topic, queue)'s backlog in messages, bytes and time; unknown lags are a named `state`
    with null counts, never 0 (design §10). `engine`: "jvm", "python", or "auto" (the JVM engine when the
    session has the connector); `options`: the read options that open a store (s3.*, index geometry)."""
    if engine not in ENGINES:
        raise ValueError(f"rmqstore: engine {engine!r} is not one of {', '.join(ENGINES)}")
    raw = {**(options or {}), "path": path}
    parsed = parse_options(raw)
    if len(parsed.paths) != 1:
        raise OptionError("path", f"lag reads one store at a time, got {len(parsed.paths)}")
    if engine == "jvm" or (engine == "auto" and has_connector(spark)):
        return _jvm_lag(spark, raw, group, topic)
    with open_store(parsed, parsed.paths[0]) as store:
        report = consumer_lag(store, group, topic)
    end = _time(report.log_end_time)
    rows = [(*({**q.to_json(), "oldestStoreTimestamp": _time(q.oldest_store_time)}).values(), end)
            for q in report.queues]
    return spark.createDataFrame(rows, LAG_SCHEMA)


def _time(ms: int | None) -> datetime.datetime | None:
    return None if ms is None else datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)


def _jvm_lag(spark: SparkSession, options: Mapping[str, str], group: str | None,
             topic: str | None) -> DataFrame:
    from py4j.java_collections import MapConverter

    jvm = spark._jvm
    java_options = MapConverter().convert(dict(options), spark.sparkContext._gateway._gateway_client)
    frame = jvm.io.rmqstore.spark.RmqLag.frame(spark._jsparkSession, java_options, group, topic)
    return DataFrame(frame, spark)
