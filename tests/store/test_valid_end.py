"""The valid end of the log (§2.12): torn tails, garbage, zeros, lengths past the end, pre-allocation."""

from __future__ import annotations

import os
import struct

import pytest
from store_builder import StoreBuilder, fill

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
    b.finish(guard=False)  # the test writes the store again
    _age(b.root)
    first = Store.open(b.root)
    end = written[-1].offset + written[-1].size
    assert first.max_offset == end and first.stats.records_walked > 300
    again = Store.open(b.root)
    assert again.max_offset == end and again.stats.records_walked == 0  # only the invalid record at the end
    # A record before the end damaged in place (a newer mtime): walked from the start again.
    victim = written[-5]
    _flip(b.root, victim.offset - victim.offset % (1 << 20), victim.offset % (1 << 20) + 88)
    _age(b.root, 30)
    damaged = Store.open(b.root)
    assert damaged.max_offset == victim.offset and damaged.stats.records_walked > 300


def test_a_local_walk_is_not_remembered_while_its_file_is_fresh(tmp_path):
    """A write in the same mtime tick as a walk could leave the mtime as the walk saw it."""
    b = StoreBuilder(str(tmp_path / "store"), segment_size=1 << 20)
    written = fill(b, 400)
    b.finish(guard=False)
    end = written[-1].offset + written[-1].size
    assert Store.open(b.root).max_offset == end
    victim = written[-5]
    _flip(b.root, victim.offset - victim.offset % (1 << 20), victim.offset % (1 << 20) + 88)
    again = Store.open(b.root)
    assert again.max_offset == victim.offset and again.stats.records_walked > 300
