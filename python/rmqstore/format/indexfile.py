"""IndexFile: 40-byte header, S hash slots, N 20-byte entries numbered from 1 (spec §5).

`IndexFileView` reads a file (chain walks newest -> oldest, §5.6), `IndexFileBuilder` writes one the
way `IndexFile.putKey` does (§5.5), `detect_geometry` infers S and N when the broker config is unknown.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from rmqstore.format.contract_layout import (
    DEFAULT_HASH_SLOTS,
    DEFAULT_INDEX_ENTRIES,
    INDEX_ENTRY_SIZE,
    INDEX_HEADER_SIZE,
    INDEX_SLOT_SIZE,
)
from rmqstore.format.javahash import index_key_hash

INDEX_ENTRY_DTYPE = np.dtype([("key_hash", ">i4"), ("phy", ">i8"), ("time_diff", ">i4"), ("prev", ">i4")])
"""One entry (§5.1): keyHash, phyOffset, timeDiff in seconds, previous entry number in the chain."""
KEY_SEPARATOR = "#"
TAG_INDEX_PREFIX = "T#"
"""Newer 5.x brokers also index each tagged record's whole TAGS string as the key `T#<TAGS>` (§5.4)."""

_HEADER = struct.Struct(">qqqqii")
_ENTRY = struct.Struct(">iqii")
_SLOT = struct.Struct(">i")
_INT_MAX = 0x7FFFFFFF
_MAX_GEOMETRY_CANDIDATES = 16
FULL_CHECK_BYTES = 1 << 20
"""`geometry_problem` checks every slot and entry of a file whose slot table and entries fit in this."""
GEOMETRY_SAMPLES = 64
"""Entries and slots `geometry_problem` checks in a larger file (plus the entries they link to)."""


@runtime_checkable
class ByteSource(Protocol):
    """Bytes fetched on demand (a remote file): its length and the bytes of ranges, concatenated.

    Every function here that takes index-file `data` accepts one instead of an in-memory buffer, and
    then reads only the bytes it looks at (header, slots, entries), never the whole file.
    """

    def __len__(self) -> int: ...

    def read_ranges(self, offsets: Sequence[int], lengths: Sequence[int]) -> np.ndarray: ...


def _bytes_at(data: Any, pos: int, length: int) -> Any:
    """Bytes [pos, pos + length) of in-memory `data` (a view, never a copy) or of a `ByteSource` (one
    read)."""
    if isinstance(data, ByteSource):
        return data.read_ranges([pos], [length])
    return memoryview(data)[pos : pos + length]


def _in_memory(data: Any) -> Any:
    """`data` as a buffer: a `ByteSource` is read whole (for the checks that look at every byte)."""
    return _bytes_at(data, 0, len(data)) if isinstance(data, ByteSource) else data


class _SparseRows:
    """Rows of a fixed-size dtype stored at `offset` of a `ByteSource`, read when indexed (only the
    rows asked for, in one `read_ranges` call): what `np.frombuffer` gives for in-memory data."""

    def __init__(self, source: ByteSource, dtype: np.dtype, count: int, offset: int) -> None:
        self._source, self._dtype, self._count, self._offset = source, np.dtype(dtype), count, offset

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: Any) -> Any:
        numbers = np.asarray(index, dtype=np.int64)
        wanted, inverse = np.unique(numbers.reshape(-1), return_inverse=True)
        size = self._dtype.itemsize
        raw = self._source.read_ranges((self._offset + wanted * size).tolist(), [size] * len(wanted))
        rows = np.frombuffer(raw.tobytes(), dtype=self._dtype)[inverse]
        return rows[0] if numbers.ndim == 0 else rows.reshape(numbers.shape)


def _rows(data: Any, dtype: Any, count: int, offset: int) -> Any:
    """`count` rows of `dtype` from byte `offset`: zero-copy for in-memory data, else `_SparseRows`."""
    if isinstance(data, ByteSource):
        return _SparseRows(data, dtype, count, offset)
    return np.frombuffer(data, dtype=dtype, count=count, offset=offset)


def index_key(topic: str, key: str) -> str:
    """The indexed string `topic#key` (`IndexService.buildKey`, §5.3)."""
    return f"{topic}{KEY_SEPARATOR}{key}"


def index_file_size(hash_slots: int, index_entries: int) -> int:
    """40 + 4*S + 20*N (§5.1)."""
    return INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * hash_slots + INDEX_ENTRY_SIZE * index_entries


@dataclass(frozen=True, slots=True)
class IndexHeader:
    """The 40-byte header (§5.1).

    `used_slots` counts non-empty slots; `index_count` = entries + 1 (0 on disk before the first put).
    """

    begin_timestamp: int
    end_timestamp: int
    begin_phy_offset: int
    end_phy_offset: int
    used_slots: int
    index_count: int

    @property
    def entry_count(self) -> int:
        """Number of entries in the file: indexCount - 1 (an on-disk 0 means none)."""
        return max(self.index_count - 1, 0)

    def time_matched(self, begin_ms: int, end_ms: int) -> bool:
        """`IndexFile.isTimeMatched`: does [begin_ms, end_ms] touch this file's time range (§5.6)?"""
        begin, end = self.begin_timestamp, self.end_timestamp
        return (begin_ms < begin and end_ms > end) or begin <= begin_ms <= end or begin <= end_ms <= end

    def to_bytes(self) -> bytes:
        return _HEADER.pack(
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.used_slots,
            self.index_count,
        )


def parse_index_header(data: Any) -> IndexHeader:
    """Read the header from the first 40 bytes (§5.1)."""
    if len(data) < INDEX_HEADER_SIZE:
        raise ValueError(f"{len(data)} bytes are too short for the {INDEX_HEADER_SIZE}-byte index header")
    return IndexHeader(*_HEADER.unpack_from(_bytes_at(data, 0, INDEX_HEADER_SIZE), 0))


class IndexFileView:
    """Read-only view of one index file with hash_slots S and index_entries N (§5.1).

    `data` is the file in memory or a `ByteSource`: then a probe reads the header once, the slot and
    the entries its chain walk visits (one small read each).
    """

    def __init__(self, data: Any, hash_slots: int, index_entries: int) -> None:
        expected = index_file_size(hash_slots, index_entries)
        if hash_slots <= 0 or index_entries <= 0 or len(data) != expected:
            raise ValueError(
                f"index file of {len(data)} bytes does not match {hash_slots} slots and {index_entries} "
                f"entries ({expected} bytes)"
            )
        self._data = data
        self.hash_slots = hash_slots
        self.index_entries = index_entries
        self._entry_base = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * hash_slots
        self.header = parse_index_header(data)

    def slot(self, slot_no: int) -> int:
        """Entry number of the newest entry in slot `slot_no` (0 = empty)."""
        pos = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * slot_no
        return _SLOT.unpack_from(_bytes_at(self._data, pos, INDEX_SLOT_SIZE), 0)[0]

    def entry(self, number: int) -> tuple[int, int, int, int]:
        """(keyHash, phyOffset, timeDiff, prevIndex) of entry `number` (1-based, §5.2)."""
        if not 0 <= number < self.index_entries:
            raise ValueError(f"entry number {number} outside the entry area (0..{self.index_entries - 1})")
        pos = self._entry_base + INDEX_ENTRY_SIZE * number
        return _ENTRY.unpack_from(_bytes_at(self._data, pos, INDEX_ENTRY_SIZE), 0)

    def prefetch(self, key_hashes: Sequence[int]) -> None:
        """For a `ByteSource`: read the slots of these hashes and the newest entries they point at in two
        batches (the source keeps what it read for the probes that follow); nothing for data in memory."""
        if not isinstance(self._data, ByteSource) or not len(key_hashes):
            return
        slots = np.asarray(key_hashes, dtype=np.int64) % self.hash_slots
        raw = self._data.read_ranges((INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * slots).tolist(),
                                     [INDEX_SLOT_SIZE] * len(slots))
        newest = np.frombuffer(raw.tobytes(), dtype=">i4").astype(np.int64)
        newest = newest[(newest > 0) & (newest < self.index_entries)]
        self._data.read_ranges((self._entry_base + INDEX_ENTRY_SIZE * newest).tolist(),
                               [INDEX_ENTRY_SIZE] * len(newest))

    def candidates(self, key: str, begin_ms: int, end_ms: int) -> list[int]:
        """Physical offsets whose entry hash equals keyHash(key), newest first (`selectPhyOffset`, §5.6).

        `key` is the full index key `topic#key`. Time rule: entry time = beginTimestamp + timeDiff*1000
        must lie in [begin_ms, end_ms]; the walk stops at an entry older than begin_ms. No result cap.
        A chain that revisits an entry or leaves the file ends the walk, so corrupt chains terminate.
        Hash collisions are included: confirm every candidate against the commit log.
        """
        return self.candidates_for_hash(index_key_hash(key), begin_ms, end_ms)

    def candidates_for_hash(self, key_hash: int, begin_ms: int, end_ms: int) -> list[int]:
        """`candidates` for a precomputed `index_key_hash` (one hash serves every file of a store)."""
        header = self.header
        index_count = header.index_count
        current = self.slot(key_hash % self.hash_slots)
        if current <= 0 or current > index_count or index_count <= 1:
            return []
        found: list[int] = []
        visited: set[int] = set()
        while current < self.index_entries and current not in visited:
            visited.add(current)
            hash_read, phy, time_diff, prev = self.entry(current)
            if time_diff < 0:
                break
            entry_ms = header.begin_timestamp + time_diff * 1000
            if hash_read == key_hash and begin_ms <= entry_ms <= end_ms:
                found.append(phy)
            if prev <= 0 or prev > index_count or prev == current or entry_ms < begin_ms:
                break
            current = prev
        return found

    def entries(self) -> np.ndarray:
        """Entries 1 .. indexCount-1 as an `INDEX_ENTRY_DTYPE` array (zero copy in memory); row i is
        entry i+1."""
        count = min(self.header.entry_count, self.index_entries - 1)
        first = self._entry_base + INDEX_ENTRY_SIZE
        return np.frombuffer(_bytes_at(self._data, first, count * INDEX_ENTRY_SIZE), dtype=INDEX_ENTRY_DTYPE)


class IndexFileBuilder:
    """Builds an index file in memory exactly like `IndexFile.putKey` (§5.5, incl. the roll-over quirk).

    `prev_end_phy_offset` / `prev_end_timestamp` are the previous file's end values, which the broker
    copies into begin and end of a new file when they are > 0 (§5.7).
    """

    def __init__(
        self, hash_slots: int, index_entries: int, prev_end_phy_offset: int = 0, prev_end_timestamp: int = 0
    ) -> None:
        if hash_slots <= 0 or index_entries <= 1:
            raise ValueError(f"need hash_slots > 0 and index_entries > 1, got {hash_slots}, {index_entries}")
        self.hash_slots = hash_slots
        self.index_entries = index_entries
        self._buf = bytearray(index_file_size(hash_slots, index_entries))
        self._entry_base = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * hash_slots
        self._begin_ts = self._end_ts = max(prev_end_timestamp, 0)
        self._begin_phy = self._end_phy = max(prev_end_phy_offset, 0)
        self._used_slots = 0
        self._index_count = 1
        self._written = False

    @property
    def header(self) -> IndexHeader:
        """The header as it is on disk (indexCount 0 until the first put, §5.1)."""
        return IndexHeader(
            self._begin_ts,
            self._end_ts,
            self._begin_phy,
            self._end_phy,
            self._used_slots,
            self._index_count if self._written else 0,
        )

    @property
    def is_full(self) -> bool:
        """`isWriteFull`: indexCount >= N, the file holds N - 1 entries (§5.2)."""
        return self._index_count >= self.index_entries

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """Add index key `topic#key` for the record at phy_offset; False when the file is full (§5.5)."""
        if self.is_full:
            return False
        key_hash = index_key_hash(key)
        slot_pos = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * (key_hash % self.hash_slots)
        slot_value = _SLOT.unpack_from(self._buf, slot_pos)[0]
        if slot_value <= 0 or slot_value > self._index_count:
            slot_value = 0
        # Seconds since the header's begin (the previous file's end for a roll-over's first entry).
        diff = store_timestamp - self._begin_ts
        time_diff = 0 if self._begin_ts <= 0 or diff < 0 else min(diff // 1000, _INT_MAX)
        entry_pos = self._entry_base + INDEX_ENTRY_SIZE * self._index_count
        _ENTRY.pack_into(self._buf, entry_pos, key_hash, phy_offset, time_diff, slot_value)
        _SLOT.pack_into(self._buf, slot_pos, self._index_count)
        if self._index_count <= 1:
            self._begin_phy = phy_offset
            self._begin_ts = store_timestamp
        if slot_value == 0:
            self._used_slots += 1
        self._index_count += 1
        self._end_phy = phy_offset
        self._end_ts = store_timestamp
        self._written = True
        return True

    def to_bytes(self) -> bytes:
        """The whole file: header, slots, entries (§5.1)."""
        return self.header.to_bytes() + bytes(self._buf[INDEX_HEADER_SIZE:])


def detect_geometry(file_size: int, data: Any) -> tuple[int, int]:
    """Infer (hash_slots S, index_entries N) of an index file from its size and contents (§1.3, §5).

    40 + 4S + 20N = file_size has many solutions. The broker defaults are taken when they fit the
    size and the contents; otherwise every S allowed by the size is filtered by cheap checks (entry 1
    and the newest entry hold beginPhyOffset/endPhyOffset, entry #0 is zero, the newest entry's slot
    points at it) and the survivors are validated (`geometry_problem`, which samples large files).
    Raises ValueError naming the reason when no or several geometries fit, or when the file has no
    entries to judge by (other than a default-sized file).
    """
    if len(data) != file_size:
        raise ValueError(f"got {len(data)} bytes for an index file of {file_size} bytes")
    header = parse_index_header(data)
    default_size = file_size == index_file_size(DEFAULT_HASH_SLOTS, DEFAULT_INDEX_ENTRIES)
    if default_size and geometry_problem(data, DEFAULT_HASH_SLOTS, DEFAULT_INDEX_ENTRIES) is None:
        return DEFAULT_HASH_SLOTS, DEFAULT_INDEX_ENTRIES
    body = file_size - INDEX_HEADER_SIZE
    if body <= 0 or body % INDEX_SLOT_SIZE:
        raise ValueError(f"index file size {file_size} is not 40 + 4*S + 20*N for any S, N")
    if header.index_count > 1:
        data = _in_memory(data)  # the candidates are checked at strided places all over the file
    if header.index_count <= 1:
        raise ValueError(
            f"index file of {file_size} bytes has no entries (indexCount {header.index_count}); "
            "its slot and entry counts cannot be inferred, pass them explicitly"
        )
    slots = _slot_candidates(data, header, file_size)
    if len(slots) > _MAX_GEOMETRY_CANDIDATES:
        raise ValueError(
            f"index file geometry is ambiguous: {len(slots)} slot counts pass the quick checks "
            f"(S={', '.join(str(s) for s in slots[:5])}, ...); pass hash slots and index entries explicitly"
        )
    fitting: list[tuple[int, int]] = []
    reasons: list[str] = []
    for hash_slots in slots:
        index_entries = (body - INDEX_SLOT_SIZE * hash_slots) // INDEX_ENTRY_SIZE
        problem = geometry_problem(data, hash_slots, index_entries)
        if problem is None:
            fitting.append((hash_slots, index_entries))
        else:
            reasons.append(f"S={hash_slots}: {problem}")
    if len(fitting) == 1:
        return fitting[0]
    if not fitting:
        detail = "; ".join(reasons[:3]) or "no slot count places the header's begin/end offsets in entries"
        raise ValueError(f"no hash-slot/entry geometry fits this {file_size}-byte index file ({detail})")
    shown = ", ".join(f"S={s} N={n}" for s, n in fitting[:5])
    raise ValueError(
        f"index file geometry is ambiguous: {len(fitting)} geometries fit ({shown}); "
        "pass hash slots and index entries explicitly"
    )


def _strided(base: np.ndarray, dtype: str, start: int, step: int, count: int) -> np.ndarray:
    return np.ndarray(shape=(count,), dtype=np.dtype(dtype), buffer=base, offset=start, strides=(step,))


def _slot_candidates(data: Any, header: IndexHeader, file_size: int) -> list[int]:
    """Slot counts S allowed by the size whose entry area agrees with the header (vectorised)."""
    body = file_size - INDEX_HEADER_SIZE
    count = header.index_count - 1
    # S must keep 20N = body - 4S divisible by 20 (S = s0 + 5k), and N must exceed the newest entry number.
    s0 = (body // INDEX_SLOT_SIZE) % 5 or 5
    max_slots = (body - INDEX_ENTRY_SIZE * (count + 1)) // INDEX_SLOT_SIZE
    if max_slots < s0:
        return []
    ks = (max_slots - s0) // 5 + 1
    base = np.frombuffer(data, dtype=np.uint8)
    entry_area = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * s0  # entry #0 of the smallest candidate
    step = INDEX_SLOT_SIZE * 5
    newest = entry_area + INDEX_ENTRY_SIZE * count
    ok = _strided(base, ">i8", entry_area + INDEX_ENTRY_SIZE + 4, step, ks) == header.begin_phy_offset
    ok &= _strided(base, ">i8", newest + 4, step, ks) == header.end_phy_offset
    for word in range(0, INDEX_ENTRY_SIZE, 4):
        ok &= _strided(base, ">i4", entry_area + word, step, ks) == 0
    newest_hash = _strided(base, ">i4", newest, step, ks).astype(np.int64)
    ok &= newest_hash >= 0
    slots = s0 + 5 * np.arange(ks, dtype=np.int64)
    slot_values = np.frombuffer(data, dtype=">i4", count=file_size // 4)
    hit = np.flatnonzero(ok)
    hit = hit[slot_values[INDEX_HEADER_SIZE // 4 + newest_hash[hit] % slots[hit]] == count]
    return [int(s) for s in slots[hit]]


def geometry_problem(data: Any, hash_slots: int, index_entries: int) -> str | None:
    """Why (S, N) cannot be this file's geometry, None when every checked structural rule holds (§5.1-§5.5).

    Rules: header counts within the geometry, entry #0 empty, entry 1 / the newest entry hold
    beginPhyOffset / endPhyOffset, entries have non-negative hash and time, phy offsets grow within
    [begin, end], every link points at an older entry of the same slot, a slot points at an entry of
    its own slot no newer than the newest, an entry's slot points at it or a newer entry. A file whose
    slot table and entries fit in `FULL_CHECK_BYTES` is checked completely (including the used-slot
    count); a larger one at the first, the newest and `GEOMETRY_SAMPLES` evenly spread entries and
    slots plus what they link to: a few hundred pages, never the whole file.
    """
    expected = index_file_size(hash_slots, index_entries)
    if hash_slots <= 0 or index_entries <= 0 or len(data) != expected:
        return (f"{len(data)} bytes do not match {hash_slots} slots and {index_entries} entries "
                f"({expected} bytes)")
    header = parse_index_header(data)
    if not 0 <= header.index_count <= index_entries:
        return f"indexCount {header.index_count} outside 0..{index_entries}"
    count = header.entry_count
    if not 0 <= header.used_slots <= min(hash_slots, count):
        return f"hashSlotCount {header.used_slots} outside 0..{min(hash_slots, count)}"
    entry_base = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * hash_slots
    full = INDEX_SLOT_SIZE * hash_slots + INDEX_ENTRY_SIZE * count <= FULL_CHECK_BYTES
    if full:  # every slot and entry #0 .. #count (row i = entry i): two reads of a ByteSource
        slots = np.frombuffer(_bytes_at(data, INDEX_HEADER_SIZE, INDEX_SLOT_SIZE * hash_slots), dtype=">i4")
        entries = np.frombuffer(_bytes_at(data, entry_base, INDEX_ENTRY_SIZE * (count + 1)),
                                dtype=INDEX_ENTRY_DTYPE)
    else:
        slots = _rows(data, ">i4", hash_slots, INDEX_HEADER_SIZE)
        entries = _rows(data, INDEX_ENTRY_DTYPE, index_entries, entry_base)  # row i = entry i
    if entries[0].tobytes() != bytes(INDEX_ENTRY_SIZE):
        return "entry #0 is not empty"
    if full:
        numbers, slot_numbers = np.arange(1, count + 1, dtype=np.int64), np.arange(hash_slots, dtype=np.int64)
        if int(np.count_nonzero(slots)) != header.used_slots:
            return f"{int(np.count_nonzero(slots))} non-empty slots but the header says {header.used_slots}"
    else:
        numbers = _spread(1, count) if count else np.zeros(0, dtype=np.int64)
        slot_numbers = _spread(0, hash_slots - 1)
    if count:
        problem = _entries_problem(entries, slots, numbers, header)
        if problem is not None:
            return problem
    return _slots_problem(entries, slots, slot_numbers, count)


def _spread(first: int, last: int) -> np.ndarray:
    """`GEOMETRY_SAMPLES` evenly spread numbers in [first, last], both ends included, ascending."""
    return np.unique(np.linspace(first, last, GEOMETRY_SAMPLES).astype(np.int64))


def _entries_problem(entries: Any, slots: Any, numbers: np.ndarray,
                     header: IndexHeader) -> str | None:
    """Rules of the entries `numbers` (ascending, first and newest included) and their links."""
    hash_slots = len(slots)
    sample = entries[numbers]
    key_hash = sample["key_hash"].astype(np.int64)
    prev = sample["prev"].astype(np.int64)
    phy = sample["phy"].astype(np.int64)
    if int(phy[0]) != header.begin_phy_offset or int(phy[-1]) != header.end_phy_offset:
        return "first/last entry offsets differ from the header's begin/end offsets"
    if (key_hash < 0).any() or (sample["time_diff"] < 0).any():
        return "an entry has a negative key hash or time difference"
    if (np.diff(phy) < 0).any():
        return "entry offsets decrease although entries are added in log order"
    bad = np.flatnonzero((prev < 0) | (prev >= numbers))
    if bad.size:
        return f"entry {int(numbers[bad[0]])} chains to entry {int(prev[bad[0]])}, not to an older entry"
    entry_slot = key_hash % hash_slots
    pointed = slots[entry_slot].astype(np.int64)
    if ((pointed < numbers) | (pointed > header.entry_count)).any():
        return "an entry's slot does not point at it or at a newer entry"
    linked = prev > 0
    if (entries[prev[linked]]["key_hash"].astype(np.int64) % hash_slots != entry_slot[linked]).any():
        return "an entry chains to an entry of another slot"
    return None


def _slots_problem(entries: Any, slots: Any, slot_numbers: np.ndarray,
                   count: int) -> str | None:
    """Rules of the slots `slot_numbers`: a value in 0..count naming an entry of that slot."""
    values = slots[slot_numbers].astype(np.int64)
    if ((values < 0) | (values > count)).any():
        return f"a slot value lies outside 0..{count}"
    filled = values > 0
    newest_hash = entries[values[filled]]["key_hash"].astype(np.int64)
    if (newest_hash % len(slots) != slot_numbers[filled]).any():
        return "a slot points at an entry whose key hash belongs to another slot"
    return None
