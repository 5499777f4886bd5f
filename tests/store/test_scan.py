"""Scans of physical ranges: split segment spans + scan cover every record once, columns, read_offsets."""

from __future__ import annotations

from itertools import pairwise

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.store_builder import StoreBuilder, fill, tree_digest
from rmqstore.format.table import COLUMN_NAMES
from rmqstore.plan.tasks import split_spans
from rmqstore.store import Store, StoreCorruptionError
from rmqstore.store.commitlog import RESYNC_FIRST_WINDOW, TAIL_SLACK


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    b = StoreBuilder(str(tmp_path_factory.mktemp("scan") / "store"), segment_size=4096)
    written = fill(b, 150)
    b.append("TopicA", b"y" * 3000, keys="big")  # a record far larger than small ranges
    written = b.written
    b.finish(guard=False)
    digest = tree_digest(b.root)
    yield b, written
    assert tree_digest(b.root) == digest


def _offsets(batches):
    return [o for b in batches for o in b.column("commitLogOffset").to_pylist()]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(max_bytes=st.integers(min_value=1, max_value=20_000))
def test_split_ranges_cover_every_record_exactly_once(built, max_bytes):
    b, written = built
    store = Store.open(b.root)
    ranges = split_spans(store.segment_spans(), max_bytes)
    assert ranges[0][0] == store.min_offset and ranges[-1][1] == store.max_offset
    assert all(lo < hi and hi - lo <= max_bytes for lo, hi in ranges)
    assert all(a[1] == b_[0] for a, b_ in pairwise(ranges))
    assert all(lo // 4096 == (hi - 1) // 4096 for lo, hi in ranges)  # never across segments
    got = [o for lo, hi in ranges for o in _offsets(store.scan(lo, hi, ["commitLogOffset"]))]
    assert got == [w.offset for w in written]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=st.integers(min_value=0, max_value=13_000), length=st.integers(min_value=0, max_value=6_000))
def test_a_range_owns_the_records_starting_in_it(built, a, length):
    b, written = built
    store = Store.open(b.root)
    assert _offsets(store.scan(a, a + length, ["commitLogOffset"])) == [
        w.offset for w in written if a <= w.offset < a + length
    ]


def test_full_rows_match_what_was_written(built):
    b, written = built
    store = Store.open(b.root)
    table = pa.Table.from_batches(list(store.scan()))
    assert table.schema.names == list(COLUMN_NAMES)
    rows = table.to_pylist()
    assert len(rows) == len(written)
    for row, w in zip(rows, written, strict=True):
        assert (row["topic"], row["queueId"], row["queueOffset"], row["commitLogOffset"], row["storeSize"],
                row["key"], row["uniqKey"], row["tags"], row["body"]) == (
            w.topic, w.queue_id, w.queue_offset, w.offset, w.size, w.keys, w.uniq_key, w.tags, w.body)
    assert store.stats.records_decoded == len(written)


def test_column_subset_and_batch_rows(built):
    b, written = built
    store = Store.open(b.root)
    batches = list(store.scan(columns=["tags", "commitLogOffset"], batch_rows=10))
    assert all(batch.schema.names == ["tags", "commitLogOffset"] for batch in batches)
    assert max(batch.num_rows for batch in batches) == 10
    assert _offsets(batches) == [w.offset for w in written]
    with pytest.raises(ValueError, match="nope"):
        list(store.scan(columns=["nope"]))
    with pytest.raises(ValueError, match="mode"):
        list(store.scan(mode="LENIENT"))


def test_read_offsets(built):
    b, written = built
    store = Store.open(b.root)
    picked = [written[40].offset, written[3].offset, written[-1].offset, written[3].offset]
    batch = store.read_offsets(picked, ["commitLogOffset", "uniqKey"])
    assert batch.column(0).to_pylist() == sorted({written[i].offset for i in (3, 40, -1)})
    assert batch.column(1).to_pylist() == [written[3].uniq_key, written[40].uniq_key, written[-1].uniq_key]
    assert store.read_offsets([], ["topic"]).num_rows == 0
    beyond = [store.max_offset, store.max_offset + 10_000, -5]
    assert store.read_offsets(beyond).num_rows == 0  # nothing is stored there
    not_a_start = written[5].offset + 3
    with pytest.raises(StoreCorruptionError, match=str(not_a_start)):
        store.read_offsets([not_a_start])
    assert store.read_offsets([not_a_start, written[5].offset], strict=False).num_rows == 1
    assert store.read_offsets([not_a_start], mode="PERMISSIVE").num_rows == 0
    assert store.stats.invalid_records_skipped == 1


def test_every_single_offset_reads_back(built):
    b, written = built
    store = Store.open(b.root)
    batch = store.read_offsets([w.offset for w in written], ["commitLogOffset", "storeSize"])
    assert batch.column(0).to_pylist() == [w.offset for w in written]
    assert batch.column(1).to_pylist() == [w.size for w in written]


def test_pushdown_reads_only_the_segment_it_needs(built):
    b, written = built
    store = Store.open(b.root)
    _ = store.max_offset
    store.stats.reset()
    target = next(w for w in written if w.offset >= 8192)
    store.read_offsets([target.offset], ["topic"])
    assert store.stats.segments_touched == {8192} and store.stats.records_decoded == 1
    assert store.stats.bytes_read < 8192


def test_small_range_reads_about_its_own_bytes(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), segment_size=1 << 20)
    for i in range(2000):
        b.append("T", b"r" * (200 + i % 300), keys=f"k{i}")
    b.finish()
    store = Store.open(b.root)
    _ = store.max_offset
    lo, hi = 300_001, 500_000
    store.stats.reset()
    offsets = _offsets(store.scan(lo, hi, ["commitLogOffset"]))
    assert offsets == [w.offset for w in b.written if lo <= w.offset < hi]
    # The range, the slack for the record crossing its end and one small resync read; not a 64 MiB window
    # (the rest of the segment) nor the range twice.
    assert store.stats.bytes_read <= (hi - lo) + TAIL_SLACK + RESYNC_FIRST_WINDOW
