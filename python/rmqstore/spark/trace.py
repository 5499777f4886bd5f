"""Message-trace records as a DataFrame (docs/format.md §10): `trace_records(spark, paths, msg_id, key)`.

The trace topics' messages are read as rows of the rmqstore table and their bodies decoded by the Spark SQL
that .ci/contract.py builds from docs/contract.toml (`rmqstore.format.contract_trace`), the same text the
JVM engine runs (`io.rmqstore.spark.RmqTraceRecords`): one decoder, one schema, both engines.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rmqstore.format import contract_trace as ct
from rmqstore.spark.compat import require_python_engine
from rmqstore.spark.contract_options import KEYS, PATHS, TOPICS
from rmqstore.spark.engine import ENGINES, has_connector
from rmqstore.spark.options import parse_options


def trace_records(spark: SparkSession, path_or_paths: str | Sequence[str], msg_id: str | None = None,
                  key: str | None = None, *, engine: str = "auto", **options: str) -> DataFrame:
    """One row per trace record of the stores' trace messages (topic RMQ_SYS_TRACE_TOPIC unless the
    `topics` option names the trace topics). `msg_id` / `key` read only the trace messages the index finds
    by that KEYS token and keep the records whose msgId or offsetMsgId / keys hold it. `mode` FAILFAST fails
    on a body that is no trace body, naming its commitLogOffset; PERMISSIVE drops its bad records.
    `engine`: "jvm", "python" or "auto" (the JVM engine when the session has the connector); `options`:
    the read options of the rmqstore table."""
    if engine not in ENGINES:
        raise ValueError(f"rmqstore: engine {engine!r} is not one of {', '.join(ENGINES)}")
    paths = [path_or_paths] if isinstance(path_or_paths, str) else list(path_or_paths)
    if engine == "jvm" or (engine == "auto" and has_connector(spark)):
        return _jvm_trace_records(spark, paths, msg_id, key, options)
    require_python_engine()
    from rmqstore.spark.source import RmqStorePythonDataSource

    spark.dataSource.register(RmqStorePythonDataSource)
    read = read_options(options, msg_id, key)
    mode = parse_options({**read, PATHS: json.dumps(paths)}, require_path=False).mode  # brokerNames: per path
    table = spark.read.format(RmqStorePythonDataSource.name()).options(**read).load(paths)
    return decode(table, mode, msg_id, key)


def read_options(options: Mapping[str, str], msg_id: str | None, key: str | None) -> dict[str, str]:
    """The rmqstore table's options reading the trace messages: the trace topics, and the KEYS token probe
    (`keys`, as a JSON list: a key may hold a comma) of `msg_id`, else of `key`."""
    read = {TOPICS: ct.DEFAULT_TOPIC, **options}
    probe = msg_id if msg_id is not None else key
    return read if probe is None else {**read, KEYS: json.dumps([probe])}


def decode(table: DataFrame, mode: str, msg_id: str | None, key: str | None) -> DataFrame:
    """The trace records of `table`'s rows: the contract's stages, its check for `mode`, the lookups."""
    for stage in ct.STAGES:
        table = table.selectExpr(*stage)
    check = ct.FAILFAST_CHECK if mode == "FAILFAST" else ct.PERMISSIVE_CHECK
    records = table.where(check).select(*ct.OUTPUT)
    if msg_id is not None:
        records = records.where((F.col("msgId") == msg_id) | (F.col("offsetMsgId") == msg_id))
    if key is not None:
        records = records.where(F.array_contains("keys", key))
    return records


def _jvm_trace_records(spark: SparkSession, paths: list[str], msg_id: str | None, key: str | None,
                       options: Mapping[str, str]) -> DataFrame:
    from py4j.java_collections import ListConverter, MapConverter

    client = spark.sparkContext._gateway._gateway_client
    frame = spark._jvm.io.rmqstore.spark.RmqTraceRecords.frame(
        spark._jsparkSession, ListConverter().convert(paths, client), msg_id, key,
        MapConverter().convert(dict(options), client))
    return DataFrame(frame, spark)

