"""The valid end of the log (§2.12): torn tails, garbage, zeros, lengths past the end, pre-allocation."""

from __future__ import annotations

import os
import struct

import pytest

from helpers.store_builder import StoreBuilder, fill
from rmqstore.plan.tasks import split_spans
from rmqstore.store import Store, StoreCorruptionError


def _offsets(store, **kwargs):
    return [o for b in store.scan(columns=["commitLogOffset"], **kwargs) for o in b.column(0).to_pylist()]


def _patch(root, base, pos, data):
    """Damage a built store (before the guard hashes it) at a segment position."""
    path = os.path.join(root, "commitlog", f"{base:020d}")
    with open(path, "r+b") as fh:
        fh.seek(pos)
        fh.write(data)


@pytest.fixture
def two_segments(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), segment_size=2048)
    written = fill(b, 30)
    assert b.cursor > 2 * 2048
    return b, written


def test_clean_store_ends_after_the_last_record(two_segments):
    b, written = two_segments
    b.finish()
    store = Store.open(b.root)
    assert store.max_offset == written[-1].offset + written[-1].size
    assert _offsets(store) == [w.offset for w in written]
    assert len(store.segments) == len(b.segments)  # the pre-allocated zero segment is listed, but empty


@pytest.mark.parametrize("damage", ["torn", "zeros", "garbage", "length_past_end", "bad_crc"])
def test_damaged_tail_ends_the_log_without_error(two_segments, damage):
    b, written = two_segments
    last = written[-1]
    base = last.offset - last.offset % b.segment_size
    pos = last.offset - base
    seg = b.segments[base]
    if damage == "torn":
        seg[pos + last.size // 2 : pos + last.size] = bytes(last.size - last.size // 2)
        seg[pos + 2 :pos + 4] = b"\x7f\x7f"  # and a TOTALSIZE that no longer adds up
    elif damage == "zeros":
        seg[pos : pos + last.size] = bytes(last.size)
    elif damage == "garbage":
        seg[pos : pos + last.size] = bytes((i * 7 + 3) % 256 for i in range(last.size))
    elif damage == "length_past_end":
        seg[pos : pos + 4] = struct.pack(">i", b.segment_size * 4)
    else:
        seg[pos + last.size - 30] ^= 0xFF  # inside the body: only BODYCRC notices
        seg[pos + 88] ^= 0xFF
    b.finish()
    store = Store.open(b.root)
    assert store.max_offset == last.offset
    assert _offsets(store) == [w.offset for w in written[:-1]]
    assert "invalid" in store.log_end.reason


def test_crc_is_not_checked_at_the_end_when_disabled(two_segments):
    b, written = two_segments
    last = written[-1]
    base = last.offset - last.offset % b.segment_size
    b.segments[base][last.offset - base + 88] ^= 0xFF
    b.finish()
    assert Store.open(b.root, check_crc_at_end=False).max_offset == last.offset + last.size


def test_several_preallocated_zero_segments(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), segment_size=1024)
    written = fill(b, 5)
    last_base = max(b.segments)
    for extra in (1, 2, 3):
        b.segments[last_base + extra * 1024] = bytearray(1024)
    b.finish()
    store = Store.open(b.root)
    assert store.max_offset == written[-1].offset + written[-1].size
    assert split_spans(store.segment_spans(), 10_000)[-1][1] == store.max_offset


def test_segment_ending_in_blank_ends_at_its_end(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), segment_size=1024)
    fill(b, 5)
    base = max(b.segments)
    left = base + 1024 - b.cursor
    from rmqstore.format.record import encode_blank

    b._put(b.cursor, encode_blank(left))
    b.finish(preallocate=False)
    assert Store.open(b.root).max_offset == base + 1024


def test_invalid_record_in_an_older_segment(two_segments):
    b, written = two_segments
    victim = next(w for w in written if w.offset < 2048 and w.offset > 0)
    b.segments[0][victim.offset : victim.offset + 8] = b"\xde\xad\xbe\xef" * 2
    b.finish()
    store = Store.open(b.root)
    assert store.max_offset == written[-1].offset + written[-1].size  # the end is not moved
    with pytest.raises(StoreCorruptionError) as info:
        _offsets(store)
    assert info.value.offset == victim.offset and "00000000000000000000" in info.value.path
    assert str(victim.offset) in str(info.value) and "magic" in str(info.value)
    got = _offsets(store, mode="PERMISSIVE")
    assert got == [w.offset for w in written if w.offset != victim.offset]  # resumes after the damage
    assert store.stats.invalid_records_skipped == 1 and store.stats.bytes_skipped == victim.size
    assert any(str(victim.offset) in p for p in store.problems)


def _flip(root, base, pos):
    """Flip a byte of a written store in place (inside a record's body: only BODYCRC notices)."""
    path = os.path.join(root, "commitlog", f"{base:020d}")
    with open(path, "r+b") as fh:
        fh.seek(pos)
        byte = fh.read(1)[0]
        fh.seek(pos)
        fh.write(bytes([byte ^ 0xFF]))


def _age(root, seconds=60):
    """Set every commit-log file's mtime `seconds` back (files the broker last wrote a while ago)."""
    then = os.stat(root).st_mtime - seconds
    for name in os.listdir(os.path.join(root, "commitlog")):
        os.utime(os.path.join(root, "commitlog", name), (then, then))


def test_a_local_walk_for_the_end_resumes_where_it_ended(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), segment_size=1 << 20)
    written = fill(b, 400)
    b.index_files.clear()  # no index: the walk starts at the segment's start, not at the last indexed record
    b.finish(guard=False)  # the test writes the store again
    _age(b.root)
    first = Store.open(b.root)
    end = written[-1].offset + written[-1].size
    assert first.max_offset == end and first.stats.records_walked > 300
    again = Store.open(b.root)
    assert again.max_offset == end and again.stats.records_walked == 0  # only the invalid record at the end
    # A record before the end damaged in place (a newer mtime): walked from the start again, to the damaged
    # record; without `abort` the valid records after it make it damage, not the end (damage.md §2).
    victim = written[-5]
    _flip(b.root, victim.offset - victim.offset % (1 << 20), victim.offset % (1 << 20) + 88)
    _age(b.root, 30)
    damaged = Store.open(b.root)
    assert damaged.max_offset == end and damaged.stats.records_walked > 300
    assert f"first invalid record at position {victim.offset}" in damaged.log_end.reason


def test_a_local_walk_is_not_remembered_while_its_file_is_fresh(tmp_path):
    """A write in the same mtime tick as a walk could leave the mtime as the walk saw it."""
    b = StoreBuilder(str(tmp_path / "store"), segment_size=1 << 20)
    written = fill(b, 400)
    b.index_files.clear()  # no index: the walk starts at the segment's start
    b.finish(guard=False)
    end = written[-1].offset + written[-1].size
    assert Store.open(b.root).max_offset == end
    victim = written[-5]
    _flip(b.root, victim.offset - victim.offset % (1 << 20), victim.offset % (1 << 20) + 88)
    again = Store.open(b.root)
    assert again.max_offset == end and again.stats.records_walked > 300  # damage, not the end: damage.md §2
    assert f"first invalid record at position {victim.offset}" in again.log_end.reason


# ---- the walk starts at the last indexed record (E = endPhyOffset of the newest index file) ----------

SEG = 1 << 20


def _indexed_store(tmp_path, records=400, unindexed=0):
    """A store of one 1 MiB segment (plus the pre-allocated one): `records` keyed records (in the index),
    then `unindexed` records without keys (past the index's end). Not yet finished."""
    b = StoreBuilder(str(tmp_path / "store"), segment_size=SEG)
    written = fill(b, records)
    written += [b.append("TopicA", b"u" * 40) for _ in range(unindexed)]
    return b, written


def _last_indexed(b):
    return b.index_files[-1].header.end_phy_offset


def _segment_bytes_read(store, base=0):
    return store.stats.bytes_by_path[os.path.join(store.path, "commitlog", f"{base:020d}")]


def test_the_walk_for_the_end_starts_at_the_last_indexed_record(tmp_path):
    b, written = _indexed_store(tmp_path, unindexed=3)
    assert _last_indexed(b) == written[-4].offset
    b.finish()
    store = Store.open(b.root)
    assert store.max_offset == written[-1].offset + written[-1].size
    assert store.stats.records_walked == 4  # the record at E and the three after it, not the 403
    assert _segment_bytes_read(store) < 64 << 10  # windows from E, not the 1 MiB segment
    assert _offsets(store) == [w.offset for w in written]


def test_without_index_files_the_walk_starts_at_the_segment_start(tmp_path):
    b, written = _indexed_store(tmp_path)
    b.index_files.clear()
    b.finish()
    store = Store.open(b.root)
    assert store.max_offset == written[-1].offset + written[-1].size
    assert store.stats.records_walked == len(written)


@pytest.mark.parametrize("lost", ["zeros", "moved"])
def test_a_last_indexed_record_that_is_gone_is_not_trusted(tmp_path, lost):
    """The index outlived lost log pages (its last records are zeros, or hold another record whose
    PHYSICALOFFSET is not E): the walk starts at the segment start and ends where the pages were lost."""
    b, written = _indexed_store(tmp_path)
    first_lost = written[-3]
    seg = b.segments[0]
    seg[first_lost.offset : written[-1].offset + written[-1].size] = bytes(
        written[-1].offset + written[-1].size - first_lost.offset)
    if lost == "moved":  # a valid record at E, but written for another place
        donor, at = written[-10], written[-1].offset
        seg[at : at + donor.size] = seg[donor.offset : donor.offset + donor.size]
    b.finish()
    store = Store.open(b.root)
    assert store.max_offset == first_lost.offset
    assert store.stats.records_walked == len(written) - 3
    assert _offsets(store) == [w.offset for w in written[:-3]]


def test_a_torn_tail_after_the_last_indexed_record_ends_the_log(tmp_path):
    b, written = _indexed_store(tmp_path, unindexed=5)
    torn = written[-1]  # the last record: with a valid one after it, it would be damage (damage.md §2)
    b.segments[0][torn.offset + torn.size // 2 : torn.offset + torn.size] = bytes(torn.size - torn.size // 2)
    b.finish()
    store = Store.open(b.root)
    assert store.max_offset == torn.offset and "invalid" in store.log_end.reason
    assert store.stats.records_walked == 5  # from E (written[-6]) to the torn record
    assert _offsets(store) == [w.offset for w in written[:-1]]


def test_a_failing_record_that_valid_records_follow_is_damage_without_abort(tmp_path):
    """A clean shutdown leaves no torn write: a half-zeroed record with a whole one after it is damage,
    reported by FAILFAST, stepped over by PERMISSIVE; the end is after the last record (damage.md §2)."""
    b, written = _indexed_store(tmp_path, unindexed=5)
    torn = written[-2]
    b.segments[0][torn.offset + torn.size // 2 : torn.offset + torn.size] = bytes(torn.size - torn.size // 2)
    b.finish()
    store = Store.open(b.root)
    assert store.max_offset == written[-1].offset + written[-1].size and store.log.after_end().records == 0
    assert "damage.md §2" in store.log_end.reason
    with pytest.raises(StoreCorruptionError, match=f"offset {torn.offset}"):
        _offsets(store)
    permissive = Store.open(b.root)
    assert _offsets(permissive, mode="PERMISSIVE") == [w.offset for w in written if w is not torn]
    assert (permissive.stats.invalid_records_skipped, permissive.stats.bytes_skipped) == (1, torn.size)


def test_damage_before_the_last_indexed_record_is_reported_when_read(tmp_path):
    """Records before E in the active segment are checked when read, like older segments' records: the
    end stays where the walk from E found it."""
    b, written = _indexed_store(tmp_path)
    victim = written[-50]
    b.segments[0][victim.offset : victim.offset + 8] = b"\xde\xad\xbe\xef" * 2
    b.finish()
    store = Store.open(b.root)
    assert store.max_offset == written[-1].offset + written[-1].size  # not moved to the damage
    assert store.stats.records_walked == 1
    with pytest.raises(StoreCorruptionError) as info:
        _offsets(store)
    assert info.value.offset == victim.offset and info.value.path.endswith(f"{0:020d}")
    assert str(victim.offset) in str(info.value) and "magic" in str(info.value)
    got = _offsets(store, mode="PERMISSIVE")
    assert got == [w.offset for w in written if w.offset != victim.offset]
    assert store.stats.invalid_records_skipped == 1 and store.stats.bytes_skipped == victim.size
    assert store.max_offset == written[-1].offset + written[-1].size


def test_a_last_indexed_record_in_an_older_segment_starts_the_walk_at_the_segment_start(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), segment_size=2048)
    keyed = [b.append("T", b"k" * 50, keys=f"k{i}") for i in range(8)]
    rest = []
    while not rest or rest[-1].offset < 2048 or len([w for w in rest if w.offset >= 2048]) < 6:
        rest.append(b.append("T", b"u" * 50))
    b.finish()
    assert _last_indexed(b) == keyed[-1].offset < 2048
    store = Store.open(b.root)
    assert store.max_offset == rest[-1].offset + rest[-1].size
    assert store.stats.records_walked == sum(1 for w in rest if w.offset >= 2048)  # all of the active one


def test_a_remembered_end_further_than_the_last_indexed_record_wins(tmp_path):
    b, written = _indexed_store(tmp_path, unindexed=30)
    b.finish()
    _age(b.root)
    end = written[-1].offset + written[-1].size
    first = Store.open(b.root)
    assert first.max_offset == end and first.stats.records_walked == 31
    again = Store.open(b.root)
    assert again.max_offset == end and again.stats.records_walked == 0


def test_older_records_past_the_end_are_a_restarted_brokers_leftovers_not_damage(tmp_path):
    """A broker restarted after a crash writes over the recovered end and may stop (a clean shutdown)
    before reaching the older records past it: those leftovers are no sign of damage, the end stays
    where the walk stopped and `after_end` names them (damage.md §2)."""
    old = StoreBuilder(str(tmp_path / "old"), segment_size=SEG)
    fill(old, 60)
    b = StoreBuilder(str(tmp_path / "store"), segment_size=SEG)
    written = [b.append("TopicA", b"n" * 63, store_ts=10**13 + i) for i in range(20)]
    end = b.cursor
    assert end not in {w.offset for w in old.written} and end < old.cursor
    b.segments[0][end:old.cursor] = old.segments[0][end:old.cursor]
    b.finish()
    store = Store.open(b.root)
    assert store.max_offset == end
    after = store.log.after_end()
    assert after.records == len([w for w in old.written if w.offset > end]) > 0
    assert _offsets(store) == [w.offset for w in written]
