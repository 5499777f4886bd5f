"""A micro-batch's partitions are its plan (`rmqstore.plan.stream`): offsets JSON in, one partition per
planned task out, each reading exactly its records (the reader's calls, without a Spark query)."""

from __future__ import annotations

import pytest

from rmqstore.plan.tasks import QueueSlice, QueueSliceTask, RangeTask
from rmqstore.spark.schema import table_schema
from rmqstore.spark.stream import StoreStreamReader
from rmqstore.store import Store
from rmqstore.writer import MessageSpec, StoreWriter

SEGMENT = 4096


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[dict]]:
    """Records of one size in A/0, A/1, B/0, B/1 in turn; (path, rows of a scan)."""
    path = tmp_path_factory.mktemp("stream-partitions") / "store"
    with StoreWriter(path, segment_size=SEGMENT, cq_segment_size=20 * 16, index_hash_slots=16,
                     index_entries=256, seed=5) as writer:
        for topic in ("A", "B"):
            writer.declare_topic(topic, 2)
        for i in range(120):
            writer.append(MessageSpec(topic="AB"[i // 2 % 2], queue_id=i % 2, body=b"x" * 40))
    with Store.open(str(path)) as opened:
        rows = [r for b in opened.scan(columns=["commitLogOffset", "topic", "queueId", "queueOffset",
                                                "storeSize"]) for r in b.to_pylist()]
    return str(path), rows


def _read(reader: StoreStreamReader, parts) -> list[int]:
    return [o for part in parts for batch in reader.read(part)
            for o in batch.column("commitLogOffset").to_pylist()]


def test_log_mode_partitions_are_the_planned_ranges(store) -> None:
    path, rows = store
    reader = StoreStreamReader({"path": path, "maxBytesPerPartition": "1500"}, table_schema())
    parts = reader.partitions({path: {"commitLogOffset": 1000}}, {path: {"commitLogOffset": 9000}})
    assert [p.task for p in parts] == [
        RangeTask(0, 1000, 2032), RangeTask(0, 2032, 3064), RangeTask(0, 3064, 4096),  # segment 0 in 3
        RangeTask(0, 4096, 5461), RangeTask(0, 5461, 6826), RangeTask(0, 6826, 8192),  # segment 1 in 3
        RangeTask(0, 8192, 9000)]
    assert {(p.broker, p.location, p.log_end) for p in parts} == {(path, path, 9000)}
    assert _read(reader, parts) == [r["commitLogOffset"] for r in rows if 1000 <= r["commitLogOffset"] < 9000]
    assert reader.partitions({path: {"commitLogOffset": 9000}}, {path: {"commitLogOffset": 9000}}) == []


def test_queue_mode_partitions_are_the_planned_windows(store) -> None:
    """A queue missing from the start offset is new: it starts at its earliest offset (Kafka's rule)."""
    path, rows = store
    size = rows[0]["storeSize"]
    reader = StoreStreamReader({"path": path, "topics": "A,B", "maxBytesPerPartition": str(4 * size)},
                               table_schema())
    start = {path: {"queueOffsets": {"A": {"0": 1, "1": 5}}}}
    end = {path: {"queueOffsets": {"A": {"0": 3, "1": 5}, "B": {"0": 4, "1": 2}}}}
    parts = reader.partitions(start, end)
    assert [p.task for p in parts] == [
        QueueSliceTask(0, (QueueSlice("A", 0, 1, 3),), None, None, None),
        QueueSliceTask(0, (QueueSlice("B", 0, 0, 4),), None, None, None),
        QueueSliceTask(0, (QueueSlice("B", 1, 0, 2),), None, None, None)]
    log_end = rows[-1]["commitLogOffset"] + size
    assert {p.log_end for p in parts} == {log_end}
    want = {("A", 0, 1), ("A", 0, 2), *(("B", 0, q) for q in range(4)), ("B", 1, 0), ("B", 1, 1)}
    assert sorted(_read(reader, parts)) == sorted(
        r["commitLogOffset"] for r in rows if (r["topic"], r["queueId"], r["queueOffset"]) in want)
