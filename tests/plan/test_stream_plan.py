"""The plan of a stream's micro-batch (`plan_stream_batch`): given offsets -> exact tasks, and the tasks
read exactly the batch's records."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rmqstore.plan.execute import ReadSettings, run_task
from rmqstore.plan.planner import PlanSettings
from rmqstore.plan.predicates import Compare, InSet, Predicate, QueueWindow, QueueWindows
from rmqstore.plan.stream import plan_stream_batch
from rmqstore.plan.tasks import QueueSlice, QueueSliceTask, RangeTask
from rmqstore.store import Store
from rmqstore.store.errors import StoreCorruptionError
from rmqstore.writer import MessageSpec, StoreWriter

SEGMENT = 4096
RECORDS = 120


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Records of one size (same topic length, body, no keys) in A/0, A/1, B/0, B/1 in turn."""
    path = tmp_path_factory.mktemp("stream-plan") / "store"
    with StoreWriter(path, segment_size=SEGMENT, cq_segment_size=20 * 16, index_hash_slots=16,
                     index_entries=256, seed=5) as writer:
        for topic in ("A", "B"):
            writer.declare_topic(topic, 2)
        for i in range(RECORDS):
            writer.append(MessageSpec(topic="AB"[i // 2 % 2], queue_id=i % 2, body=b"x" * 40))
    return path


@pytest.fixture(scope="module")
def rows(store_path: Path) -> list[dict]:
    with Store.open(str(store_path)) as store:
        return [r for b in store.scan(columns=["commitLogOffset", "topic", "queueId", "queueOffset",
                                               "storeSize"]) for r in b.to_pylist()]


def _log(start: int, end: int) -> tuple[Predicate, ...]:
    return Compare("commitLogOffset", ">=", start), Compare("commitLogOffset", "<", end)


def _plan(path: Path, batches: list[tuple[Predicate, ...]], max_bytes: int):
    with Store.open(str(path)) as store:
        settings = PlanSettings(max_bytes_per_partition=max_bytes)
        return plan_stream_batch([store] * len(batches), batches, settings)


def test_log_batch_is_cut_at_segments_then_into_nearly_equal_pieces(store_path: Path) -> None:
    plan = _plan(store_path, [_log(1000, 9000)], 1500)
    assert plan.tasks == [RangeTask(0, 1000, 2032), RangeTask(0, 2032, 3064), RangeTask(0, 3064, 4096),
                          RangeTask(0, 4096, 5461), RangeTask(0, 5461, 6826), RangeTask(0, 6826, 8192),
                          RangeTask(0, 8192, 9000)]
    assert plan.access == ["range"]
    assert _plan(store_path, [_log(1000, 9000)], 1 << 20).tasks == [
        RangeTask(0, 1000, 4096), RangeTask(0, 4096, 8192), RangeTask(0, 8192, 9000)]  # a task per segment


def test_empty_batches_and_several_stores(store_path: Path) -> None:
    plan = _plan(store_path, [_log(700, 700), _log(4096, 4200), _log(9000, 8000)], 1 << 20)
    assert plan.tasks == [RangeTask(1, 4096, 4200)]
    assert plan.access == ["empty", "range", "empty"]


def test_log_batch_is_not_clipped_to_the_stored_log(store_path: Path, tmp_path: Path) -> None:
    """What retention deleted stays in the plan: the stream reader reports it when the task runs."""
    copy = tmp_path / "store"
    shutil.copytree(store_path, copy)
    (copy / "commitlog" / f"{0:020d}").unlink()
    with Store.open(str(copy)) as store:
        assert store.min_offset == SEGMENT
    assert _plan(copy, [_log(100, 5000)], 1 << 20).tasks == [RangeTask(0, 100, 4096),
                                                             RangeTask(0, 4096, 5000)]


def test_queue_batch_groups_whole_windows_by_record_bytes(store_path: Path, rows: list[dict]) -> None:
    size = rows[0]["storeSize"]
    assert {r["storeSize"] for r in rows} == {size}
    windows = QueueWindows((QueueWindow("A", 0, 0, 3), QueueWindow("A", 1, 2, 2), QueueWindow("B", 0, 1, 7),
                            QueueWindow("B", 1, 0, 4)))
    plan = _plan(store_path, [(windows,)], 10 * size)
    assert plan.tasks == [
        QueueSliceTask(0, (QueueSlice("A", 0, 0, 3), QueueSlice("B", 0, 1, 7)), None, None, None),
        QueueSliceTask(0, (QueueSlice("B", 1, 0, 4),), None, None, None)]
    assert plan.access == ["queues"]
    # a window heavier than a task gets a task of its own; one past the queue's end weighs its units
    windows = QueueWindows((QueueWindow("A", 0, 0, 3), QueueWindow("B", 0, 0, 1000),
                            QueueWindow("B", 1, 0, 1)))
    assert [t.slices for t in _plan(store_path, [(windows,)], 4 * size).tasks] == [
        (QueueSlice("A", 0, 0, 3),), (QueueSlice("B", 0, 0, 1000),), (QueueSlice("B", 1, 0, 1),)]
    assert _plan(store_path, [(QueueWindows(()),)], size).tasks == []


@pytest.mark.parametrize("predicates", [
    (InSet("topic", ("A",)),),
    (Compare("commitLogOffset", ">=", 0),),
    (*_log(0, 100), InSet("topic", ("A",))),
    (QueueWindows((QueueWindow("A", 0, 0, 3),)), Compare("queueOffset", ">=", 1)),
], ids=["topic", "open-range", "range-and-topic", "windows-and-queue-offset"])
def test_only_a_log_range_or_queue_windows_is_a_stream_batch(store_path: Path, predicates) -> None:
    with pytest.raises(ValueError, match="not a stream batch"):
        _plan(store_path, [predicates], 1 << 20)


def _read(path: Path, plan, mode: str = "FAILFAST") -> tuple[list[int], Store]:
    store = Store.open(str(path))
    settings = ReadSettings(mode=mode)
    got = [o for task in plan.tasks for b in run_task(task, store, ["commitLogOffset"], settings)
           for o in b.column(0).to_pylist()]
    return got, store


def test_tasks_read_exactly_the_batch(store_path: Path, rows: list[dict]) -> None:
    got, _ = _read(store_path, _plan(store_path, [_log(1000, 9000)], 1500))
    assert got == [r["commitLogOffset"] for r in rows if 1000 <= r["commitLogOffset"] < 9000]
    windows = QueueWindows((QueueWindow("A", 1, 3, 9), QueueWindow("B", 0, 0, 5)))
    got, _ = _read(store_path, _plan(store_path, [(windows,)], 1 << 20))
    want = {("A", 1, q) for q in range(3, 9)} | {("B", 0, q) for q in range(5)}
    assert got == sorted(r["commitLogOffset"] for r in rows
                         if (r["topic"], r["queueId"], r["queueOffset"]) in want)


def test_queue_tasks_fail_on_a_unit_without_its_record(store_path: Path, rows: list[dict],
                                                       tmp_path: Path) -> None:
    """The stream's offsets promised a record at every unit: a broken one is an error naming file and
    offset (FAILFAST) or a counted skip (PERMISSIVE), never a silently missing row."""
    copy = tmp_path / "store"
    shutil.copytree(store_path, copy)
    broken = next(r for r in rows if (r["topic"], r["queueId"], r["queueOffset"]) == ("A", 0, 2))
    with open(copy / "commitlog" / f"{0:020d}", "r+b") as segment:
        segment.seek(broken["commitLogOffset"] + 4)
        segment.write(b"\0\0\0\0")  # the record's MAGICCODE
    plan = _plan(copy, [(QueueWindows((QueueWindow("A", 0, 0, 4),)),)], 1 << 20)
    with pytest.raises(StoreCorruptionError) as failure:
        _read(copy, plan)
    assert failure.value.offset == broken["commitLogOffset"]
    assert Path(failure.value.path).name == f"{0:020d}"
    got, store = _read(copy, plan, "PERMISSIVE")
    assert got == [r["commitLogOffset"] for r in rows if (r["topic"], r["queueId"]) == ("A", 0)
                   and r["queueOffset"] in (0, 1, 3)]
    assert store.stats.invalid_records_skipped == 1
