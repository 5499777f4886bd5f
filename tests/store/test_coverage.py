"""Which commit-log bytes consume queues do not cover (`Store.uncovered_ranges`), and its disk cache."""

from __future__ import annotations

import json
import os
import pickle

import pytest

from helpers.store_builder import StoreBuilder, Written, fill
from rmqstore.cachedir import CACHE_DIR_ENV
from rmqstore.format.consumequeue import CQ_UNIT_SIZE, UNIT_DAMAGE_LOOKAHEAD
from rmqstore.format.layout import TRANSACTION_COMMIT, TRANSACTION_PREPARED, TRANSACTION_ROLLBACK
from rmqstore.store import Store
from rmqstore.store.consumequeue import FIRST_WINDOW_UNITS
from rmqstore.store.coverage import cache_dir


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch) -> str:
    """Each test caches verdicts in its own directory, outside the store."""
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    return cache_dir()


def _segment_of(store: Store, offset: int):
    return next(s for s in store.segments if s.contains(offset))


def _queue_units(store: Store) -> int:
    return sum(len(store.consume_queue(t, q).units()) for t in store.topics() for q in store.queue_ids(t))


def _drop_unit(b: StoreBuilder, rec: Written) -> None:
    """Take back the unit the builder wrote for `rec` (later units move up one place)."""
    units = b.queues[(rec.topic, rec.queue_id)]
    units.remove(next(u for u in units if int.from_bytes(u[:8], "big") == rec.offset))


def _append_without_unit(b: StoreBuilder, topic: str, sys_flag: int, **kwargs) -> Written:
    """A record the broker puts in no consume queue."""
    rec = b.append(topic, sys_flag=sys_flag, **kwargs)
    _drop_unit(b, rec)
    return rec


def test_a_normal_store_is_covered(builder: StoreBuilder) -> None:
    fill(builder, 80)
    builder.append("TopicA", sys_flag=TRANSACTION_COMMIT)  # COMMIT records do get a unit (§4.1)
    with Store.open(builder.finish()) as store:
        assert len([s for s in store.segments if s.base_offset < store.max_offset]) >= 4
        assert store.uncovered_ranges() == []
        assert store.uncovered_segments() == []


def test_prepared_and_rollback_records_are_the_uncovered_ranges(builder: StoreBuilder) -> None:
    fill(builder, 30)
    prepared = _append_without_unit(builder, "TopicA", TRANSACTION_PREPARED, keys="txn")
    fill(builder, 30)
    rollback = _append_without_unit(builder, "TopicB", TRANSACTION_ROLLBACK, keys="txn")
    fill(builder, 30)
    with Store.open(builder.finish()) as store:
        segments = sorted({_segment_of(store, prepared.offset), _segment_of(store, rollback.offset)},
                          key=lambda s: s.base_offset)
        assert len(segments) == 2
        assert store.uncovered_segments() == segments
        assert store.uncovered_ranges() == [(r.offset, r.offset + r.size) for r in (prepared, rollback)]
        assert store.unindexed_ranges() == [(rollback.offset, rollback.offset + rollback.size)]


def test_a_topic_scans_only_the_gaps_that_may_hold_it(builder: StoreBuilder) -> None:
    fill(builder, 30)
    prepared = _append_without_unit(builder, "TopicA", TRANSACTION_PREPARED)
    fill(builder, 30)
    rollback = _append_without_unit(builder, "TopicB", TRANSACTION_ROLLBACK)
    fill(builder, 30)
    with Store.open(builder.finish()) as store:
        assert len(store.uncovered_ranges()) == 2
        assert store.uncovered_ranges_of(["TopicA"]) == [(prepared.offset, prepared.offset + prepared.size),
                                                         (rollback.offset, rollback.offset + rollback.size)]
        # a ROLLBACK record's topic is not kept (unindexed): it is scanned for every topic
        assert store.uncovered_ranges_of(["TopicC"]) == [(rollback.offset, rollback.offset + rollback.size)]


def test_a_gap_without_valid_records_stays_unindexed(builder: StoreBuilder) -> None:
    """Bytes that hold no valid record cannot be in the index: key plans scan them (and report them)."""
    fill(builder, 30)
    broken = _append_without_unit(builder, "TopicA", TRANSACTION_PREPARED, keys="txn")
    fill(builder, 60)
    segment = builder.segments[broken.offset - broken.offset % builder.segment_size]
    at = broken.offset % builder.segment_size
    segment[at + 4 : at + 8] = b"\x00\x00\x00\x00"  # MAGICCODE
    with Store.open(builder.finish()) as store:
        assert not _segment_of(store, broken.offset).contains(store.max_offset)  # a sealed segment
        assert store.unindexed_ranges() == store.uncovered_ranges() == [(broken.offset,
                                                                         broken.offset + broken.size)]


def test_queues_behind_the_log_are_indexed(builder: StoreBuilder) -> None:
    """Records in no queue but of an indexed type are found through the index: nothing unindexed."""
    written = fill(builder, 60)
    for rec in written[-3:]:
        _drop_unit(builder, rec)
    with Store.open(builder.finish()) as store:
        assert store.uncovered_ranges() and store.unindexed_ranges() == []


def test_queues_behind_the_log_leave_the_tail_uncovered(builder: StoreBuilder) -> None:
    written = fill(builder, 60)
    for rec in written[-3:]:  # not dispatched yet
        _drop_unit(builder, rec)
    with Store.open(builder.finish()) as store:
        assert store.max_offset == written[-1].offset + written[-1].size
        assert store.uncovered_ranges() == [(written[-3].offset, store.max_offset)]
        assert store.uncovered_segments() == [_segment_of(store, written[-1].offset)]


def test_a_sealed_segment_ending_with_an_uncovered_record(builder: StoreBuilder) -> None:
    written = fill(builder, 60)
    last_of_first = max((w for w in written if w.offset < builder.segment_size), key=lambda w: w.offset)
    _drop_unit(builder, last_of_first)
    with Store.open(builder.finish()) as store:
        first = store.segments[0]
        assert store.uncovered_ranges() == [(last_of_first.offset, first.end_offset)]


def test_a_topic_without_queue_files_is_uncovered(builder: StoreBuilder) -> None:
    written = fill(builder, 60, topics=("TopicA", "TopicB", "Lost"))
    for key in [k for k in builder.queues if k[0] == "Lost"]:
        del builder.queues[key]
    with Store.open(builder.finish()) as store:
        lost = {_segment_of(store, w.offset).base_offset for w in written if w.topic == "Lost"}
        assert [s.base_offset for s in store.uncovered_segments()] == sorted(lost)
        ranges = store.uncovered_ranges()
        in_ranges = [w.topic for w in written if any(a <= w.offset < b for a, b in ranges)]
        assert in_ranges == ["Lost"] * (len(written) // 3)


def test_verdicts_are_cached_outside_the_store_and_reused(builder: StoreBuilder, private_cache: str) -> None:
    fill(builder, 150)
    _append_without_unit(builder, "TopicA", TRANSACTION_PREPARED)
    fill(builder, 150)
    root = builder.finish()

    def measured() -> tuple[list[tuple[int, int]], int, int, str | None]:
        with Store.open(root) as store:
            assert store.max_offset > 0  # the valid end is found before measuring
            store.stats.reset()
            ranges = store.uncovered_ranges()
            cq_paths = [p for p in store.stats.paths_read if os.sep + "consumequeue" + os.sep in p]
            return ranges, store.stats.bytes_read, len(cq_paths), store.coverage.note

    cold, cold_bytes, cold_files, cold_note = measured()
    with Store.open(root) as store:
        assert store.unindexed_ranges() == []  # a PREPARED record is indexed, from the cache too
    files = os.listdir(private_cache)
    assert len(files) == 1 and files[0].endswith(".json")
    assert os.path.commonpath([root, private_cache]) != root
    warm, warm_bytes, warm_files, warm_note = measured()
    assert warm == cold and len(cold) == 1
    assert warm_bytes < cold_bytes / 4
    assert warm_files == 0 < cold_files  # every verdict cached: no queue is opened
    assert warm_note is None
    with Store.open(root) as store:
        assert cold_files == len({p for t in store.topics() for q in store.queue_ids(t)
                                  for p in (s.path for s in store.consume_queue(t, q).segments)})
        queues = sum(len(store.queue_ids(t)) for t in store.topics())
    assert cold_note is not None and f"from the units of {queues} queue(s)" in cold_note


def test_deciding_reads_the_written_units_not_the_preallocated_zeros(tmp_path, private_cache: str) -> None:
    """A broker pre-allocates each queue file (6 MB by default, format §4.3): finding a queue's end and
    its units reads about what it holds, by positioned reads, never the zeros past it (design §4.5)."""
    builder = StoreBuilder(str(tmp_path / "store"), cq_units_per_segment=40_000)  # 800 KB files
    fill(builder, 400)
    prepared = _append_without_unit(builder, "TopicA", TRANSACTION_PREPARED)
    fill(builder, 10)
    with Store.open(builder.finish()) as store:
        assert store.max_offset > 0
        store.stats.reset()
        assert [a for a, _ in store.uncovered_ranges()] == [prepared.offset]
        queues = [store.consume_queue(t, q) for t in store.topics() for q in store.queue_ids(t)]
        files = sum(s.size for q in queues for s in q.segments)
        read = sum(n for p, n in store.stats.bytes_by_path.items() if os.sep + "consumequeue" + os.sep in p)
        written = sum(q.max_offset for q in queues) * CQ_UNIT_SIZE
    # each queue: its units and the lookahead past its end (damage.md §2), in windows growing from 20 KiB
    assert read <= 2 * (written + len(queues) * (FIRST_WINDOW_UNITS + UNIT_DAMAGE_LOOKAHEAD) * CQ_UNIT_SIZE)
    assert read < files / 10


def test_units_from_phy_reads_from_the_first_unit_at_or_past_it(builder: StoreBuilder) -> None:
    written = fill(builder, 120, queues=1)
    with Store.open(builder.finish()) as store:
        queue = store.consume_queue("TopicA", 0)
        every = queue.units()
        for first_phy in [0, *(w.offset for w in written[::7]), store.max_offset]:
            store.stats.reset()
            got = queue.units_from_phy(first_phy)
            assert got.tolist() == every[every["phy"] >= first_phy].tolist()
            assert store.stats.bytes_read <= CQ_UNIT_SIZE * (len(got) + 8)  # a bisection, then the units


def test_a_cached_verdict_is_used_until_its_segment_changes(builder: StoreBuilder,
                                                            private_cache: str) -> None:
    fill(builder, 300)
    root = builder.finish()
    with Store.open(root) as store:
        assert store.uncovered_ranges() == []
        first = store.segments[0]
        assert first.base_offset == 0
    (name,) = os.listdir(private_cache)
    path = os.path.join(private_cache, name)
    with open(path) as fh:
        doc = json.load(fh)
    doc["segments"][os.path.basename(first.path)][3:5] = [[[0, 100]], [[0, 40]]]  # pretend: uncovered
    with open(path, "w") as fh:
        json.dump(doc, fh)
    with Store.open(root) as store:
        assert store.uncovered_ranges() == [(0, 100)]  # the cache is read
        assert store.unindexed_ranges() == [(0, 40)]
    stat = os.stat(first.path)
    os.utime(first.path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    with Store.open(root) as store:
        assert store.uncovered_ranges() == []  # a changed segment is decided again


def test_a_pickled_store_decides_again(builder: StoreBuilder) -> None:
    fill(builder, 40)
    rec = _append_without_unit(builder, "TopicA", TRANSACTION_ROLLBACK)
    with Store.open(builder.finish()) as store:
        expected = store.uncovered_ranges()
        assert expected == [(rec.offset, store.max_offset)]
        copy = pickle.loads(pickle.dumps(store))
        assert copy.uncovered_ranges() == expected
        assert _queue_units(copy) == 40


def test_scan_ranges_equals_scanning_each_range(builder: StoreBuilder, monkeypatch) -> None:
    written = fill(builder, 80)
    with Store.open(builder.finish()) as store:
        ranges = [(w.offset, w.offset + w.size) for w in written[3:60:4]]
        ranges.append((written[61].offset, written[70].offset))  # several records, crossing segments
        ranges.append((written[75].offset, store.max_offset + 50))  # clipped at the valid end
        columns = ["commitLogOffset", "topic", "keys", "body"]
        expected = [r for a, b in ranges for batch in store.scan(a, b, columns) for r in batch.to_pylist()]
        assert _segment_of(store, written[61].offset) != _segment_of(store, written[70].offset)

        def by_offset(batches) -> list[dict]:
            rows = [r for batch in batches for r in batch.to_pylist()]
            return sorted(rows, key=lambda r: r["commitLogOffset"])

        assert by_offset(store.scan_ranges(ranges, columns)) == expected and len(expected) == 15 + 9 + 5
        monkeypatch.setattr("rmqstore.store.records.GATHER_RANGE_BYTES", 0)  # every range by `scan`
        assert by_offset(store.scan_ranges(ranges, columns)) == expected
