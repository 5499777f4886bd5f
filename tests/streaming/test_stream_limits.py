"""Read limits with Trigger.AvailableNow, queue mode, group / timestamp starts, and the lag report, on
both engines (`engine_format`)."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from stream_helpers import write_store

from helpers.live_broker import LiveBroker
from rmqstore.format.brokerconfig import encode_fastjson


def run_available_now(spark, fmt, store, checkpoint, **options):
    name = f"q_{uuid.uuid4().hex[:8]}"
    reader = spark.readStream.format(fmt)
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (reader.load(str(store)).writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination(120)
    rows = [row.asDict() for row in spark.sql(f"SELECT * FROM {name}").collect()]
    sizes = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    return rows, sizes, query.recentProgress


@pytest.fixture(scope="module")
def store_of_50(tmp_path_factory):
    root = tmp_path_factory.mktemp("limits") / "store"
    return root, write_store(root, 50)


def test_max_offsets_per_trigger(spark, engine, engine_format, store_of_50, tmp_path):
    store, written = store_of_50
    rows, sizes, progress = run_available_now(spark, engine_format, store, tmp_path / "ck",
                                              maxOffsetsPerTrigger="12")
    assert sizes == [12, 12, 12, 12, 2]
    assert sorted(r["commitLogOffset"] for r in rows) == [w["commitLogOffset"] for w in written]
    first = json.loads(progress[0]["sources"][0]["latestOffset"])[str(store)]
    log_end = written[-1]["commitLogOffset"] + written[-1]["storeSize"]
    assert first["commitLogOffset"] == log_end
    assert first["lag"] == {"messages": 38, "bytes": log_end - written[12]["commitLogOffset"]}
    if engine == "jvm":  # the Python API has no source metrics (4.3); the JVM engine has them too
        assert progress[0]["sources"][0]["metrics"] == {
            "messagesBehindLatest": "38", "bytesBehindLatest": str(first["lag"]["bytes"])}


def test_max_bytes_per_trigger(spark, engine_format, store_of_50, tmp_path):
    store, written = store_of_50
    limit = 1500
    expected, current, used = [], 0, 0
    for entry in written:  # greedy in log order, at least one record per batch
        if current and used + entry["storeSize"] > limit:
            expected.append(current)
            current, used = 0, 0
        current, used = current + 1, used + entry["storeSize"]
    expected.append(current)
    rows, sizes, _ = run_available_now(spark, engine_format, store, tmp_path / "ck",
                                       maxBytesPerTrigger=str(limit))
    assert len(expected) > 5
    assert sizes == expected
    assert len(rows) == 50


def test_queue_mode_limit_and_group_start(spark, engine_format, store_of_50, tmp_path):
    store, written = store_of_50
    committed = {0: 0, 1: 3, 2: 1, 3: 5}
    (store / "config" / "consumerOffset.json").write_text(
        encode_fastjson({"offsetTable": {"TopicA@billing": committed}}))
    rows, sizes, _ = run_available_now(spark, engine_format, store, tmp_path / "ck",
                                       startingOffsets="group:billing", maxOffsetsPerTrigger="4")
    want = sorted((w["queueId"], w["queueOffset"]) for w in written
                  if w["topic"] == "TopicA" and w["queueOffset"] >= committed[w["queueId"]])
    assert sorted((r["queueId"], r["queueOffset"]) for r in rows) == want
    assert {r["topic"] for r in rows} == {"TopicA"}
    assert all(size <= 4 for size in sizes) and sum(sizes) == len(want)


def test_starting_timestamp_and_topics(spark, engine_format, tmp_path):
    store = tmp_path / "store"
    broker = LiveBroker(store, 2048, piece_sleep=0)
    write_store(store, 10, broker=broker, close=False)
    time.sleep(0.05)
    cut = int(time.time() * 1000)
    time.sleep(0.05)
    late = write_store(store, 10, first=10, broker=broker)
    rows, _, _ = run_available_now(spark, engine_format, store, tmp_path / "ck1", startingTimestamp=str(cut))
    assert sorted(r["commitLogOffset"] for r in rows) == [w["commitLogOffset"] for w in late]
    rows, _, _ = run_available_now(spark, engine_format, store, tmp_path / "ck2", startingTimestamp=str(cut),
                                   topics="TopicB")
    assert sorted(r["commitLogOffset"] for r in rows) == [w["commitLogOffset"] for w in late
                                                          if w["topic"] == "TopicB"]


def test_user_schema_and_several_stores(spark, engine_format, store_of_50, tmp_path):
    store_a, written_a = store_of_50
    store_b = tmp_path / "store-b"
    written_b = write_store(store_b, 10, first=100)
    name = f"q_{uuid.uuid4().hex[:8]}"
    query = (spark.readStream.format(engine_format).schema("uniqKey string, broker string, queueOffset long")
             .option("maxOffsetsPerTrigger", "20")
             .option("paths", json.dumps([str(store_a), str(store_b)])).load()
             .writeStream.format("memory").queryName(name).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    frame = spark.sql(f"SELECT * FROM {name}")
    assert frame.columns == ["uniqKey", "broker", "queueOffset"]
    got = sorted((r.broker, r.uniqKey, r.queueOffset) for r in frame.collect())
    want = sorted([(str(store_a), w["uniqKey"], w["queueOffset"]) for w in written_a]
                  + [(str(store_b), w["uniqKey"], w["queueOffset"]) for w in written_b])
    assert got == want
    end = json.loads(query.lastProgress["sources"][0]["endOffset"])
    assert list(end) == [str(store_a), str(store_b)]
    # 20 per trigger over two stores: at most 10 from each.
    assert all(p["numInputRows"] <= 20 for p in query.recentProgress)


@pytest.mark.parametrize(("options", "message"), [
    ({"endingOffsets": "latest"}, "rmqstore option 'endingOffsets': is for batch reads only"),
    ({"startingOffsets": "0", "topics": "TopicA"},
     "rmqstore option 'startingOffsets': a physical commit-log offset cannot start a stream"),
    ({"startingOffsets": "group:nobody"}, "rmqstore option 'startingOffsets': consumer group 'nobody'"),
    ({"startingOffsets": "100"}, "rmqstore option 'startingOffsets': 100 is not the start of a record"),
], ids=["ending", "physical-queues", "unknown-group", "mid-record"])
def test_stream_option_errors(spark, engine_format, store_of_50, tmp_path, options, message):
    store, _ = store_of_50
    with pytest.raises(Exception) as failure:  # at start() or from the query thread, by engine
        run_available_now(spark, engine_format, store, tmp_path / "ck", **options)
    assert message in str(failure.value)
