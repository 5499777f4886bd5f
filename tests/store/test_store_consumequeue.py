"""Consume queues: units with queue offsets, fillers, bounds against the log, tags candidates."""

from __future__ import annotations

import os

import pytest

from helpers.store_builder import StoreBuilder, fill
from rmqstore.format.consumequeue import UNIT_DAMAGE_LOOKAHEAD, encode_unit
from rmqstore.format.javahash import tags_code
from rmqstore.plan.execute import ReadSettings, run_task
from rmqstore.plan.tasks import QueueSlice, QueueSliceTask
from rmqstore.store import InvalidTopicError, Store, StoreCorruptionError


@pytest.fixture
def built(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), segment_size=2048, cq_units_per_segment=4)
    written = fill(b, 40, queues=3)
    return b, written


def test_units_match_the_written_records(built):
    b, written = built
    b.finish()
    store = Store.open(b.root)
    assert store.topics() == ["TopicA", "TopicB"] and store.queue_ids("TopicA") == [0, 1, 2]
    for topic in ("TopicA", "TopicB"):
        for qid in range(3):
            expect = [w for w in written if (w.topic, w.queue_id) == (topic, qid)]
            cq = store.consume_queue(topic, qid)
            assert (cq.min_offset, cq.max_offset) == (0, len(expect))
            units = cq.units()
            assert units["queue_offset"].tolist() == list(range(len(expect)))
            assert units["phy"].tolist() == [w.offset for w in expect]
            assert units["size"].tolist() == [w.size for w in expect]
            assert units["tags_code"].tolist() == [tags_code(w.tags) for w in expect]
            assert cq.units(2, 5)["queue_offset"].tolist() == [q for q in range(2, 5) if q < len(expect)]


def test_fillers_are_skipped(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), cq_units_per_segment=4)
    recs = [b.append("T", keys=f"k{i}") for i in range(3)]
    b.queues[("T", 0)] = [encode_unit(0, 0x7FFFFFFF, 0)] * 6 + b.queues[("T", 0)]
    b.finish()
    cq = Store.open(b.root).consume_queue("T", 0)
    assert (cq.min_offset, cq.max_offset) == (6, 9)
    assert cq.units()["phy"].tolist() == [r.offset for r in recs]
    assert cq.units(0, 7)["queue_offset"].tolist() == [6]


def test_units_before_the_log_min_or_after_its_end_are_gone(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), segment_size=1024, first_offset=0, cq_units_per_segment=4)
    written = [b.append("T", b"z" * 200) for _ in range(12)]
    cut = next(w for w in written if w.offset >= 2048)
    b.queues[("T", 0)].append(encode_unit(b.cursor + 5000, 300, 0))  # points past the valid end
    b.finish()
    for base in [s for s in list(b.segments) if s < 2048]:
        import os

        os.remove(b.commitlog_path(base))  # retention deleted the oldest segments
    from helpers.store_builder import _GUARDED, tree_digest

    _GUARDED[-1] = (b.root, tree_digest(b.root))
    store = Store.open(b.root)
    cq = store.consume_queue("T", 0)
    assert cq.min_offset == cut.queue_offset and cq.max_offset == len(written)
    assert cq.units()["phy"].tolist() == [w.offset for w in written if w.offset >= 2048]


def test_tags_candidates(built):
    b, written = built
    b.finish()
    store = Store.open(b.root)
    cq = store.consume_queue("TopicA", 1)  # records i = 4, 10, 16, ...: TAGS Tag1
    expect = [w.offset for w in written if (w.topic, w.queue_id) == ("TopicA", 1)]
    assert expect and cq.units(tags=["Tag1"])["phy"].tolist() == expect
    assert cq.units(tags=["Tag0", "Tag2"]).size == 0
    mixed = store.consume_queue("TopicB", 0)  # i = 3, 9, 15, ...: Tag0
    assert mixed.units(tags=["Tag0", "Tag1"]).size == mixed.units().size > 0


def test_topic_names_that_escape_the_store_are_rejected(built, tmp_path):
    b, _ = built
    b.finish()
    store = Store.open(b.root)
    for bad in ("..", "../TopicA", "a/b", "a\\b", "/etc", ".", ""):
        with pytest.raises(InvalidTopicError, match="cannot be a directory"):
            store.consume_queue(bad, 0)
        with pytest.raises(InvalidTopicError):
            store.queue_ids(bad)


def test_bad_topic_names_in_topics_json_are_skipped(built):
    b, _ = built
    import os

    os.makedirs(os.path.join(b.root, "config"))
    with open(os.path.join(b.root, "config", "topics.json"), "w") as fh:
        fh.write('{"topicConfigTable":{"../../etc":{"topicName":"../../etc"},"Other":{"topicName":"Other"}}}')
    b.finish()
    store = Store.open(b.root)
    assert store.topics() == ["Other", "TopicA", "TopicB"]
    assert any("../../etc" in p for p in store.problems)
    assert store.consume_queue("Other", 0).units().size == 0


def test_end_bound_counts_units_by_file_names_and_a_bisection_of_the_last_file(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), segment_size=1 << 20, cq_units_per_segment=64)
    for _ in range(150):  # files at units 0 and 64 (full), 128 (22 units, then zeros)
        b.append("T", b"x", queue_id=0)
    b.finish()
    store = Store.open(b.root)
    cq = store.consume_queue("T", 0)
    path = cq.segments[-1].path

    def reads(call):
        before = dict(store.stats.bytes_by_path), store.stats.read_calls
        value = call()
        assert set(store.stats.bytes_by_path) <= set(before[0]) | {path}  # only the last file is read
        read = store.stats.bytes_by_path[path] - before[0].get(path, 0)
        return value, store.stats.read_calls - before[1], read

    assert reads(cq.end_bound) == (150, 7, 7 * 20)  # unit 63 is zero: bisection of [0, 63)
    assert reads(lambda: cq.end_bound(140)) == (140, 1, 20)  # unit 11 of the last file is valid
    assert reads(lambda: cq.end_bound(100)) == (128, 0, 0)  # the last file starts past 100
    assert reads(lambda: cq.end_bound(1000)) == (150, 7, 7 * 20)
    assert cq.end_bound() == cq.max_offset


@pytest.mark.parametrize(("zeros", "end"),
                         [(1, 11), (UNIT_DAMAGE_LOOKAHEAD - 1, 1033), (UNIT_DAMAGE_LOOKAHEAD, 3)])
def test_an_invalid_unit_that_valid_units_follow_is_damage(tmp_path, zeros, end):
    """docs/damage.md §2, §3: fewer than `UNIT_DAMAGE_LOOKAHEAD` invalid units with valid ones after them are
    damage inside the queue, which ends at its last valid unit; as many end the queue. A queue slice read
    fails FAILFAST naming the file, the unit's byte and queue offset, or counts one record each PERMISSIVE."""
    b = StoreBuilder(str(tmp_path / "store"), cq_units_per_segment=2048)
    written = [b.append("T").offset for _ in range(10)]
    units = b.queues[("T", 0)]
    b.queues[("T", 0)] = units[:3] + [encode_unit(0, 0, 0)] * zeros + units[3:]
    b.finish()
    with Store.open(b.root) as store:
        cq = store.consume_queue("T", 0)
        assert cq.max_offset == end
        damage: list = []
        kept = cq.slice_units(0, end, damage=damage)
        assert kept["phy"].tolist() == (written if end > 3 else written[:3])
        assert [d.queue_offset for d in damage] == (list(range(3, 3 + zeros)) if end > 3 else [])
        if end == 3:
            return
        assert damage[0].path.endswith(f"T{os.sep}0{os.sep}{0:020d}") and damage[0].position == 60
        task = QueueSliceTask(0, (QueueSlice("T", 0, 0, end),), None, None, None)
        named = r"00000000000000000000: at physical offset 60: .*offset 3 "
        with pytest.raises(StoreCorruptionError, match=named):
            list(run_task(task, store, ["commitLogOffset"], ReadSettings()))
        rows = [r for b in run_task(task, store, ["commitLogOffset"], ReadSettings(mode="PERMISSIVE"))
                for r in b.column(0).to_pylist()]
        assert rows == written and store.stats.invalid_records_skipped == zeros
