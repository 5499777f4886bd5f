"""IndexFile header/slots/entries, lookups, roll-over quirk and geometry detection (§5, §8.3)."""

from __future__ import annotations

import random
import struct

import pytest
from format_vectors import INDEX_FILE

from rmqstore.format.indexfile import (
    FULL_CHECK_BYTES,
    INDEX_HEADER_SIZE,
    IndexFileBuilder,
    IndexFileView,
    IndexHeader,
    detect_geometry,
    geometry_problem,
    index_file_size,
    index_key,
    parse_index_header,
)
from rmqstore.format.javahash import index_key_hash

T = 1_700_000_000_123
UNIQ = index_key("TopicTest", "7F00000104D21B6D358605265C000000")
K1, K2, ORDER = index_key("TopicTest", "k1"), index_key("TopicTest", "k2"), index_key("TopicTest", "order-1")
FOREVER = 2**62


def spec_8_3_file() -> bytes:
    builder = IndexFileBuilder(INDEX_FILE["hash_slots"], INDEX_FILE["entries"])
    for key, phy, store_timestamp in INDEX_FILE["puts"]:
        assert builder.put_key(key, phy, store_timestamp)
    return builder.to_bytes()


def slot(data: bytes, number: int) -> int:
    return struct.unpack_from(">i", data, INDEX_HEADER_SIZE + 4 * number)[0]


def test_spec_8_3_bytes() -> None:
    data = spec_8_3_file()
    assert len(data) == INDEX_FILE["size"] == index_file_size(100, 400)
    assert data[:40] == bytes.fromhex(INDEX_FILE["header_hex"])
    assert parse_index_header(data) == IndexHeader(T, T + 1500, 0, 178, 3, 5)
    slots = {int(n): entry for n, entry in INDEX_FILE["slots"].items()}
    assert {n: slot(data, n) for n in range(100) if slot(data, n)} == slots
    assert data[440:460] == bytes(20)  # entry #0 is never used
    assert sorted(INDEX_FILE["entries_hex"]) == ["460", "480", "500", "520"]
    for at, entry_hex in INDEX_FILE["entries_hex"].items():
        assert data[int(at):int(at) + 20].hex().upper() == entry_hex
    assert data[540:] == bytes(len(data) - 540)


def test_spec_8_3_lookups() -> None:
    view = IndexFileView(spec_8_3_file(), 100, 400)
    assert view.candidates(K1, 0, FOREVER) == [0]
    assert view.candidates(K2, 0, FOREVER) == [0]
    assert view.candidates(ORDER, 0, FOREVER) == [178]
    assert view.candidates(UNIQ, 0, FOREVER) == [0]
    assert view.candidates(K1, T + 1000, FOREVER) == []
    assert view.candidates(ORDER, T + 1000, T + 1000) == [178]  # timeDiff is whole seconds
    assert view.candidates(index_key("TopicTest", "absent"), 0, FOREVER) == []


def test_entries_array() -> None:
    entries = IndexFileView(spec_8_3_file(), 100, 400).entries()
    assert entries["phy"].tolist() == [0, 0, 0, 178]
    assert entries["prev"].tolist() == [0, 0, 0, 2]
    assert entries["time_diff"].tolist() == [0, 0, 0, 1]


def test_rollover_quirk_of_spec_5_5() -> None:
    builder = IndexFileBuilder(100, 400, prev_end_phy_offset=178, prev_end_timestamp=T + 1500)
    assert builder.header == IndexHeader(T + 1500, T + 1500, 178, 178, 0, 0)
    builder.put_key(K1, 356, T + 66500)
    header = builder.header
    assert (header.begin_timestamp, header.end_timestamp) == (T + 66500, T + 66500)
    data = builder.to_bytes()
    view = IndexFileView(data, 100, 400)
    assert view.entry(1) == (2746024, 356, 65, 0)
    # Reconstructed time is begin + 65 s, so the entry's real time misses.
    assert view.candidates(K1, T + 66500, T + 66500) == []
    assert view.candidates(K1, T + 131500, T + 131500) == [356]


def test_empty_builder_header_on_disk() -> None:
    assert parse_index_header(IndexFileBuilder(10, 20).to_bytes()) == IndexHeader(0, 0, 0, 0, 0, 0)


def test_builder_holds_n_minus_one_entries() -> None:
    builder = IndexFileBuilder(5, 4)
    assert [builder.put_key(f"t#{i}", i, T) for i in range(4)] == [True, True, True, False]
    assert builder.is_full
    assert builder.header.index_count == 4


def test_header_time_matched() -> None:
    header = IndexHeader(1000, 2000, 0, 0, 0, 2)
    assert header.time_matched(1500, 1600)
    assert header.time_matched(500, 3000)
    assert header.time_matched(500, 1000)
    assert not header.time_matched(2001, 3000)
    assert not header.time_matched(0, 999)


@pytest.mark.timeout(10)
def test_looping_chain_terminates() -> None:
    data = bytearray(spec_8_3_file())
    # entry 2 (k1) now points "back" to entry 4, which points to entry 2: a loop.
    struct.pack_into(">i", data, 440 + 2 * 20 + 16, 4)
    view = IndexFileView(bytes(data), 100, 400)
    assert view.candidates(K1, 0, FOREVER) == [0]
    assert view.candidates(ORDER, 0, FOREVER) == [178]


@pytest.mark.timeout(10)
def test_corrupt_chain_numbers_terminate() -> None:
    data = bytearray(spec_8_3_file())
    struct.pack_into(">i", data, 36, 10_000)  # indexCount beyond the file
    struct.pack_into(">i", data, 40 + 24 * 4, 9_999)  # slot points outside the entry area
    assert IndexFileView(bytes(data), 100, 400).candidates(K1, 0, FOREVER) == []


def test_view_rejects_wrong_size() -> None:
    with pytest.raises(ValueError, match="does not match 100 slots and 401 entries"):
        IndexFileView(spec_8_3_file(), 100, 401)


def random_index(hash_slots: int, index_entries: int, count: int, seed: int) -> bytes:
    rnd = random.Random(seed)
    builder = IndexFileBuilder(hash_slots, index_entries)
    phy, ts = 0, T
    for _ in range(count):
        phy += rnd.randint(91, 400)
        ts += rnd.randint(0, 3000)
        builder.put_key(index_key("Topic", f"key-{rnd.randint(0, 10**6)}"), phy, ts)
    return builder.to_bytes()


@pytest.mark.parametrize(
    ("hash_slots", "index_entries", "count"),
    [(100, 400, 4), (100, 400, 399), (7, 50, 30), (1000, 200, 150), (3, 1000, 2), (5000, 20000, 1)],
)
def test_detect_geometry(hash_slots: int, index_entries: int, count: int) -> None:
    data = random_index(hash_slots, index_entries, count, seed=hash_slots + count)
    assert detect_geometry(len(data), data) == (hash_slots, index_entries)


def test_detect_geometry_of_spec_file() -> None:
    data = spec_8_3_file()
    assert detect_geometry(len(data), data) == (100, 400)


def test_detect_geometry_of_empty_file_is_undecidable() -> None:
    data = IndexFileBuilder(100, 400).to_bytes()
    with pytest.raises(ValueError, match="has no entries"):
        detect_geometry(len(data), data)


def test_detect_geometry_rejects_inconsistent_header() -> None:
    data = bytearray(random_index(100, 400, 50, seed=1))
    struct.pack_into(">i", data, 32, 7)  # usedSlots no longer matches the slot table
    with pytest.raises(ValueError, match="no hash-slot/entry geometry fits"):
        detect_geometry(len(data), bytes(data))


def test_detect_geometry_rejects_impossible_size() -> None:
    with pytest.raises(ValueError, match="not 40 \\+ 4\\*S \\+ 20\\*N"):
        detect_geometry(42, bytes(42))
    with pytest.raises(ValueError, match="got 10 bytes"):
        detect_geometry(8440, bytes(10))


LARGE_SLOTS, LARGE_ENTRIES = 300_000, 2_000  # slot table alone is larger than FULL_CHECK_BYTES: sampled


def test_large_file_is_checked_by_sampling() -> None:
    assert 4 * LARGE_SLOTS > FULL_CHECK_BYTES
    data = random_index(LARGE_SLOTS, LARGE_ENTRIES, 1500, seed=3)
    assert geometry_problem(data, LARGE_SLOTS, LARGE_ENTRIES) is None
    assert detect_geometry(len(data), data) == (LARGE_SLOTS, LARGE_ENTRIES)


def _entry_pos(number: int) -> int:
    return INDEX_HEADER_SIZE + 4 * LARGE_SLOTS + 20 * number


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda d: struct.pack_into(">i", d, _entry_pos(1500) + 16, 1500), "chains to entry 1500"),
        (lambda d: struct.pack_into(">q", d, 24, 1), "begin/end offsets"),
        (lambda d: [struct.pack_into(">q", d, at, 5) for at in (24, _entry_pos(1500) + 4)],
         "offsets decrease"),
        (lambda d: struct.pack_into(">i", d, INDEX_HEADER_SIZE, 1700), "slot value lies outside"),
        (lambda d: struct.pack_into(">i", d, _entry_pos(0), 5), "entry #0"),
    ],
)
def test_damage_in_a_large_file_is_found(damage, reason: str) -> None:
    data = bytearray(random_index(LARGE_SLOTS, LARGE_ENTRIES, 1500, seed=3))
    damage(data)
    assert reason in (geometry_problem(bytes(data), LARGE_SLOTS, LARGE_ENTRIES) or "")
    with pytest.raises(ValueError, match="geometry"):
        detect_geometry(len(data), bytes(data))


def test_candidates_for_a_precomputed_hash() -> None:
    view = IndexFileView(spec_8_3_file(), 100, 400)
    assert view.candidates_for_hash(index_key_hash(ORDER), 0, FOREVER) == [178]
