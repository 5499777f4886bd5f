"""`Store.read_offsets` over both point readers (the compiled one and its oracle, `format.points`):
same rows as a scan, errors naming file and offset, PERMISSIVE counts, what was read."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from helpers.store_builder import StoreBuilder, fill
from rmqstore.format import points as format_points
from rmqstore.format.compression import COMPRESSION_ZLIB, compressed_sys_flag
from rmqstore.format.kernels import points as point_kernels
from rmqstore.format.points import point_reader
from rmqstore.format.table import COLUMN_NAMES
from rmqstore.store import Store, StoreCorruptionError
from rmqstore.store import points as store_points
from rmqstore.store.commitlog import PROBE_BYTES

SEGMENT = 64 << 10


@pytest.fixture(params=["compiled", "reference"])
def open_store(request):
    """Store.open with the point reader of this parametrization."""

    def open_(root: str) -> Store:
        store = Store.open(root)
        store.point_reader = point_reader(request.param)
        return store

    return open_


@pytest.fixture
def built(tmp_path) -> StoreBuilder:
    b = StoreBuilder(str(tmp_path / "store"), segment_size=SEGMENT)
    fill(b, 300)
    b.finish()
    return b


def test_rows_equal_the_scan_rows(built: StoreBuilder, open_store) -> None:
    store = open_store(built.root)
    picked = [w.offset for w in built.written[::3]]
    scanned = pa.Table.from_batches(list(store.scan()))
    expected = scanned.filter(pa.compute.is_in(scanned["commitLogOffset"], pa.array(picked)))
    got = store.read_offsets(list(reversed(picked)) + picked[:5])  # any order, repeats once
    assert got.schema.names == list(COLUMN_NAMES)
    assert pa.Table.from_batches([got]).to_pylist() == expected.to_pylist()


def test_batches_in_offset_order_without_concat(built: StoreBuilder, open_store) -> None:
    store = open_store(built.root)
    offsets = [w.offset for w in built.written]
    batches = list(store.read_offsets_batches(offsets, ["commitLogOffset"], batch_rows=40))
    assert max(b.num_rows for b in batches) == 40
    assert [o for b in batches for o in b.column(0).to_pylist()] == offsets
    assert store.stats.records_decoded == len(offsets)


def test_an_offset_that_is_no_record_start_names_file_and_offset(built: StoreBuilder, open_store) -> None:
    store = open_store(built.root)
    w = built.written
    inside = w[10].offset + 5
    with pytest.raises(StoreCorruptionError) as info:
        store.read_offsets([w[9].offset, inside, w[11].offset])
    assert info.value.offset == inside and os.path.basename(info.value.path) == f"{0:020d}"
    assert "PHYSICALOFFSET" in str(info.value) or "magic" in str(info.value)
    got = store.read_offsets([w[9].offset, inside, w[11].offset, inside + 1], ["commitLogOffset"],
                             mode="PERMISSIVE")
    assert got.column(0).to_pylist() == [w[9].offset, w[11].offset]
    assert store.stats.invalid_records_skipped == 2
    assert sorted(o for _, o in store.stats.skipped) == [inside, inside + 1]
    lenient = open_store(built.root)
    assert lenient.read_offsets([inside, w[11].offset], ["commitLogOffset"], strict=False).num_rows == 1
    assert lenient.stats.invalid_records_skipped == 0


def test_a_record_cut_by_the_window_is_read_whole(tmp_path, open_store) -> None:
    b = StoreBuilder(str(tmp_path / "store"), segment_size=SEGMENT)
    fill(b, 20)
    big = b.append("TopicA", bytes(range(256)) * 40, keys="big")  # 10 KiB: past the PROBE_BYTES window
    fill(b, 20)
    b.finish()
    store = open_store(b.root)
    _ = store.max_offset
    store.stats.reset()
    got = store.read_offsets([b.written[3].offset, big.offset], ["commitLogOffset", "body"])
    assert got.column("body").to_pylist()[1] == big.body
    span = big.offset + big.size - b.written[3].offset
    assert span > PROBE_BYTES and store.stats.bytes_read <= 2 * span + PROBE_BYTES


def test_crc_checked_on_request(tmp_path, open_store) -> None:
    b = StoreBuilder(str(tmp_path / "store"), segment_size=SEGMENT)
    fill(b, 10)
    victim = b.append("TopicA", b"the body whose CRC no longer matches")
    fill(b, 300)  # on into a second segment: the valid end (found with CRCs) stays after the victim
    segment = b.segments[0]
    at = segment.index(victim.body, victim.offset)
    segment[at] ^= 0xFF
    b.finish()
    store = open_store(b.root)
    assert store.read_offsets([victim.offset], ["commitLogOffset"]).num_rows == 1
    with pytest.raises(StoreCorruptionError, match="BODYCRC") as info:
        store.read_offsets([victim.offset], ["commitLogOffset"], check_crc=True)
    assert info.value.offset == victim.offset


def test_one_check_call_and_one_read_per_run(built: StoreBuilder, monkeypatch) -> None:
    """Offsets of one segment close together: one read and one compiled check for all of them, and
    only the records asked for are decoded."""
    store = Store.open(built.root)
    _ = store.max_offset
    calls = []
    check_starts = point_kernels.check_starts
    monkeypatch.setattr(point_kernels, "check_starts",
                        lambda *args: calls.append(len(args[1])) or check_starts(*args))
    first_segment = [w for w in built.written if w.offset + w.size <= SEGMENT]
    picked = [w.offset for w in first_segment[::2]]
    store.stats.reset()
    assert store.read_offsets(picked, ["commitLogOffset"]).num_rows == len(picked)
    assert calls == [len(picked)]
    assert store.stats.read_calls == 1 and store.stats.records_decoded == len(picked)
    assert store.stats.bytes_read <= picked[-1] - picked[0] + PROBE_BYTES


def test_parts_bound_the_window(built: StoreBuilder, open_store, monkeypatch) -> None:
    """A segment's offsets are read in parts spanning at most the log's window (memory bound); the
    rows are the same, one read per part."""
    monkeypatch.setattr(store_points, "LOCAL_WINDOW", 4096)
    store = open_store(built.root)
    _ = store.max_offset
    first_segment = [w.offset for w in built.written if w.offset + w.size <= SEGMENT]
    store.stats.reset()
    got = store.read_offsets(first_segment, ["commitLogOffset"]).column(0).to_pylist()
    assert got == first_segment
    parts = len({(o - first_segment[0]) // 4096 for o in first_segment})
    assert parts > 3 and store.stats.read_calls == parts


def _count_decodes(store: Store, monkeypatch) -> list[int]:
    calls: list[int] = []
    decode = store.point_reader.decode
    monkeypatch.setattr(store.point_reader, "decode",
                        lambda buf, positions, *args, **kw: calls.append(len(positions)) or decode(
                            buf, positions, *args, **kw))
    return calls


def test_sparse_records_of_several_segments_decode_in_one_call(tmp_path, open_store, monkeypatch) -> None:
    """Every 10th record of four segments: copied together and decoded in one call, same rows as
    the scan; as are few records close together; many of those are decoded where they lie, one call
    per segment part."""
    b = StoreBuilder(str(tmp_path / "store"), segment_size=SEGMENT)
    fill(b, 700)
    b.finish()
    store = open_store(b.root)
    picked = [w.offset for w in b.written[::10]]
    assert len({o // SEGMENT for o in picked}) == 4
    scanned = pa.Table.from_batches(list(store.scan()))
    expected = scanned.filter(pa.compute.is_in(scanned["commitLogOffset"], pa.array(picked))).to_pylist()
    calls = _count_decodes(store, monkeypatch)
    assert pa.Table.from_batches([store.read_offsets(picked)]).to_pylist() == expected
    assert calls == [len(picked)]
    calls.clear()
    dense = [w.offset for w in b.written]
    assert store.read_offsets(dense, ["commitLogOffset"]).column(0).to_pylist() == dense
    assert calls == [len(dense)]
    calls.clear()
    monkeypatch.setattr(format_points, "FEW_RECORDS", 10)
    assert store.read_offsets(dense, ["commitLogOffset"]).column(0).to_pylist() == dense
    assert len(calls) == 4 and sum(calls) == len(dense)
    calls.clear()
    batches = list(store.read_offsets_batches(picked, ["commitLogOffset"], batch_rows=30))
    assert [b.num_rows for b in batches] == [30, 30, len(picked) - 60] and calls == [30, 30, len(picked) - 60]
    assert [o for batch in batches for o in batch.column(0).to_pylist()] == picked


def test_a_bad_body_among_sparse_records_names_its_segment(tmp_path, open_store) -> None:
    """A body that cannot be decompressed, in a batch copied together from two segments: the error
    names the second segment's file and the record's offset; PERMISSIVE leaves it out and counts it
    against that file."""
    b = StoreBuilder(str(tmp_path / "store"), segment_size=SEGMENT)
    fill(b, 250)
    bad = b.append("TopicA", b"a plain body, flagged zlib", sys_flag=compressed_sys_flag(COMPRESSION_ZLIB))
    fill(b, 100)
    b.finish()
    assert bad.offset >= SEGMENT
    picked = [w.offset for w in b.written[::10] if w is not bad] + [bad.offset]
    store = open_store(b.root)
    with pytest.raises(StoreCorruptionError) as info:
        store.read_offsets(picked, ["commitLogOffset", "body"])
    assert info.value.offset == bad.offset and os.path.basename(info.value.path) == f"{SEGMENT:020d}"
    got = store.read_offsets(picked, ["commitLogOffset"], mode="PERMISSIVE")  # body not decoded: kept
    assert bad.offset in got.column(0).to_pylist()
    got = store.read_offsets(picked, ["commitLogOffset", "body"], mode="PERMISSIVE")
    assert got.column(0).to_pylist() == sorted(set(picked) - {bad.offset})
    assert list(store.stats.skipped) == [(info.value.path, bad.offset)]
    assert store.stats.bytes_skipped == bad.size


def test_far_apart_offsets_are_read_by_positioned_reads(tmp_path, open_store, monkeypatch) -> None:
    """Offsets of a mapped segment that lie LOCAL_SPARSE_GAP apart on average: one gathered read of
    LOCAL_PROBE bytes per offset, and one more for the records longer than that (read whole); the
    rows are the scan's."""
    monkeypatch.setattr(store_points, "LOCAL_SPARSE_GAP", 2048)
    b = StoreBuilder(str(tmp_path / "store"), segment_size=SEGMENT)
    fill(b, 40)
    big = b.append("TopicA", bytes(range(256)) * 12, keys="big")  # 3 KiB: past LOCAL_PROBE
    fill(b, 60)
    b.finish()
    store = open_store(b.root)
    picked = [w.offset for w in b.written[::12] if w.offset + w.size <= SEGMENT] + [big.offset]
    picked.sort()
    assert (picked[-1] - picked[0]) / (len(picked) - 1) >= 2048
    scanned = pa.Table.from_batches(list(store.scan()))
    expected = scanned.filter(pa.compute.is_in(scanned["commitLogOffset"], pa.array(picked))).to_pylist()
    store.stats.reset()
    assert pa.Table.from_batches([store.read_offsets(picked)]).to_pylist() == expected
    assert store.stats.read_calls == len(picked) + 1
    assert store.stats.bytes_read == len(picked) * store_points.LOCAL_PROBE + big.size
    monkeypatch.setattr(store_points, "LOCAL_SPARSE_GAP", 1 << 30)
    store.stats.reset()
    assert pa.Table.from_batches([store.read_offsets(picked)]).to_pylist() == expected
    assert store.stats.read_calls == 1  # the mapped window
