"""Queue plans also scan the bytes no consume queue covers, index plans probe the side index of what
the broker's index lacks (ROLLBACK records), so pushdown == scan."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from plan_helpers import run_plan, scan_rows

from rmqstore.cachedir import CACHE_DIR_ENV
from rmqstore.format.layout import TRANSACTION_COMMIT, TRANSACTION_PREPARED, TRANSACTION_ROLLBACK
from rmqstore.plan import planner
from rmqstore.plan.confirm import confirm
from rmqstore.plan.execute import ReadSettings, run_task
from rmqstore.plan.planner import PlanSettings, ReadPlan, plan_read
from rmqstore.plan.predicates import Compare, InSet, KeysContainAny, Predicate, QueueWindow, QueueWindows
from rmqstore.plan.tasks import KeyProbeTask, OffsetsTask, QueueSliceTask, RangesTask, RangeTask, split_spans
from rmqstore.store import Store
from rmqstore.writer import MessageSpec, StoreWriter

COLUMNS = ["commitLogOffset", "topic", "queueId", "queueOffset", "key", "keys", "tags", "uniqKey",
           "storeTimestamp", "sysFlag", "storeSize"]
SEGMENT = 8 * 1024


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Transaction records of every type; PREPARED / ROLLBACK ones only in segments 1 and 3."""
    path = tmp_path_factory.mktemp("uncovered") / "store"
    rng = random.Random(5)
    with StoreWriter(path, segment_size=SEGMENT, cq_segment_size=20 * 16, index_hash_slots=16,
                     index_entries=64, seed=5) as writer:
        for topic in ("A", "B"):
            writer.declare_topic(topic, 2)
        for i in range(240):
            transaction = TRANSACTION_COMMIT if i % 11 == 0 else 0
            segment, position = divmod(writer.position, SEGMENT)
            if i % 7 == 3 and segment in (1, 3) and position < SEGMENT / 2:  # surely in that segment
                transaction = [TRANSACTION_PREPARED, TRANSACTION_ROLLBACK][i % 2]
            writer.append(MessageSpec(topic=rng.choice("AB"), body=bytes(rng.randint(0, 90)),
                                      keys=["t", f"k{i % 5}", "t u"][i % 3], tags=rng.choice(["x", "y"]),
                                      uniq_key=f"U{i % 9}", transaction=transaction))
            writer.advance_clock(300)
    return path


@pytest.fixture(scope="module")
def rows(store_path: Path) -> list[dict]:
    return scan_rows(store_path, COLUMNS)


def _run(store_path: Path, predicates: list[Predicate], **settings: int) -> tuple[list[int], ReadPlan]:
    return run_plan(store_path, predicates, COLUMNS, **settings)


def _scanned(rows: list[dict], predicates: list[Predicate]) -> list[int]:
    """What a scan returns: every row confirmed, pushdown off."""
    batch = pa.RecordBatch.from_pylist(rows)
    return sorted(confirm(batch, predicates).column("commitLogOffset").to_pylist())


def _hidden(rows: list[dict]) -> list[tuple[int, int]]:
    """Byte ranges of the records no consume queue holds (PREPARED / ROLLBACK, §4.1)."""
    return [(r["commitLogOffset"], r["commitLogOffset"] + r["storeSize"]) for r in rows
            if r["sysFlag"] & 0xC in (TRANSACTION_PREPARED, TRANSACTION_ROLLBACK)]


def _unindexed(rows: list[dict]) -> list[tuple[int, int]]:
    """Byte ranges of the records the index does not have (ROLLBACK, §5.4)."""
    return [(r["commitLogOffset"], r["commitLogOffset"] + r["storeSize"]) for r in rows
            if r["sysFlag"] & 0xC == TRANSACTION_ROLLBACK]


def _may_hold(rows: list[dict], topics: set[str]) -> set[tuple[int, int]]:
    """The uncovered records a plan of `topics` scans: every one in a segment whose uncovered indexed
    records (PREPARED ones here) include one of `topics`, and every ROLLBACK one (a verdict keeps no topic
    for those)."""
    held = {r["commitLogOffset"] // SEGMENT for r in rows
            if r["sysFlag"] & 0xC == TRANSACTION_PREPARED and r["topic"] in topics}
    return {(r["commitLogOffset"], r["commitLogOffset"] + r["storeSize"]) for r in rows
            if r["sysFlag"] & 0xC == TRANSACTION_ROLLBACK
            or (r["sysFlag"] & 0xC == TRANSACTION_PREPARED and r["commitLogOffset"] // SEGMENT in held)}


def test_the_fixture_has_uncovered_segments(store_path: Path, rows: list[dict]) -> None:
    txn = Counter(r["sysFlag"] & 0xC for r in rows)
    assert txn[TRANSACTION_PREPARED] and txn[TRANSACTION_ROLLBACK] and txn[TRANSACTION_COMMIT]
    with Store.open(str(store_path)) as store:
        held = {r["commitLogOffset"] // SEGMENT for r in rows if r["sysFlag"] & 0xC in (4, 12)}
        assert held == {1, 3}
        assert [s.base_offset // SEGMENT for s in store.uncovered_segments()] == [1, 3]
        assert store.uncovered_ranges() == _hidden(rows)
        assert store.unindexed_ranges() == _unindexed(rows) and len(_unindexed(rows)) < len(_hidden(rows))
        assert len(store.segments) > 5


@pytest.mark.parametrize("predicates", [
    [InSet("topic", ("A", "B"))],
    [Compare("topic", "=", "A")],
    [Compare("topic", "=", "A"), Compare("queueId", "=", 1)],
    [Compare("topic", "=", "A"), Compare("queueId", "=", 0), Compare("queueOffset", "<", 30)],
    [Compare("topic", "=", "B"), Compare("tags", "=", "x")],
    [InSet("topic", ("A", "B")), Compare("storeTimestamp", ">=", 1_700_000_030_000_000)],
], ids=["topics", "topic", "queue", "queue-offsets", "tags", "time"])
def test_queue_plans_return_what_a_scan_returns(store_path: Path, rows: list[dict],
                                                predicates: list[Predicate],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planner, "DENSE_SHARE", 2.0)  # the queue path only (dense segments: below)
    got, plan = _run(store_path, predicates)
    assert got == _scanned(rows, predicates)  # sorted with duplicates: each row once
    assert plan.access == ["queues"]
    assert any(isinstance(t, QueueSliceTask) for t in plan.tasks)
    assert not any(isinstance(t, RangeTask) for t in plan.tasks)
    scanned = [r for t in plan.tasks if isinstance(t, RangesTask) for r in t.ranges]
    assert scanned and set(scanned) <= set(_hidden(rows))  # the time bound drops the earlier ones
    topics = {v for p in predicates if p.column == "topic"
              for v in (p.values if isinstance(p, InSet) else [p.value])}
    for task in (t for t in plan.tasks if isinstance(t, QueueSliceTask)):
        # every uncovered range stays out of the queue slices; scanned are those that may hold the topics
        assert set(task.exclude) <= set(_hidden(rows))
        assert set(scanned) == set(task.exclude) & _may_hold(rows, topics)
    assert any("not covered by consume queues" in n for n in plan.notes)


def test_prepared_and_rollback_rows_come_back_through_queue_plans(store_path: Path, rows: list[dict]) -> None:
    got, _ = _run(store_path, [Compare("topic", "=", "A")])
    hidden = [r["commitLogOffset"] for r in rows if r["topic"] == "A" and r["sysFlag"] & 0xC in (4, 12)]
    assert hidden and set(hidden) <= set(got)


@pytest.mark.parametrize("predicates", [
    [Compare("key", "=", "t")],
    [InSet("key", ("t u", "k1", "k3"))],
    [KeysContainAny(("u",))],
    [Compare("uniqKey", "=", "U5")],
    [InSet("uniqKey", ("U3", "U1"))],
], ids=["key", "keys-in", "keys-contain", "uniq", "uniq-in"])
def test_index_plans_return_what_a_scan_returns(store_path: Path, rows: list[dict],
                                                predicates: list[Predicate]) -> None:
    got, plan = _run(store_path, predicates)
    expected = _scanned(rows, predicates)
    assert any(r["sysFlag"] & 0xC == TRANSACTION_ROLLBACK for r in rows if r["commitLogOffset"] in expected)
    assert got == expected
    assert plan.access == ["key-index"]
    assert not any(isinstance(t, RangeTask | RangesTask) for t in plan.tasks)  # nothing is scanned
    index_hits = [o for t in plan.tasks if isinstance(t, OffsetsTask) for o in t.offsets]
    rolled_back = {r["commitLogOffset"] for r in rows if r["sysFlag"] & 0xC == TRANSACTION_ROLLBACK}
    assert rolled_back & set(expected) <= set(index_hits)  # found through the side index
    prepared = {r["commitLogOffset"] for r in rows if r["sysFlag"] & 0xC == TRANSACTION_PREPARED}
    assert prepared & set(expected) <= set(index_hits)  # found through the index, not scanned
    assert sum("built a side index" in n for n in plan.notes) == 1
    assert _run(store_path, predicates)[1].notes == []  # built once: the next plan reads it from the cache


def test_prepared_rows_come_back_through_the_index(store_path: Path, rows: list[dict]) -> None:
    got, plan = _run(store_path, [InSet("key", ("k1", "k2"))])
    prepared = [r["commitLogOffset"] for r in rows
                if r["key"] in ("k1", "k2") and r["sysFlag"] & 0xC == TRANSACTION_PREPARED]
    index_hits = {o for t in plan.tasks if isinstance(t, OffsetsTask) for o in t.offsets}
    assert prepared and set(prepared) <= index_hits & set(got)


def test_executor_probes_find_rollback_records_in_the_side_index(store_path: Path, rows: list[dict]) -> None:
    predicates: list[Predicate] = [InSet("uniqKey", tuple(f"U{i}" for i in range(9)))]
    got, plan = _run(store_path, predicates, key_probe_partition_threshold=2)
    assert got == _scanned(rows, predicates)
    assert set(_unindexed(rows)) <= {(o, o + r["storeSize"]) for r in rows for o in got
                                     if o == r["commitLogOffset"]}
    probes = [t for t in plan.tasks if isinstance(t, KeyProbeTask)]
    assert len(probes) > 1 and len(probes) == len(plan.tasks)


def test_queue_windows_select_queue_units_only(store_path: Path, rows: list[dict]) -> None:
    window = QueueWindows((QueueWindow("A", 0, 0, 1_000),))
    got, plan = _run(store_path, [window])
    units = [r["commitLogOffset"] for r in rows if r["topic"] == "A" and r["queueId"] == 0
             and r["sysFlag"] & 0xC in (0, 8)]
    assert got == sorted(units)
    assert not any(isinstance(t, RangeTask | RangesTask) for t in plan.tasks)
    assert not plan.notes


def test_a_key_query_inside_queue_windows_returns_queue_units_only(store_path: Path,
                                                                  rows: list[dict]) -> None:
    """PREPARED / ROLLBACK records carry queueOffset 0 and come through the index, not the queues: the
    window must still exclude them (they are in no queue, §4.1)."""
    windows = QueueWindows(tuple(QueueWindow(t, q, 0, 1_000) for t in "AB" for q in (0, 1)))
    predicates: list[Predicate] = [KeysContainAny(("t",)), windows]
    got, _ = _run(store_path, predicates)
    transactional = {r["commitLogOffset"] for r in rows
                     if r["sysFlag"] & 0xC in (4, 12) and r["keys"] == ["t"]}
    assert transactional, "the store must hold PREPARED / ROLLBACK records keyed 't'"
    assert got == sorted(r["commitLogOffset"] for r in rows
                         if r["keys"] and "t" in r["keys"] and r["sysFlag"] & 0xC in (0, 8))
    assert not transactional & set(got)


def test_a_covered_store_plans_no_extra_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planner, "DENSE_SHARE", 2.0)  # topic A is every record: else scanned as dense
    path = tmp_path / "store"
    with StoreWriter(path, segment_size=SEGMENT, cq_segment_size=20 * 16, index_hash_slots=16,
                     index_entries=64, seed=1) as writer:
        writer.declare_topic("A", 2)
        for i in range(120):
            writer.append(MessageSpec(topic="A", body=bytes(i), keys=f"k{i % 3}"))
    for predicates in ([Compare("topic", "=", "A")], [Compare("key", "=", "k1")]):
        got, plan = _run(path, predicates)
        assert len(got) == 120 if predicates[0].column == "topic" else len(got) == 40
        assert not any(isinstance(t, RangeTask | RangesTask) for t in plan.tasks)
        # no scan; the topic plan decides the coverage once and says so, the key plan finds it cached
        built = [n for n in plan.notes if "no consume queue covers" in n and "once: cached in" in n]
        assert plan.notes == built and len(built) == (predicates[0].column == "topic")


def test_uncovered_ranges_are_split_into_partition_sized_tasks(store_path: Path, rows: list[dict]) -> None:
    predicates: list[Predicate] = [Compare("topic", "=", "A")]
    got, plan = _run(store_path, predicates, max_bytes_per_partition=150)
    assert got == _scanned(rows, predicates)
    scans = [t for t in plan.tasks if isinstance(t, RangesTask)]
    assert len(scans) > len(_may_hold(rows, {"A"}))  # each scanned range split
    assert all(sum(b - a for a, b in t.ranges) <= 150 for t in scans)


def test_dense_segments_are_scanned_each_record_once(store_path: Path, rows: list[dict]) -> None:
    """`topic IN (A, B)` selects every record: each segment is scanned (the uncovered ranges in them
    with it, not again), nothing is read by offset, every record is decoded once. `topic = A` (about
    half of each segment) stays with the queues."""
    predicates: list[Predicate] = [InSet("topic", ("A", "B"))]
    with Store.open(str(store_path)) as store:
        plan = plan_read([store], [predicates], PlanSettings())
        store.stats.reset()  # planning decodes a few records to find the uncovered ranges' topics
        got = [o for t in plan.tasks for b in run_task(t, store, COLUMNS, ReadSettings())
               for o in confirm(b, predicates).column("commitLogOffset").to_pylist()]
        assert sorted(got) == _scanned(rows, predicates)
        assert store.stats.records_decoded == len(rows)
    assert plan.access == ["scan"] and all(isinstance(t, RangeTask) for t in plan.tasks)
    assert any("scanned instead of read by offset" in n for n in plan.notes)
    _, half = _run(store_path, [Compare("topic", "=", "A")])
    assert half.access == ["queues"] and not any(isinstance(t, RangeTask) for t in half.tasks)


def test_a_dense_segment_among_sparse_ones(tmp_path: Path) -> None:
    """Topic D fills one segment and is rare elsewhere: that segment is scanned, the others are read
    through the queue (tasks bounded to leave the scanned segment out), and the rows are the scan's."""
    path = tmp_path / "store"
    with StoreWriter(path, segment_size=SEGMENT, cq_segment_size=20 * 64, seed=3) as writer:
        writer.declare_topic("D", 1)
        writer.declare_topic("E", 1)
        for i in range(300):
            segment = writer.position // SEGMENT
            topic = "D" if segment == 2 or i % 10 == 0 else "E"
            writer.append(MessageSpec(topic=topic, body=bytes(40), keys=f"k{i}"))
    predicates: list[Predicate] = [Compare("topic", "=", "D")]
    got, plan = _run(path, predicates)
    assert got == _scanned(scan_rows(path, COLUMNS), predicates)
    scanned = [(t.start, t.end) for t in plan.tasks if isinstance(t, RangeTask)]
    assert scanned == [(2 * SEGMENT, 3 * SEGMENT)] and plan.access == ["queues"]
    queue_tasks = [t for t in plan.tasks if isinstance(t, QueueSliceTask)]
    assert queue_tasks and all(t.hi <= 2 * SEGMENT or t.lo >= 3 * SEGMENT for t in queue_tasks)


def test_topic_tasks_follow_the_scan_pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A topic plan runs on as many tasks as the scan: one per scan piece holding selected records,
    each reading only the units and records of its piece (queue offsets split by bisection), each
    unit once (the plan's queue bounds travel with the slices: not looked up again)."""
    monkeypatch.setattr(planner, "MIN_QUEUE_TASK_BYTES", 1)
    path = tmp_path / "store"
    rng = random.Random(4)
    with StoreWriter(path, segment_size=SEGMENT, cq_segment_size=20 * 64, seed=4) as writer:
        writer.declare_topic("X", 2)
        writer.declare_topic("Y", 2)
        for i in range(400):
            topic = "X" if rng.random() < 0.3 else "Y"
            writer.append(MessageSpec(topic=topic, body=bytes(rng.randint(0, 60)), keys=f"k{i}"))
    predicates: list[Predicate] = [Compare("topic", "=", "X")]
    rows = scan_rows(path, COLUMNS)
    with Store.open(str(path)) as store:
        plan = plan_read([store], [predicates], PlanSettings(max_bytes_per_partition=SEGMENT // 2))
        pieces = split_spans(store.segment_spans(), SEGMENT // 2)
    selected = [r["commitLogOffset"] for r in rows if r["topic"] == "X"]
    holding = [p for p in pieces if any(p[0] <= o < p[1] for o in selected)]
    tasks = [t for t in plan.tasks if isinstance(t, QueueSliceTask)]
    assert plan.access == ["queues"] and [(t.lo, t.hi) for t in tasks] == holding and len(tasks) > 4
    got = []
    for task in tasks:
        with Store.open(str(path)) as store:
            found = [o for b in run_task(task, store, COLUMNS, ReadSettings())
                     for o in confirm(b, predicates).column("commitLogOffset").to_pylist()]
            assert store.stats.records_decoded == len(found)  # no record of another piece is read
            units = sum(s.end - s.start for s in task.slices)
            assert units == len(found)  # nor another piece's queue units
            queue_bytes = sum(n for path, n in store.stats.bytes_by_path.items() if "consumequeue" in path)
            assert queue_bytes == 20 * units  # each of its units read once, nothing else of the queue
        got += found
    assert sorted(got) == _scanned(rows, predicates)
