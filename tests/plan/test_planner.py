"""The planner without Spark: access paths, key tokens, fallbacks, confirmation."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from plan_helpers import run_plan, scan_rows

from rmqstore.plan.confirm import confirm
from rmqstore.plan.planner import ReadPlan
from rmqstore.plan.predicates import Compare, InSet, KeysContainAny, NotNull, Predicate
from rmqstore.plan.tasks import (
    KeyProbeTask,
    OffsetsTask,
    QueueSliceTask,
    RangeTask,
)
from rmqstore.store import Store
from rmqstore.store.ranges import merge_ranges, subtract_ranges
from rmqstore.writer import MessageSpec, StoreWriter

COLUMNS = ["commitLogOffset", "topic", "queueId", "queueOffset", "key", "keys", "tags", "uniqKey", "msgId",
           "storeTimestamp"]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("plan") / "store"
    rng = random.Random(3)
    with StoreWriter(path, segment_size=8 * 1024, cq_segment_size=20 * 32, index_hash_slots=32,
                     index_entries=100, seed=3) as writer:
        for topic in ("A", "B"):
            writer.declare_topic(topic, 2)
        for i in range(300):
            keys = ["x y", "x", "y", None, f"k{i % 7}", f"k{i % 7} k{i % 5}"][i % 6]
            writer.append(MessageSpec(topic=rng.choice("AB"), body=bytes(rng.randint(0, 80)), keys=keys,
                                      tags=rng.choice(["t1", "t2", None])))
            writer.advance_clock(700)
    return path


@pytest.fixture(scope="module")
def rows(store_path: Path) -> list[dict]:
    return scan_rows(store_path, COLUMNS)


def _run(store_path: Path, predicates: list[Predicate], **settings: int) -> tuple[list[int], ReadPlan]:
    return run_plan(store_path, predicates, COLUMNS, **settings)


def test_key_equality_compares_the_whole_keys_string(store_path: Path, rows: list[dict]) -> None:
    got, plan = _run(store_path, [Compare("key", "=", "x y")])
    assert got == sorted(r["commitLogOffset"] for r in rows if r["key"] == "x y")
    assert plan.access == ["key-index"]
    assert all(isinstance(t, OffsetsTask) for t in plan.tasks)
    single, _ = _run(store_path, [Compare("key", "=", "x")])
    assert single == sorted(r["commitLogOffset"] for r in rows if r["key"] == "x")
    assert set(got).isdisjoint(single)


def test_keys_contain_any_is_rocketmq_meaning(store_path: Path, rows: list[dict]) -> None:
    got, plan = _run(store_path, [KeysContainAny(("x",))])
    assert got == sorted(r["commitLogOffset"] for r in rows if "x" in (r["keys"] or []))
    assert plan.access == ["key-index"]


def test_many_keys_become_hash_partitioned_probe_tasks(store_path: Path, rows: list[dict]) -> None:
    keys = tuple(f"k{i}" for i in range(7)) + tuple(f"none{i}" for i in range(40))
    got, plan = _run(store_path, [InSet("key", keys)], key_probe_partition_threshold=10)
    assert got == sorted(r["commitLogOffset"] for r in rows if r["key"] in keys)
    assert len(plan.tasks) == 5
    assert all(isinstance(t, KeyProbeTask) for t in plan.tasks)
    assert sorted(v for t in plan.tasks for v in t.values) == sorted(keys)
    # a record with several keys in the list is still returned once (only by its owner task)
    both, _ = _run(store_path, [KeysContainAny(keys)], key_probe_partition_threshold=10)
    assert both == sorted(r["commitLogOffset"] for r in rows if set(keys) & set(r["keys"] or []))


def test_topic_queue_and_tags_use_consume_queues(store_path: Path, rows: list[dict]) -> None:
    preds: list[Predicate] = [Compare("topic", "=", "A"), Compare("queueId", "=", 1),
                              Compare("queueOffset", ">=", 10), InSet("tags", ("t1",))]
    got, plan = _run(store_path, preds)
    assert got == sorted(r["commitLogOffset"] for r in rows if r["topic"] == "A" and r["queueId"] == 1
                         and r["queueOffset"] >= 10 and r["tags"] == "t1")
    assert plan.access == ["queues"]
    assert all(isinstance(t, QueueSliceTask) for t in plan.tasks)


def test_time_and_offset_ranges_become_byte_ranges(store_path: Path, rows: list[dict]) -> None:
    times = sorted(r["storeTimestamp"] for r in rows)
    lo_us = int(times[100].timestamp() * 1_000_000)
    hi_us = int(times[140].timestamp() * 1_000_000)
    preds: list[Predicate] = [Compare("storeTimestamp", ">=", lo_us), Compare("storeTimestamp", "<", hi_us),
                              NotNull("storeTimestamp")]
    got, plan = _run(store_path, preds)
    assert got == sorted(r["commitLogOffset"] for r in rows if times[100] <= r["storeTimestamp"] < times[140])
    assert plan.access == ["range"]
    assert all(isinstance(t, RangeTask) for t in plan.tasks)
    with Store.open(str(store_path)) as store:
        assert sum(t.end - t.start for t in plan.tasks) < (store.max_offset - store.min_offset) / 4


def test_msg_id_and_offsets_are_point_reads(store_path: Path, rows: list[dict]) -> None:
    target = rows[123]
    got, plan = _run(store_path, [Compare("msgId", "=", target["msgId"])])
    assert got == [target["commitLogOffset"]]
    assert plan.access == ["offsets"]
    offsets = (rows[5]["commitLogOffset"], rows[5]["commitLogOffset"] + 1, 10**12)
    got, _ = _run(store_path, [InSet("commitLogOffset", offsets)])
    assert got == [rows[5]["commitLogOffset"]]  # a non-record offset gives no row, not an error


def test_missing_index_falls_back_to_scan_and_says_so(store_path: Path, rows: list[dict],
                                                      tmp_path: Path) -> None:
    copy = tmp_path / "store"
    shutil.copytree(store_path, copy)
    for f in (copy / "index").iterdir():
        f.write_bytes(b"\0" * 10)  # damaged: too short for any geometry
    got, plan = _run(copy, [Compare("key", "=", "x")])
    assert got == sorted(r["commitLogOffset"] for r in rows if r["key"] == "x")
    assert plan.access == ["scan"]
    assert any("scanning instead" in note for note in plan.notes)


def test_min_partitions_splits_ranges(store_path: Path) -> None:
    _, plan = _run(store_path, [], min_partitions=9)
    assert len(plan.tasks) >= 9


def test_confirm_null_never_matches() -> None:
    batch = pa.RecordBatch.from_pydict({"key": pa.array(["a", None, "b"])})
    assert confirm(batch, [InSet("key", ("a", "b"))]).column("key").to_pylist() == ["a", "b"]
    assert confirm(batch, [Compare("key", ">", "a")]).column("key").to_pylist() == ["b"]


def test_confirm_keeps_the_batch_itself_when_every_row_matches() -> None:
    """No copy of every column when nothing is filtered out (rows read by queue or index)."""
    batch = pa.RecordBatch.from_pydict({"key": pa.array(["a", "b"]), "body": pa.array([b"x", b"y"])})
    assert confirm(batch, [InSet("key", ("a", "b"))]) is batch
    kept = confirm(batch, [InSet("key", ("a",))])
    assert kept is not batch and kept.to_pylist() == [{"key": "a", "body": b"x"}]


def test_merge_and_subtract_ranges() -> None:
    assert merge_ranges([(5, 9), (0, 2), (2, 4), (8, 12), (20, 20)]) == [(0, 4), (5, 12)]
    assert subtract_ranges([(0, 10), (20, 30)], [(2, 4), (6, 22), (28, 40)]) == ((0, 2), (4, 6), (22, 28))
    assert subtract_ranges([(0, 10)], []) == ((0, 10),)
    assert subtract_ranges([(0, 10)], [(0, 10)]) == ()
