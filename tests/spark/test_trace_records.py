"""Message-trace records (docs/format.md §10) on both engines: the shared vectors decode to their rows, msgId
and key lookups read only the trace messages the index finds, malformed bodies fail naming their offset."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from helpers.spark_stores import explain_text, read_stats
from rmqstore import Store
from rmqstore.format import contract_trace as ct
from rmqstore.format.trace import decode_body
from rmqstore.spark import trace_records
from rmqstore.spark.trace import read_options
from rmqstore.writer import MessageSpec, StoreWriter
from rmqstore.writer.trace import trace_keys, trace_message, trace_record

VECTORS = json.loads((Path(__file__).parent.parent / "vectors" / "trace_vectors.json").read_text())
FILLERS = 24
"""Trace messages of other messages, which a lookup must not read."""
VALID = {"traceType": "Recall", "timestamp": 1700000009000, "regionId": "R", "groupName": "G", "topic": "T",
         "msgId": "VALID", "success": True}
"""The record before the malformed one in each bad trace message."""


def _filler(i: int) -> dict:
    return {"traceType": "Pub", "timestamp": 1700000100000 + i, "regionId": "R", "groupName": "PID_f",
            "topic": "TopicF", "msgId": f"F{i:04d}", "tags": "t", "key": f"fk{i}", "keys": [f"fk{i}"],
            "storeHost": "127.0.0.1:10911", "bodyLength": i, "costTime": 1, "msgType": "Normal_Msg",
            "offsetMsgId": f"O{i:04d}", "success": True}


@pytest.fixture(scope="module")
def trace_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list, list[int]]:
    """(store, [(record, its message's commitLogOffset, its index in the body)], the bad messages' offsets):
    the vectors' bodies and fillers in RMQ_SYS_TRACE_TOPIC, each malformed vector after a valid record in
    topic BAD<i>, ordinary messages in TopicOrders."""
    path = tmp_path_factory.mktemp("trace") / "store"
    placed, bad = [], []
    with StoreWriter(path, segment_size=16 * 1024, cq_segment_size=20 * 64, index_hash_slots=64,
                     index_entries=400, seed=5) as writer:
        for i in range(FILLERS):
            at = writer.append(trace_message([_filler(i)])).physical_offset
            placed.append((_filler(i), at, 0))
            writer.append(MessageSpec(topic="TopicOrders", body=b"order", keys=f"fk{i}"))
        for vector in VECTORS["vectors"]:
            spec = MessageSpec(topic=ct.DEFAULT_TOPIC, body=vector["body"].encode(),
                               keys=trace_keys(vector["records"]))
            at = writer.append(spec).physical_offset
            placed += [(record, at, n) for n, record in enumerate(vector["records"])]
        for i, vector in enumerate(VECTORS["malformed"]):
            body = (trace_record(VALID) + vector["body"]).encode()
            bad.append(writer.append(MessageSpec(topic=f"BAD{i}", body=body)).physical_offset)
    return path, placed, bad


def _expected(spark: SparkSession, path: Path, rows: list[tuple[dict, int, int]], topic: str) -> DataFrame:
    def row(record: dict, at: int, n: int) -> list:
        values = {**record, "broker": str(path), "traceTopic": topic, "commitLogOffset": at, "recordIndex": n}
        if "timestamp" in record:
            values["timestamp"] = datetime.datetime.fromtimestamp(record["timestamp"] / 1000, datetime.UTC)
        return [values.get(name) for name in ct.OUTPUT]

    return spark.createDataFrame([row(*r) for r in rows], ct.SCHEMA)


def test_every_vector_decodes_to_its_rows(spark: SparkSession, engine: str, trace_store) -> None:
    path, placed, _ = trace_store
    got = trace_records(spark, str(path), engine=engine)
    assert_df_equality(got, _expected(spark, path, placed, ct.DEFAULT_TOPIC), ignore_row_order=True)


def test_msg_id_lookup_reads_only_the_candidates(spark: SparkSession, engine: str, engine_format: str,
                                                trace_store, tmp_path: Path) -> None:
    path, placed, _ = trace_store
    msg_id = "0A0000011F4A18B4AAC2600000000000"
    got = trace_records(spark, str(path), msg_id=msg_id, engine=engine, statsDir=str(tmp_path))
    matching = [r for r in placed if msg_id in (r[0].get("msgId"), r[0].get("offsetMsgId"))]
    assert {r[0]["traceType"] for r in matching} == {"Pub", "SubBefore", "SubAfter"}
    assert_df_equality(got, _expected(spark, path, matching, ct.DEFAULT_TOPIC), ignore_row_order=True)
    (plan,) = [r for r in read_stats(tmp_path) if r["event"] == "plan"]
    assert plan["access"] == ["key-index"]
    decoded = sum(r["records_decoded"] for r in read_stats(tmp_path) if r["event"] == "read")
    candidates = len({at for _, at, _ in matching})
    assert candidates <= decoded <= 2 * candidates < FILLERS
    if engine == "jvm":  # the Python engine's scan node shows no options (Spark's PythonScan)
        table = spark.read.format(engine_format).options(**read_options({}, msg_id, None)).load(str(path))
        assert f"KeysProbe: [{msg_id}]" in explain_text(table)


def test_key_lookup_keeps_the_records_with_that_key(spark: SparkSession, engine: str, trace_store) -> None:
    path, placed, _ = trace_store
    got = trace_records(spark, str(path), key="order-2", engine=engine)
    matching = [r for r in placed if "order-2" in r[0].get("keys", [])]
    assert len(matching) == 5
    assert_df_equality(got, _expected(spark, path, matching, ct.DEFAULT_TOPIC), ignore_row_order=True)


def test_each_malformed_body_has_its_problem(spark: SparkSession, engine: str, engine_format: str,
                                             trace_store) -> None:
    """The contract's stages name every malformed vector's cause (one query for all of them)."""
    path, _, bad = trace_store
    topics = ",".join(f"BAD{n}" for n in range(len(bad)))
    table = spark.read.format(engine_format).option("topics", topics).load(str(path))
    for stage in ct.STAGES:
        table = table.selectExpr(*stage)
    got = {(r.commitLogOffset, r.recordIndex): r.problem for r in table.select(
        "commitLogOffset", "recordIndex", "problem").collect()}
    problems = [v["problem"] for v in VECTORS["malformed"]]
    assert got == {(at, 0): None for at in bad} | {(at, 1): p for at, p in zip(bad, problems, strict=True)}


def test_malformed_body_fails_naming_its_offset(spark: SparkSession, engine: str, trace_store) -> None:
    path, _, bad = trace_store
    problem = VECTORS["malformed"][0]["problem"]
    cause = f"trace message at commitLogOffset {bad[0]} .* record 1: {re.escape(problem)}"
    with pytest.raises(Exception, match=cause):
        trace_records(spark, str(path), engine=engine, topics="BAD0").collect()


def test_permissive_drops_the_malformed_records(spark: SparkSession, engine: str, trace_store) -> None:
    path, _, bad = trace_store
    topics = ",".join(f"BAD{n}" for n in range(len(bad)))
    got = trace_records(spark, str(path), engine=engine, topics=topics, mode="PERMISSIVE")
    expected = _expected(spark, path, [(VALID, at, 0) for at in bad], "BAD0").drop("traceTopic")
    assert_df_equality(got.drop("traceTopic"), expected, ignore_row_order=True)


def test_python_decoder_gives_the_sql_rows(spark: SparkSession, engine: str, engine_format: str,
                                           trace_store) -> None:
    """`rmqstore.format.trace` (the CLI's decoder) and the contract's SQL agree on every record of every
    vector and malformed body, problem included."""
    path, _, bad = trace_store
    topics = ",".join([ct.DEFAULT_TOPIC, *(f"BAD{n}" for n in range(len(bad)))])
    table = spark.read.format(engine_format).option("topics", topics).load(str(path))
    for stage in ct.STAGES:
        table = table.selectExpr(*stage)
    columns = [*ct.OUTPUT, "problem"]
    selected = [F.unix_millis(c).alias(c) if c == "timestamp" else c for c in columns]
    got = {(r.commitLogOffset, r.recordIndex): tuple(r) for r in table.select(*selected).collect()}
    with Store.open(path) as store:
        messages = pa.Table.from_batches(store.scan(columns=["topic", "commitLogOffset", "body"])).to_pylist()
    expected = {}
    for m in (m for m in messages if m["topic"] in topics.split(",")):
        for row in decode_body(m["body"]):
            row |= {"broker": str(path), "traceTopic": m["topic"], "commitLogOffset": m["commitLogOffset"]}
            expected[(row["commitLogOffset"], row["recordIndex"])] = tuple(row[c] for c in columns)
    assert got == expected
    assert {row[-1] for row in expected.values()} >= {v["problem"] for v in VECTORS["malformed"]}
