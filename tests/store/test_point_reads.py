"""`Store.read_offsets` over both point readers (the compiled one and its oracle, `format.points`):
same rows as a scan, errors naming file and offset, PERMISSIVE counts, what was read."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from store_builder import StoreBuilder, fill

from rmqstore.format import kernels
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
    check_starts = kernels.check_starts
    monkeypatch.setattr(kernels, "check_starts",
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
