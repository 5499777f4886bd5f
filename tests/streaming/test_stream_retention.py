"""Retention deletes segments a query still needs: failOnDataLoss=true fails clearly, false skips the gap."""

from __future__ import annotations

import pytest
from pyspark.errors import StreamingQueryException
from stream_helpers import sink_rows, write_store

from helpers.live_broker import LiveBroker

SEGMENT_SIZE = 2048


def run(spark, fmt, store, sink, checkpoint, **options):
    reader = spark.readStream.format(fmt)
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (reader.load(str(store)).writeStream.format("parquet").option("path", str(sink))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination(120)


@pytest.mark.parametrize("topics", [None, "TopicA,TopicB"], ids=["log-mode", "queue-mode"])
def test_deleted_segments_fail_or_skip(spark, engine_format, tmp_path, topics):
    store = tmp_path / "store"
    broker = LiveBroker(store, SEGMENT_SIZE, piece_sleep=0)
    first = write_store(store, 20, broker=broker, close=False)
    extra = {"topics": topics} if topics else {}
    for name in ("fail", "skip"):
        run(spark, engine_format, store, tmp_path / name, tmp_path / f"ck-{name}", **extra)
        assert len(sink_rows(tmp_path / name)) == 20

    later = write_store(store, 40, first=20, broker=broker)
    cut = later[20]["commitLogOffset"] - later[20]["commitLogOffset"] % SEGMENT_SIZE
    deleted = sorted(p for p in (store / "commitlog").iterdir() if int(p.name) < cut)
    for path in deleted:  # what the broker's retention does: oldest segments first
        path.unlink()
    lost = [e for e in later if e["commitLogOffset"] < cut]
    assert lost, "the deleted segments must hold messages the queries have not read"

    with pytest.raises(StreamingQueryException) as failure:
        run(spark, engine_format, store, tmp_path / "fail", tmp_path / "ck-fail", **extra)
    message = str(failure.value)
    assert "data loss" in message and "failOnDataLoss=false" in message
    if topics is None:
        lost_start = first[-1]["commitLogOffset"] + first[-1]["storeSize"]
        assert f"[{lost_start}, {cut})" in message
        assert f"{lost_start - lost_start % SEGMENT_SIZE:020d}" in message
    else:
        first_lost = [f"queue {e['topic']}/{e['queueId']} offsets [{e['queueOffset']}, " for e in lost]
        assert any(text in message for text in first_lost)
    assert len(sink_rows(tmp_path / "fail")) == 20, "nothing more may be written after the failure"

    run(spark, engine_format, store, tmp_path / "skip", tmp_path / "ck-skip", failOnDataLoss="false", **extra)
    got = sorted(r["commitLogOffset"] for r in sink_rows(tmp_path / "skip"))
    assert got == sorted(e["commitLogOffset"] for e in first + later if e not in lost)
