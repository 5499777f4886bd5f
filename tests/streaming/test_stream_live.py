"""Tail a store while a separate process appends to it in pieces; stop and restart from the checkpoint.

At the end the parquet sink must hold every message the appender finished, exactly once, byte for
byte, none torn, each queue in order across micro-batches.
"""

from __future__ import annotations

import time
from collections import defaultdict

from stream_helpers import sink_batches, sink_rows, wait_for

SEGMENT_SIZE = 4096
"""About ten records per segment: the run rolls over dozens of segments."""


def start_query(spark, fmt, store, sink, checkpoint):
    return (spark.readStream.format(fmt).load(str(store))
            .writeStream.format("parquet").option("path", str(sink))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="300 milliseconds").start())


def test_tail_live_store_across_restart_exactly_once(spark, engine_format, tmp_path, appender):
    store, sink, checkpoint = tmp_path / "store", tmp_path / "sink", tmp_path / "checkpoint"
    writer = appender(store, tmp_path / "manifest.jsonl", messages=400, segment_size=SEGMENT_SIZE,
                      sleep=0.015, torn_tail=True)
    wait_for(lambda: len(writer.written()) >= 5, 30, "the appender's first messages")

    query = start_query(spark, engine_format, store, sink, checkpoint)
    wait_for(lambda: sum(p["numInputRows"] for p in query.recentProgress) >= 40, 90, "the first rows")
    query.stop()  # mid-way: the appender keeps writing while no query runs
    rows_before_restart = len(sink_rows(sink))
    time.sleep(1)

    query = start_query(spark, engine_format, store, sink, checkpoint)
    writer.wait()
    expected = writer.written()
    wait_for(lambda: len(sink_rows(sink)) >= len(expected), 90, "every message")
    query.processAllAvailable()
    query.stop()

    assert 0 < rows_before_restart < len(expected), "the restart must happen mid-way"
    assert len({e["commitLogOffset"] // SEGMENT_SIZE for e in expected}) > 20, "segments must roll over"
    rows = sink_rows(sink)
    got = sorted((r["topic"], r["queueId"], r["queueOffset"], r["commitLogOffset"], r["storeSize"],
                  r["uniqKey"], r["body"].hex()) for r in rows)
    want = sorted((e["topic"], e["queueId"], e["queueOffset"], e["commitLogOffset"], e["storeSize"],
                   e["uniqKey"], e["body"]) for e in expected)
    assert got == want  # every finished message once; the torn last one (no unit, abort present) absent
    assert all(dict(r["properties"])["WAIT"] == "true" for r in rows), "no record with torn properties"

    # Order per queue: in log order inside every file, and each batch continues where the last ended.
    batches = sink_batches(sink)
    next_offset: dict[tuple[str, int], int] = defaultdict(int)
    for batch_id in sorted(batches):
        in_batch: dict[tuple[str, int], list[int]] = defaultdict(list)
        for file_rows in batches[batch_id]:
            per_file: dict[tuple[str, int], list[int]] = defaultdict(list)
            for row in file_rows:
                per_file[(row["topic"], row["queueId"])].append(row["queueOffset"])
            for queue, offsets in per_file.items():
                assert offsets == sorted(offsets), (batch_id, queue)
                in_batch[queue].extend(offsets)
        for queue, offsets in in_batch.items():
            assert sorted(offsets) == list(range(next_offset[queue], next_offset[queue] + len(offsets))), \
                (batch_id, queue)
            next_offset[queue] += len(offsets)
