"""Streaming benchmarks (`pytest -m bench tests/bench/test_bench_streaming.py -s`): numbers are printed.

1. Catch-up: a stream from earliest over a large store (Trigger.AvailableNow into the noop sink),
   against the batch source's full scan of the same store in the same run.
2. End-to-end delay under a steady writer: from the moment a message is complete on disk (the
   broker stand-in's clock) to the end of the micro-batch that put it into a memory sink.

Store size: RMQSTORE_BENCH_STREAM_BYTES (default 256 MiB). Nothing here asserts a time.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from rmqstore.writer.demo import create_demo_store

pytestmark = pytest.mark.bench

STORE_BYTES = int(os.environ.get("RMQSTORE_BENCH_STREAM_BYTES", str(256 << 20)))
LIVE_BROKER = Path(__file__).parents[1] / "helpers" / "live_broker.py"


@pytest.fixture(scope="module")
def spark():
    from rmqstore.spark import RmqStoreDataSource, session

    # The Python engine's stream (no connector jar): "rmqstore" is the Python source here.
    spark_session = session("local[2]", "rmqstore-streaming-bench", engine="python",
                            spark__ui__enabled="false", spark__sql__shuffle__partitions="2",
                            spark__sql__streaming__numRecentProgressUpdates="100000")
    spark_session.dataSource.register(RmqStoreDataSource)
    yield spark_session
    spark_session.stop()


def test_catch_up_throughput_vs_batch_scan(spark, tmp_path):
    store = str(tmp_path / "store")
    create_demo_store(store, target_bytes=STORE_BYTES, seed=11)
    rows = spark.read.format("rmqstore").load(store).count()  # also warms the Python workers

    started = time.perf_counter()
    spark.read.format("rmqstore").load(store).write.format("noop").mode("overwrite").save()
    batch_s = time.perf_counter() - started

    started = time.perf_counter()
    query = (spark.readStream.format("rmqstore").load(store).writeStream.format("noop")
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination()
    stream_s = time.perf_counter() - started
    streamed = sum(p["numInputRows"] for p in query.recentProgress)

    assert streamed == rows
    print(f"\ncatch-up over {STORE_BYTES / 2**20:.0f} MiB, {rows} messages: "
          f"stream {stream_s:.2f} s ({rows / stream_s:,.0f} msg/s), batch scan {batch_s:.2f} s "
          f"({rows / batch_s:,.0f} msg/s); stream/batch time ratio {stream_s / batch_s:.2f}")


def _batch_end_times(progress: list[dict]) -> list[tuple[float, int]]:
    """(wall time the batch finished, its end commit-log offset) for every batch that read rows."""
    ends = []
    for p in progress:
        if not p["numInputRows"]:
            continue
        begun = datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()
        end_offset = next(iter(json.loads(p["sources"][0]["endOffset"]).values()))["commitLogOffset"]
        ends.append((begun + p["durationMs"]["triggerExecution"] / 1000, end_offset))
    return ends


def test_end_to_end_delay_under_steady_writer(spark, tmp_path):
    store, manifest = tmp_path / "store", tmp_path / "manifest.jsonl"
    messages, pause = 900, 0.02  # about 40 messages/s, each written in pieces
    writer = subprocess.Popen([sys.executable, str(LIVE_BROKER), "--store", str(store), "--manifest",
                               str(manifest), "--messages", str(messages), "--segment-size", str(1 << 20),
                               "--sleep", str(pause)])
    while not manifest.exists():
        time.sleep(0.05)
    query = (spark.readStream.format("rmqstore").load(str(store)).select("uniqKey")
             .writeStream.format("memory").queryName("delay_bench")
             .option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="100 milliseconds").start())
    assert writer.wait(timeout=300) == 0
    written = [json.loads(line) for line in manifest.read_text().splitlines()]
    deadline = time.monotonic() + 60
    while spark.sql("SELECT count(*) FROM delay_bench").first()[0] < len(written):
        assert time.monotonic() < deadline, "the stream did not catch up"
        time.sleep(0.5)
    query.stop()

    ends = _batch_end_times(query.recentProgress)
    warm = ends[0][0] + 1.0  # the first batch starts the Python workers: not part of a steady state
    delays = []
    for entry in written:
        if entry["doneAt"] > warm:
            done = next(t for t, end in ends if end > entry["commitLogOffset"])
            delays.append(done - entry["doneAt"])
    delays.sort()
    busy = [p for p in query.recentProgress if p["numInputRows"]]
    phases = {key: statistics.median(p["durationMs"].get(key, 0) for p in busy)
              for key in ("latestOffset", "queryPlanning", "addBatch", "walCommit", "commitOffsets",
                          "triggerExecution")}
    print(f"\nend-to-end delay, {len(delays)} messages at ~{1 / pause:.0f}/s, trigger 100 ms: "
          f"median {statistics.median(delays) * 1000:.0f} ms, "
          f"p95 {delays[int(len(delays) * 0.95)] * 1000:.0f} ms, "
          f"max {delays[-1] * 1000:.0f} ms; median batch phases (ms): {phases}")
