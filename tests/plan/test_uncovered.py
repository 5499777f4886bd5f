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
from rmqstore.plan.confirm import confirm
from rmqstore.plan.planner import ReadPlan
from rmqstore.plan.predicates import Compare, InSet, KeysContainAny, Predicate, QueueWindow, QueueWindows
from rmqstore.plan.tasks import KeyProbeTask, OffsetsTask, QueueSliceTask, RangesTask, RangeTask
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
                                                predicates: list[Predicate]) -> None:
    got, plan = _run(store_path, predicates)
    assert got == _scanned(rows, predicates)  # sorted with duplicates: each row once
    assert plan.access == ["queues"]
    assert any(isinstance(t, QueueSliceTask) for t in plan.tasks)
    assert not any(isinstance(t, RangeTask) for t in plan.tasks)
    scanned = [r for t in plan.tasks if isinstance(t, RangesTask) for r in t.ranges]
    assert scanned and set(scanned) <= set(_hidden(rows))  # the time bound drops the earlier ones
    assert all(t.exclude == tuple(scanned) for t in plan.tasks if isinstance(t, QueueSliceTask))
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


def test_a_key_query_inside_queue_windows_returns_queue_units_only(store_path: Path, rows: list[dict]) -> None:
    """PREPARED / ROLLBACK records carry queueOffset 0 and come through the index, not the queues: the
    window must still exclude them (they are in no queue, §4.1)."""
    windows = QueueWindows(tuple(QueueWindow(t, q, 0, 1_000) for t in "AB" for q in (0, 1)))
    predicates: list[Predicate] = [KeysContainAny(("t",)), windows]
    got, _ = _run(store_path, predicates)
    transactional = {r["commitLogOffset"] for r in rows if r["sysFlag"] & 0xC in (4, 12) and r["keys"] == ["t"]}
    assert transactional, "the store must hold PREPARED / ROLLBACK records keyed 't'"
    assert got == sorted(r["commitLogOffset"] for r in rows
                         if r["keys"] and "t" in r["keys"] and r["sysFlag"] & 0xC in (0, 8))
    assert not transactional & set(got)


def test_a_covered_store_plans_no_extra_scan(tmp_path: Path) -> None:
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
        assert not plan.notes


def test_uncovered_ranges_are_split_into_partition_sized_tasks(store_path: Path, rows: list[dict]) -> None:
    predicates: list[Predicate] = [Compare("topic", "=", "A")]
    got, plan = _run(store_path, predicates, max_bytes_per_partition=150)
    assert got == _scanned(rows, predicates)
    scans = [t for t in plan.tasks if isinstance(t, RangesTask)]
    assert len(scans) > len(_hidden(rows))
    assert all(sum(b - a for a, b in t.ranges) <= 150 for t in scans)
