"""Damaged records on every read path: errors name the segment file and the record's physical
offset (FAILFAST); PERMISSIVE steps over exactly the damaged bytes and counts them."""

from __future__ import annotations

import os
import random
import time

import pytest
import zstandard

from helpers.store_builder import StoreBuilder, Written, fill
from rmqstore.format.compression import compressed_sys_flag
from rmqstore.format.layout import (
    COMPRESSION_LZ4,
    COMPRESSION_ZLIB,
    COMPRESSION_ZSTD,
    TRANSACTION_ROLLBACK,
)
from rmqstore.plan.tasks import split_spans
from rmqstore.store import Store, StoreCorruptionError

SEGMENT = 32 << 10



def offsets_of(batches) -> list[int]:
    return sorted(o for b in batches for o in b.column("commitLogOffset").to_pylist())


def read_paths(store: Store, written: list[Written], mode: str) -> dict[str, list[int]]:
    """commitLogOffsets returned by scan, scan_ranges (one range per record) and read_offsets."""
    cols = ["commitLogOffset", "body"]
    return {
        "scan": offsets_of(store.scan(columns=cols, mode=mode)),
        "scan_ranges": offsets_of(store.scan_ranges([(w.offset, w.offset + w.size) for w in written], cols,
                                                    mode=mode)),
        "read_offsets": offsets_of([store.read_offsets([w.offset for w in written], cols, mode=mode)]),
    }


def test_empty_compressed_bodies_on_every_read_path(builder: StoreBuilder) -> None:
    fill(builder, 10)
    for kind in (0, COMPRESSION_LZ4, COMPRESSION_ZSTD, COMPRESSION_ZLIB):
        flag = compressed_sys_flag(kind) | TRANSACTION_ROLLBACK
        builder.append("RMQ_SYS_TRANS_HALF_TOPIC", b"", sys_flag=flag)
    fill(builder, 5)
    builder.finish()
    store = Store.open(builder.root)
    want = {w.offset: w.body for w in builder.written}
    ranges = [(w.offset, w.offset + w.size) for w in builder.written]
    for batches in (store.scan(), store.scan_ranges(ranges), [store.read_offsets(list(want))]):
        got = {o: b for batch in batches for o, b in zip(batch.column("commitLogOffset").to_pylist(),
                                                         batch.column("body").to_pylist(), strict=True)}
        assert got == want


@pytest.fixture
def bad_bodies(tmp_path) -> tuple[StoreBuilder, list[Written]]:
    """Good records around a flipped compression bit (a plain body marked zlib) and a zstd bomb
    (1 GiB of zeros in 32 KiB), all in the first segment."""
    b = StoreBuilder(str(tmp_path / "store"), segment_size=128 << 10)
    fill(b, 20)
    plain = b"a plain body, never compressed"
    flipped = b.append("TopicA", plain, sys_flag=compressed_sys_flag(COMPRESSION_ZLIB))
    fill(b, 20)
    zc = zstandard.ZstdCompressor(level=1, write_content_size=False).compressobj()
    bomb_body = b"".join(zc.compress(bytes(1 << 20)) for _ in range(1024)) + zc.flush()
    bomb = b.append("TopicA", bomb_body, sys_flag=compressed_sys_flag(COMPRESSION_ZSTD))
    fill(b, 20)
    b.finish()
    return b, [flipped, bomb]


@pytest.mark.parametrize("path", ["scan", "scan_ranges", "read_offsets"])
def test_corrupt_body_failfast_names_file_and_physical_offset(bad_bodies, path: str) -> None:
    b, (flipped, _) = bad_bodies
    store = Store.open(b.root)
    with pytest.raises(StoreCorruptionError) as info:
        read_paths_one(store, b.written, path, "FAILFAST")
    assert info.value.offset == flipped.offset
    assert os.path.basename(info.value.path) == f"{0:020d}"
    assert "compression type 3" in info.value.cause and str(flipped.offset) in str(info.value)


def read_paths_one(store: Store, written: list[Written], path: str, mode: str) -> list[int]:
    cols = ["commitLogOffset", "body"]
    if path == "scan":
        return offsets_of(store.scan(columns=cols, mode=mode))
    if path == "scan_ranges":
        ranges = [(w.offset, w.offset + w.size) for w in written]
        return offsets_of(store.scan_ranges(ranges, cols, mode=mode))
    return offsets_of([store.read_offsets([w.offset for w in written], cols, mode=mode)])


@pytest.mark.parametrize("path", ["scan", "scan_ranges", "read_offsets"])
def test_corrupt_bodies_permissive_skip_and_count(bad_bodies, path: str) -> None:
    b, bad = bad_bodies
    store = Store.open(b.root)
    began = time.monotonic()
    got = read_paths_one(store, b.written, path, "PERMISSIVE")
    assert time.monotonic() - began < 10, "the bomb must stop at the cap"
    assert got == [w.offset for w in b.written if w not in bad]
    assert store.stats.invalid_records_skipped == 2
    assert store.stats.bytes_skipped == sum(w.size for w in bad)
    assert [p.offset for p in store.stats.skipped.values()] == [w.offset for w in bad]
    assert "inflates past" in store.stats.skipped[(store.segments[0].path, bad[1].offset)].cause
    summary = store.stats.skip_summary()
    assert summary is not None and str(bad[0].offset) in summary and "2 damaged record(s)" in summary


def test_the_cap_is_a_store_option(builder: StoreBuilder) -> None:
    big = builder.append("TopicA", zstandard.ZstdCompressor().compress(bytes(100_000)),
                         sys_flag=compressed_sys_flag(COMPRESSION_ZSTD))
    builder.finish()
    with pytest.raises(StoreCorruptionError, match="inflates past 99999 bytes"):
        Store.open(builder.root, max_message_size=99_999).read_offsets([big.offset])
    batch = Store.open(builder.root, max_message_size=100_000).read_offsets([big.offset], ["body"])
    assert batch.column("body")[0].as_py() == bytes(100_000)


@pytest.fixture
def garbage(tmp_path) -> tuple[StoreBuilder, Written, int, int]:
    """4 KiB of random bytes in the middle of the second of four segments, starting 20 bytes into
    a record (its QUEUEOFFSET): (builder, that record, garbage start, garbage end)."""
    b = StoreBuilder(str(tmp_path / "store"), segment_size=SEGMENT)
    while b.cursor < 3 * SEGMENT + SEGMENT // 2:
        fill(b, 50)
    victim = next(w for w in b.written if w.offset >= SEGMENT + SEGMENT // 2 - 2048)
    g0, g1 = victim.offset + 20, victim.offset + 20 + 4096
    base = SEGMENT
    b.segments[base][g0 - base : g1 - base] = random.Random(7).randbytes(g1 - g0)
    b.finish()
    return b, victim, g0, g1


@pytest.mark.parametrize("piece", [None, 3000, 1 << 20])
def test_permissive_resyncs_past_garbage(garbage, piece: int | None) -> None:
    """scan (piece None), and scan_ranges over the pieces the planner cuts (any byte boundaries)."""
    b, victim, _, g1 = garbage
    lost = [w for w in b.written if victim.offset <= w.offset < g1]
    kept = [w.offset for w in b.written if w not in lost]
    resume = min(w.offset for w in b.written if w.offset >= g1)
    assert len(lost) > 5 and len(kept) > 300
    store = Store.open(b.root)
    if piece is None:
        got = offsets_of(store.scan(columns=["commitLogOffset"], mode="PERMISSIVE"))
    else:
        pieces = split_spans(store.segment_spans(), piece)
        got = offsets_of(store.scan_ranges(pieces, ["commitLogOffset"], mode="PERMISSIVE"))
    assert got == kept
    assert store.stats.invalid_records_skipped == 1
    assert store.stats.bytes_skipped == resume - victim.offset
    (place,) = store.stats.skipped.values()
    assert place.offset == victim.offset and place.path == store.segments[1].path


def test_read_offsets_counts_each_lost_record(garbage) -> None:
    b, victim, _, g1 = garbage
    lost = [w for w in b.written if victim.offset <= w.offset < g1]
    store = Store.open(b.root)
    got = read_paths_one(store, b.written, "read_offsets", "PERMISSIVE")
    assert got == [w.offset for w in b.written if w not in lost]
    assert store.stats.invalid_records_skipped == len(lost) and store.stats.bytes_skipped == 0


def test_a_range_ending_where_the_damage_starts_reports_it(garbage) -> None:
    """A range starting inside the record before the damage resyncs past the damaged record; the
    range whose walk stops at it (its last record ends there) reports it."""
    b, victim, _, g1 = garbage
    before = b.written[b.written.index(victim) - 1]
    store = Store.open(b.root)
    with pytest.raises(StoreCorruptionError) as info:
        offsets_of(store.scan(before.offset, victim.offset))
    assert info.value.offset == victim.offset
    assert offsets_of(store.scan(before.offset + 1, g1 + 1000, mode="PERMISSIVE")) == [
        w.offset for w in b.written if g1 <= w.offset < g1 + 1000]
    assert store.stats.invalid_records_skipped == 0  # that range does not own the damage
    assert offsets_of(store.scan(before.offset, victim.offset, mode="PERMISSIVE")) == [before.offset]
    assert store.stats.invalid_records_skipped == 1


def test_failfast_names_the_damaged_file_and_offset(garbage) -> None:
    b, victim, _, _ = garbage
    store = Store.open(b.root)
    with pytest.raises(StoreCorruptionError) as info:
        offsets_of(store.scan(columns=["commitLogOffset"]))
    assert info.value.offset == victim.offset and info.value.path == store.segments[1].path
    assert store.max_offset == b.cursor  # damage in an older segment does not move the log end
