"""Columnar commit-log decoding: find record starts in a segment buffer and decode many records into
one Arrow record batch (spec §2.2-§2.12, §3.1).

`walk_records` follows the TOTALSIZE chain like recovery (§2.12); `decode_records` turns known record
starts into the table's columns (`table.py`). Both work on whole numpy arrays: a field of every
record is read with one gather through an unaligned big-endian view of the buffer, variable-length
fields become BinaryView arrays pointing into the buffer that Arrow copies out in C++, and the
properties are split with numpy on the separator positions. `record.py` is the scalar reference.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqstore.format.compression import decompress_body
from rmqstore.format.hosts import decode_host
from rmqstore.format.layout import (
    MAGIC_V1,
    MAGIC_V2,
    MIN_RECORD_SIZE,
    OFF_BODYCRC,
    OFF_BORNHOST,
    OFF_BORNTIMESTAMP,
    OFF_FLAG,
    OFF_MAGIC,
    OFF_PHYSICALOFFSET,
    OFF_QUEUEID,
    OFF_QUEUEOFFSET,
    OFF_SYSFLAG,
    OFF_TOTALSIZE,
    PROPERTY_NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_COMPRESSED,
    SYSFLAG_STOREHOST_V6,
    body_length_offset,
    born_host_len,
    store_host_len,
    store_timestamp_offset,
)
from rmqstore.format.record import (
    KEY_SEPARATOR,
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    SCHEDULE_TOPIC,
    RecordCheck,
    check_record,
)
from rmqstore.format.table import COLUMNS, arrow_schema

StopKind = Literal["end", "blank", "invalid"]

WALK_WINDOW = 8 << 20
"""Bytes searched for record candidates at a time; a walk never scans further than one window past
the record where it stops."""
MAX_BUFFER_SIZE = (1 << 31) - 1
"""Arrow views use int32 offsets; a commit-log segment size is a Java int, so it always fits."""

_SCHEDULE_TOPIC = np.frombuffer(SCHEDULE_TOPIC.encode("ascii"), np.uint8)
_MAGIC_BYTES = MAGIC_V1.to_bytes(4, "big")
"""v1 and v2 magic codes share their first three bytes (DA A3 20)."""
_INLINE_VIEW = 12
"""A BinaryView keeps values up to 12 bytes inline, longer ones as prefix + buffer + offset."""
_INLINE_POSITIONS = np.arange(_INLINE_VIEW)
_HEX_PAIRS = np.frombuffer("".join(f"{i:02X}" for i in range(256)).encode("ascii"), dtype=np.uint16)
"""Byte value -> its two uppercase hex digits, in memory order."""


def as_byte_array(buf: Any) -> np.ndarray:
    """A 1-D uint8 numpy view of a bytes-like object or array (no copy)."""
    arr = buf if isinstance(buf, np.ndarray) else np.frombuffer(buf, dtype=np.uint8)
    if arr.dtype != np.uint8 or arr.ndim != 1 or not arr.flags.c_contiguous:
        raise ValueError("the buffer must be a contiguous 1-D uint8 array")
    if len(arr) > MAX_BUFFER_SIZE:
        raise ValueError(f"buffer of {len(arr)} bytes exceeds the largest segment size {MAX_BUFFER_SIZE}")
    return arr


class FieldReader:
    """Big-endian integers at arbitrary byte positions of a buffer, one numpy gather per field.

    Each format is read through a stride-1 view of the buffer (element i = the bytes at i...), so
    a gather is a plain fancy index. Positions are clipped into the buffer: callers that read
    untrusted positions must reject the rows where `fits` is False.
    """

    def __init__(self, buf: np.ndarray) -> None:
        self.buf = buf
        self._views: dict[str, np.ndarray] = {}

    def _view(self, fmt: str) -> np.ndarray:
        view = self._views.get(fmt)
        if view is None:
            dtype = np.dtype(fmt)
            count = max(len(self.buf) - dtype.itemsize + 1, 0)
            view = np.ndarray(shape=(count,), dtype=dtype, buffer=self.buf, strides=(1,))
            self._views[fmt] = view
        return view

    def read(self, pos: np.ndarray, fmt: str) -> np.ndarray:
        """The value of format fmt (e.g. '>i4') at each position, as a native int64 array."""
        view = self._view(fmt)
        if not len(view):
            return np.zeros(len(pos), dtype=np.int64)
        return view[np.clip(pos, 0, len(view) - 1)].astype(np.int64)

    def fits(self, pos: np.ndarray, width: int | np.ndarray) -> np.ndarray:
        """True where [pos, pos + width) lies inside the buffer."""
        return (pos >= 0) & (pos + width <= len(self.buf))


def _header_dtype(sys_flag: int) -> np.dtype:
    """The fixed fields (TOTALSIZE .. BODYLENGTH, §2.2) of a record with this sysFlag's host widths."""
    body_len_at = body_length_offset(sys_flag)
    store_ts_at = store_timestamp_offset(sys_flag)
    fields = {
        "size": (">i4", OFF_TOTALSIZE),
        "magic": (">u4", OFF_MAGIC),
        "bodyCrc": (">i4", OFF_BODYCRC),
        "queueId": (">i4", OFF_QUEUEID),
        "flag": (">i4", OFF_FLAG),
        "queueOffset": (">i8", OFF_QUEUEOFFSET),
        "physicalOffset": (">i8", OFF_PHYSICALOFFSET),
        "sysFlag": (">i4", OFF_SYSFLAG),
        "bornTimestamp": (">i8", OFF_BORNTIMESTAMP),
        "bornHost": (f"V{born_host_len(sys_flag)}", OFF_BORNHOST),
        "storeTimestamp": (">i8", store_ts_at),
        "storeHost": (f"V{store_host_len(sys_flag)}", store_ts_at + 8),
        "reconsumeTimes": (">i4", body_len_at - 12),
        "preparedTransactionOffset": (">i8", body_len_at - 8),
        "bodyLength": (">i4", body_len_at),
    }
    return np.dtype(
        {
            "names": list(fields),
            "formats": [fmt for fmt, _ in fields.values()],
            "offsets": [at for _, at in fields.values()],
            "itemsize": _HEADER_BLOCK,
        }
    )


_HEADER_BLOCK = body_length_offset(SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6) + 4
"""Bytes from a record start through BODYLENGTH with both hosts IPv6 (112)."""
_LAYOUT_SYS_FLAGS = (0, SYSFLAG_BORNHOST_V6, SYSFLAG_STOREHOST_V6, SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6)
"""Host-width layouts, numbered born_v6 + 2 * store_v6."""
_HEADER_DTYPES = tuple(_header_dtype(flag) for flag in _LAYOUT_SYS_FLAGS)


def _gather_blocks(buf: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """(n x width) copy of the bytes at each position; bytes past the buffer end read as zero."""
    last = len(buf) - width
    view = np.ndarray(shape=(max(last + 1, 0),), dtype=f"V{width}", buffer=buf, strides=(1,))
    inside = (pos >= 0) & (pos <= last)
    if inside.all():
        return view[pos].view(np.uint8).reshape(len(pos), width)
    out = np.zeros((len(pos), width), dtype=np.uint8)
    out[inside] = view[pos[inside]].view(np.uint8).reshape(-1, width)
    for row in np.flatnonzero(~inside):
        at = int(pos[row])
        if 0 <= at < len(buf):
            tail = buf[at : at + width]
            out[row, : len(tail)] = tail
    return out


class RecordFields:
    """The fields of the records starting at `starts` (§2.2), for all of them at once.

    The fixed header of every record is copied with one gather and read through a structured dtype
    per host-width layout; positions (`*_at`) are offsets from the record start, int64 per record.
    """

    def __init__(self, reader: FieldReader, starts: np.ndarray) -> None:
        self.reader = reader
        self.starts = starts
        self.block = _gather_blocks(reader.buf, starts, _HEADER_BLOCK)
        self.sys_flag = self._common("sysFlag")
        self.born_v6 = (self.sys_flag & SYSFLAG_BORNHOST_V6) != 0
        self.store_v6 = (self.sys_flag & SYSFLAG_STOREHOST_V6) != 0
        self.layout = self.born_v6 + 2 * self.store_v6
        present = np.flatnonzero(np.bincount(self.layout, minlength=len(_LAYOUT_SYS_FLAGS)))
        self.layout_rows: list[tuple[int, slice | np.ndarray]] = (
            [(int(present[0]) if len(present) else 0, slice(None))]
            if len(present) <= 1
            else [(int(code), np.flatnonzero(self.layout == code)) for code in present]
        )

    def _common(self, name: str) -> np.ndarray:
        """A field before BORNHOST: the same offset in every layout."""
        return self.block.view(_HEADER_DTYPES[0])[:, 0][name].astype(np.int64)

    def header(self, name: str) -> np.ndarray:
        """An integer header field of every record as int64."""
        if len(self.layout_rows) == 1:
            return self.block.view(_HEADER_DTYPES[self.layout_rows[0][0]])[:, 0][name].astype(np.int64)
        out = np.empty(len(self.starts), dtype=np.int64)
        for code, rows in self.layout_rows:
            out[rows] = self.block[rows].view(_HEADER_DTYPES[code])[:, 0][name]
        return out

    def host_groups(self, name: str) -> list[tuple[slice | np.ndarray, np.ndarray]]:
        """(rows, n x width raw bytes) of the bornHost / storeHost field, one group per layout."""
        groups = []
        for code, rows in self.layout_rows:
            raw = np.ascontiguousarray(self.block[rows].view(_HEADER_DTYPES[code])[:, 0][name])
            groups.append((rows, raw.view(np.uint8).reshape(len(raw), -1)))
        return groups

    def offset_of(self, name: str) -> np.ndarray:
        """Offset of a header field from the record start, per record."""
        table = np.array([dtype.fields[name][1] for dtype in _HEADER_DTYPES], dtype=np.int64)
        return table[self.layout]

    def read(self, offset: np.ndarray, fmt: str) -> np.ndarray:
        return self.reader.read(self.starts + offset, fmt)

    @cached_property
    def size(self) -> np.ndarray:
        return self._common("size")

    @cached_property
    def magic(self) -> np.ndarray:
        return self._common("magic")

    @cached_property
    def physical_offset(self) -> np.ndarray:
        return self._common("physicalOffset")

    @cached_property
    def body_len(self) -> np.ndarray:
        return self.header("bodyLength")

    @cached_property
    def body_at(self) -> np.ndarray:
        return self.offset_of("bodyLength") + 4

    @cached_property
    def topic_len_at(self) -> np.ndarray:
        """A negative BODYLENGTH is skipped like an empty body, as the broker does (§2.12)."""
        return self.body_at + np.maximum(self.body_len, 0)

    @cached_property
    def topic_len_width(self) -> np.ndarray:
        return np.where(self.magic == MAGIC_V2, 2, 1)

    @cached_property
    def topic_len(self) -> np.ndarray:
        v1 = self.read(self.topic_len_at, ">i1")
        v2_rows = np.flatnonzero(self.magic == MAGIC_V2)
        v1[v2_rows] = self.reader.read(self.starts[v2_rows] + self.topic_len_at[v2_rows], ">i2")
        return v1

    @cached_property
    def topic_at(self) -> np.ndarray:
        return self.topic_len_at + self.topic_len_width

    @cached_property
    def props_len_at(self) -> np.ndarray:
        return self.topic_at + np.maximum(self.topic_len, 0)

    @cached_property
    def props_len(self) -> np.ndarray:
        return self.read(self.props_len_at, ">i2")

    @cached_property
    def props_at(self) -> np.ndarray:
        return self.props_len_at + 2

    def structurally_valid(self, base_offset: int) -> np.ndarray:
        """Rows that pass `checkMessageAndReturnSize` without the CRC and property checks (§2.12):
        v1/v2 magic, TOTALSIZE at least the minimum record and inside the buffer, BODYLENGTH,
        TOPICLENGTH and PROPERTIESLENGTH inside TOTALSIZE, the recomputed length equal to TOTALSIZE,
        and PHYSICALOFFSET equal to base_offset + position."""
        size, fits = self.size, self.reader.fits
        ok = (self.magic == MAGIC_V1) | (self.magic == MAGIC_V2)
        ok &= (size >= MIN_RECORD_SIZE) & fits(self.starts, size)
        ok &= self.physical_offset == base_offset + self.starts
        ok &= (self.body_len <= size) & (self.topic_len >= 0) & (self.topic_len <= size)
        ok &= self.props_len <= size
        ok &= fits(self.starts + self.body_at, np.maximum(self.body_len, 0) + self.topic_len_width)
        ok &= fits(self.starts + self.props_len_at, 2 + np.maximum(self.props_len, 0))
        computed = self.props_at + self.props_len + (self.body_len - np.maximum(self.body_len, 0))
        computed += self.topic_len - np.maximum(self.topic_len, 0)
        return ok & (computed == size)

    def is_schedule_topic(self) -> np.ndarray:
        """Rows whose topic is SCHEDULE_TOPIC_XXXX (their DELAY property is checked, §2.12 step 6)."""
        rows = np.flatnonzero(self.topic_len == len(_SCHEDULE_TOPIC))
        topics = _gather_blocks(
            self.reader.buf, self.starts[rows] + self.topic_at[rows], len(_SCHEDULE_TOPIC)
        )
        out = np.zeros(len(self.starts), dtype=bool)
        out[rows[(topics == _SCHEDULE_TOPIC).all(axis=1)]] = True
        return out


# ---------------------------------------------------------------------------------------------
# walk


@dataclass(frozen=True)
class RecordWalk:
    """Outcome of `walk_records`.

    `starts`: int64 positions (in the buffer) of the valid records found, in order. `stop_pos`:
    where the walk stopped; `stop_kind` "end" (reached `end`: the first record start at or after
    it, or the buffer end), "blank" (a BLANK record at stop_pos ends the segment) or "invalid"
    (the record at stop_pos fails the §2.12 checks; `reason` says why).
    """

    starts: np.ndarray
    stop_pos: int
    stop_kind: StopKind
    reason: str


def walk_records(buf: Any, base_offset: int, start: int, end: int, *, check_crc: bool = False) -> RecordWalk:
    """Record starts from `start` following TOTALSIZE (the recovery loop of §2.12).

    Records starting before `end` are returned (the last one may extend past `end`, not past the
    buffer). The walk stops at `end`, at a BLANK, or at the first invalid record: anything
    `check_record(..., expected_physical_offset=base_offset + position)` rejects, plus a TOTALSIZE
    below the 91-byte minimum; with `check_crc` a BODYCRC mismatch too.

    Vectorized: per window, candidate starts are the positions with a v1/v2 magic whose
    PHYSICALOFFSET field equals base_offset + position; the chain is followed through them run by
    run (a run is a stretch where each candidate plus its TOTALSIZE is the next candidate), so a
    body that happens to contain a candidate is skipped, never trusted.
    """
    if start < 0:
        raise ValueError(f"walk start {start} is negative")
    buf = as_byte_array(buf)
    reader = FieldReader(buf)
    end = min(end, len(buf))
    found: list[np.ndarray] = []
    pos = start
    while pos < end:
        window_end = min(end, pos + WALK_WINDOW)
        chain, next_pos = _follow_chain(reader, record_candidates(reader, base_offset, pos, window_end), pos)
        bad, reason = _first_invalid(reader, base_offset, chain, check_crc)
        if bad is not None:
            found.append(chain[:bad])
            return RecordWalk(_concat(found), int(chain[bad]), "invalid", reason)
        found.append(chain)
        if next_pos < window_end:
            kind, reason = _classify(buf, base_offset, next_pos)
            return RecordWalk(_concat(found), next_pos, kind, reason)
        pos = next_pos
    return RecordWalk(_concat(found), pos, "end", f"reached the end position {end}")


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def record_candidates(reader: FieldReader, base_offset: int, lo: int, hi: int) -> np.ndarray:
    """Positions p in [lo, hi) with a v1/v2 magic at p+4 and PHYSICALOFFSET == base_offset + p."""
    buf = reader.buf
    hi = min(hi, len(buf) - (OFF_PHYSICALOFFSET + 8) + 1)
    if hi <= lo:
        return np.zeros(0, dtype=np.int64)
    pos = np.flatnonzero(buf[lo + OFF_MAGIC : hi + OFF_MAGIC] == _MAGIC_BYTES[0]) + lo
    for i in (1, 2):  # byte checks first: cheap, and they drop nearly every false candidate
        pos = pos[buf[pos + OFF_MAGIC + i] == _MAGIC_BYTES[i]]
    magic = reader.read(pos + OFF_MAGIC, ">u4")
    pos = pos[(magic == MAGIC_V1) | (magic == MAGIC_V2)]
    return pos[reader.read(pos + OFF_PHYSICALOFFSET, ">i8") == base_offset + pos]


def _follow_chain(reader: FieldReader, cands: np.ndarray, pos: int) -> tuple[np.ndarray, int]:
    """The chain of candidates starting at pos: (record starts, position after the last one).

    Stops at the first chain position that is not a candidate or at a TOTALSIZE too small to
    advance; the caller validates the returned records before trusting the next position.
    """
    if not len(cands):
        return cands, pos
    sizes = reader.read(cands + OFF_TOTALSIZE, ">i4")
    nexts = cands + sizes
    linked = np.zeros(len(cands), dtype=bool)
    linked[:-1] = (nexts[:-1] == cands[1:]) & (sizes[:-1] >= MIN_RECORD_SIZE)
    breaks = np.flatnonzero(~linked)
    runs: list[np.ndarray] = []
    i = int(np.searchsorted(cands, pos))
    while i < len(cands) and cands[i] == pos:
        last = int(breaks[np.searchsorted(breaks, i)])
        runs.append(cands[i : last + 1])
        if sizes[last] < MIN_RECORD_SIZE:
            break
        pos = int(nexts[last])
        i = int(np.searchsorted(cands, pos))
    return _concat(runs), pos


def _first_invalid(
    reader: FieldReader, base_offset: int, chain: np.ndarray, check_crc: bool
) -> tuple[int | None, str]:
    """Index of the first record of the chain that fails the §2.12 checks, with the reason."""
    if not len(chain):
        return None, ""
    fields = RecordFields(reader, chain)
    ok = fields.structurally_valid(base_offset)
    scheduled = np.flatnonzero(ok & fields.is_schedule_topic() & (fields.props_len > 0))
    for row in scheduled:
        ok[row] = _check(reader.buf, base_offset, int(chain[row]), False).kind == "record"
    if check_crc:
        _check_body_crcs(reader, fields, ok)
    bad = np.flatnonzero(~ok)
    if not len(bad):
        return None, ""
    first = int(bad[0])
    pos = int(chain[first])
    verdict = _check(reader.buf, base_offset, pos, check_crc)
    if verdict.kind == "invalid" and verdict.reason:
        return first, verdict.reason
    return first, f"TOTALSIZE {int(fields.size[first])} at position {pos} is below {MIN_RECORD_SIZE} bytes"


def _check_body_crcs(reader: FieldReader, fields: RecordFields, ok: np.ndarray) -> None:
    """Clear `ok` where BODYCRC differs from the body's masked CRC-32 (§2.7); empty bodies pass."""
    view = memoryview(reader.buf)
    stored = fields.read(OFF_BODYCRC, ">i4")
    body_at, body_len = fields.starts + fields.body_at, fields.body_len
    for row in np.flatnonzero(ok & (body_len > 0)):
        at = int(body_at[row])
        if zlib.crc32(view[at : at + int(body_len[row])]) & 0x7FFFFFFF != stored[row]:
            ok[row] = False


def _check(buf: np.ndarray, base_offset: int, pos: int, check_crc: bool) -> RecordCheck:
    return check_record(buf, pos, check_crc=check_crc, expected_physical_offset=base_offset + pos)


def _classify(buf: np.ndarray, base_offset: int, pos: int) -> tuple[StopKind, str]:
    """Why the chain cannot continue at pos: a BLANK, or the reference checker's reason."""
    verdict = _check(buf, base_offset, pos, False)
    if verdict.kind == "blank":
        return "blank", f"BLANK record of {verdict.size} bytes at position {pos}"
    return "invalid", verdict.reason or f"no valid record at position {pos}"


# ---------------------------------------------------------------------------------------------
# decode


def decode_records(
    buf: Any,
    starts: np.ndarray,
    base_offset: int,
    columns: tuple[str, ...] | list[str] | None,
    *,
    decompress: bool = True,
) -> pa.RecordBatch:
    """The requested table columns (all when None) of the valid records at `starts` (§2, table.py).

    `starts` are buffer positions of records already checked (`walk_records`, `check_record`), in
    any order, repeats allowed. `commitLogOffset` and `msgId` use the PHYSICALOFFSET field (the
    walk checked it equals base_offset + position). Strings with invalid UTF-8 get U+FFFD like
    Java's decoder. `properties` keeps every property including a trailing 5.2+ `__CRC32#`; for a
    repeated name the last one wins and its entry sits where the last one was stored.
    """
    schema = arrow_schema(columns)
    starts = np.asarray(starts, dtype=np.int64)
    if not len(starts):
        return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)
    batch = _Batch(as_byte_array(buf), starts, base_offset, decompress)
    return pa.RecordBatch.from_arrays([batch.column(name) for name in schema.names], schema=schema)


_HEADER_COLUMNS = frozenset(COLUMNS) & frozenset(_HEADER_DTYPES[0].names) - {"bornHost", "storeHost"}
"""Integer and timestamp columns that are header fields of the same name."""


class _Batch:
    """Column builders over one set of records; shared intermediates are computed once."""

    def __init__(self, buf: np.ndarray, starts: np.ndarray, base_offset: int, decompress: bool) -> None:
        self.buf = buf
        self.starts = starts
        self.base_offset = base_offset
        self.decompress = decompress
        self.fields = RecordFields(FieldReader(buf), starts)

    def column(self, name: str) -> pa.Array:
        if name in _HEADER_COLUMNS:
            return self._header_column(name)
        return getattr(self, f"_col_{name}")()

    def _header_column(self, name: str) -> pa.Array:
        """An integer or timestamp column read straight from the fixed header."""
        values = self.fields.header(name)
        arrow_type = COLUMNS[name]
        if arrow_type == COLUMNS["storeTimestamp"]:
            micros = values * 1000
            return pa.Array.from_buffers(arrow_type, len(micros), [None, pa.py_buffer(micros)])
        return pa.array(values.astype(arrow_type.to_pandas_dtype()), type=arrow_type)

    def _col_commitLogOffset(self) -> pa.Array:
        return pa.array(self.fields.physical_offset, type=pa.int64())

    def _col_storeSize(self) -> pa.Array:
        return pa.array(self.fields.size.astype(np.int32), type=pa.int32())

    def _col_bornHost(self) -> pa.Array:
        return _host_strings(self.fields.host_groups("bornHost"), len(self.starts))

    def _col_storeHost(self) -> pa.Array:
        return _host_strings(self.fields.host_groups("storeHost"), len(self.starts))

    def _col_msgId(self) -> pa.Array:
        return _msg_ids(self.fields.host_groups("storeHost"), self.fields.physical_offset)

    def _col_topic(self) -> pa.Array:
        f = self.fields
        return _utf8(_binary_column(self.buf, self.starts + f.topic_at, f.topic_len))

    def _col_body(self) -> pa.Array:
        f = self.fields
        body_at, body_len = self.starts + f.body_at, np.maximum(f.body_len, 0)
        views = _views(self.buf, body_at, body_len, 0)
        sources = [self.buf]
        compressed = np.flatnonzero(f.sys_flag & SYSFLAG_COMPRESSED) if self.decompress else []
        if len(compressed):
            bodies = self._decompressed(body_at, body_len, compressed)
            lengths = np.array([len(body) for body in bodies], dtype=np.int64)
            plain = np.frombuffer(b"".join(bodies), dtype=np.uint8)
            views[compressed] = _views(plain, np.cumsum(lengths) - lengths, lengths, 1)
            sources.append(plain)
        return _from_views(views, sources).cast(pa.binary())

    def _decompressed(self, body_at: np.ndarray, body_len: np.ndarray, rows: np.ndarray) -> list[bytes]:
        """Per-row decompression of the (rare) compressed bodies (§2.9)."""
        view = memoryview(self.buf)
        bodies = []
        for row in rows:
            at = int(body_at[row])
            try:
                bodies.append(
                    decompress_body(view[at : at + int(body_len[row])], int(self.fields.sys_flag[row]))
                )
            except ValueError as exc:
                offset = self.base_offset + int(self.starts[row])
                raise ValueError(f"record at physical offset {offset}: {exc}") from None
        return bodies

    @cached_property
    def _properties(self) -> _Properties:
        f = self.fields
        return _Properties(
            _utf8(_binary_column(self.buf, self.starts + f.props_at, np.maximum(f.props_len, 0)))
        )

    def _col_properties(self) -> pa.Array:
        return self._properties.as_map()

    def _col_key(self) -> pa.Array:
        return self._properties.value_of(PROPERTY_KEYS)

    def _col_uniqKey(self) -> pa.Array:
        return self._properties.value_of(PROPERTY_UNIQ_KEY)

    def _col_tags(self) -> pa.Array:
        return self._properties.value_of(PROPERTY_TAGS)

    def _col_keys(self) -> pa.Array:
        return _split_keys(self._properties.value_of(PROPERTY_KEYS))


# ---------------------------------------------------------------------------------------------
# variable-length values


def _views(source: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, buffer_index: int) -> np.ndarray:
    """Arrow BinaryView structs (n x 4 int32) for source[offsets[i] : offsets[i] + lengths[i]].

    Values up to 12 bytes are copied inline (zero padded), longer ones keep a 4-byte prefix and
    point at (buffer_index, offset).
    """
    views = np.empty((len(offsets), 4), dtype=np.int32)
    views[:, 0] = lengths
    head = _gather_blocks(source, offsets, _INLINE_VIEW)
    inline = lengths <= _INLINE_VIEW
    kept = np.where(inline, lengths, 4)
    np.multiply(head, kept[:, None] > _INLINE_POSITIONS, out=head)
    views[:, 1:] = head.view(np.int32)
    long_rows = np.flatnonzero(~inline)
    views[long_rows, 2] = buffer_index
    views[long_rows, 3] = offsets[long_rows]
    return views


def _from_views(views: np.ndarray, sources: list[np.ndarray]) -> pa.Array:
    buffers = [None, pa.py_buffer(views), *(pa.py_buffer(s) for s in sources)]
    return pa.Array.from_buffers(pa.binary_view(), len(views), buffers)


def _binary_column(source: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """Binary array of the byte ranges [offsets, offsets + lengths) of source."""
    return _from_views(_views(source, offsets, lengths, 0), [source]).cast(pa.binary())


def _utf8(values: pa.Array) -> pa.Array:
    """Binary -> string; a row with invalid UTF-8 is decoded with U+FFFD replacement like Java.

    The valid case costs one validation pass; invalid rows are located by bisection.
    """
    as_text = values.view(pa.string())
    try:
        as_text.validate(full=True)
        return as_text
    except pa.ArrowInvalid:
        pass
    if len(values) <= 64:
        items = values.to_pylist()
        return pa.array([None if v is None else v.decode("utf-8", "replace") for v in items], pa.string())
    middle = len(values) // 2
    return pa.concat_arrays([_utf8(values.slice(0, middle)), _utf8(values.slice(middle))])


def _offsets_and_data(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(n+1 int64 offsets into data, the data buffer as uint8) of a string/binary array."""
    offsets_buf, data_buf = values.buffers()[1:3]
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[values.offset : values.offset + len(values) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return offsets.astype(np.int64), data


def _take_ranges(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> pa.Array:
    """String array of data[starts[i]:ends[i]] for ascending, non-overlapping ranges.

    Built as one zero-copy array whose elements alternate range / gap, then a take of the ranges.
    """
    count = len(starts)
    bounds = np.empty(2 * count + 1, dtype=np.int32)
    bounds[0:-1:2] = starts
    bounds[1::2] = ends
    bounds[-1] = ends[-1] if count else 0
    both = pa.Array.from_buffers(pa.string(), 2 * count, [None, pa.py_buffer(bounds), pa.py_buffer(data)])
    return both.take(pa.array(np.arange(0, 2 * count, 2)))


def _terminate_rows(values: pa.Array, terminator: int) -> pa.Array:
    """Append the terminator to every non-empty row that does not end with it (a no-op for parsing)."""
    offsets, data = _offsets_and_data(values)
    lengths = np.diff(offsets)
    last = data[np.maximum(offsets[1:] - 1, 0)] if len(data) else np.zeros(len(lengths), np.uint8)
    open_rows = (lengths > 0) & (last != terminator)
    if not open_rows.any():
        return values
    closed = pc.binary_join_element_wise(values, "", chr(terminator))
    return pc.if_else(pa.array(open_rows), closed, values)


def _segments(values: pa.Array, terminator: int, other: int | None) -> _Segments:
    """Split every row of a string array at `terminator` bytes (rows are terminated first)."""
    values = _terminate_rows(values, terminator)
    offsets, data = _offsets_and_data(values)
    lo, hi = int(offsets[0]), int(offsets[-1])
    return _Segments(values, offsets, data, lo, hi, terminator, other)


class _Segments:
    """Segments between terminator bytes of a string array whose non-empty rows end with one.

    Segment j covers [start[j], end[j]) where end[j] is the j-th terminator; row r owns segments
    [row_first[r], row_first[r+1]). With `other` set, `first_other[j]` is the position of the
    first `other` byte inside segment j, or -1.
    """

    def __init__(
        self,
        values: pa.Array,
        offsets: np.ndarray,
        data: np.ndarray,
        lo: int,
        hi: int,
        terminator: int,
        other: int | None,
    ) -> None:
        self.values, self.offsets, self.data = values, offsets, data
        window = data[lo:hi]
        if other is None:
            marks = np.flatnonzero(window == terminator) + lo
            is_end = np.arange(len(marks))
        else:
            marks = np.flatnonzero(window <= max(terminator, other)) + lo
            kinds = data[marks]
            marks = marks[(kinds == terminator) | (kinds == other)]
            is_end = np.flatnonzero(data[marks] == terminator)
        self.end = marks[is_end]
        self.start = np.empty_like(self.end)
        if len(self.end):
            self.start[0] = lo
            self.start[1:] = self.end[:-1] + 1
        self.row_first = np.searchsorted(self.end, offsets)
        if other is not None:
            first_mark = np.zeros_like(is_end)
            first_mark[1:] = is_end[:-1] + 1
            has_other = first_mark < is_end
            self.first_other = np.where(has_other, marks[np.minimum(first_mark, max(len(marks) - 1, 0))], -1)


class _Properties:
    """PROPERTIES of every row parsed like `string2messageProperties` (§2.8): split at 0x02, the
    first 0x01 splits name and value, empty names or values are skipped, the last duplicate wins.

    Entries are byte ranges of the properties text; entry e belongs to row `entry_rows[e]`.
    """

    def __init__(self, text: pa.Array) -> None:
        self.rows = len(text)
        seg = _segments(text, PROPERTY_SEPARATOR, PROPERTY_NAME_VALUE_SEPARATOR)
        split = seg.first_other
        used = (split > seg.start) & (split < seg.end - 1)
        self.entry_offsets = _kept_offsets(used, seg.row_first)
        self.data = seg.data
        self.name_at, self.split_at, self.value_end = seg.start[used], split[used], seg.end[used]

    @cached_property
    def entry_rows(self) -> np.ndarray:
        return np.repeat(np.arange(self.rows), np.diff(self.entry_offsets))

    @cached_property
    def name_len(self) -> np.ndarray:
        return self.split_at - self.name_at

    @cached_property
    def name_head(self) -> np.ndarray:
        """The first 8 bytes of each name as a little-endian uint64, bytes past the name zeroed."""
        word = _gather_blocks(self.data, self.name_at, _NAME_WORD).view("<u8")[:, 0]
        return word & _WORD_MASKS[np.minimum(self.name_len, _NAME_WORD)]

    def _values(self, entries: np.ndarray) -> pa.Array:
        return _take_ranges(self.data, self.split_at[entries] + 1, self.value_end[entries])

    def value_of(self, name: str) -> pa.Array:
        """The value of property `name` (at most 8 bytes of UTF-8) per row, null where absent."""
        wanted = name.encode("utf-8")
        if len(wanted) > _NAME_WORD:
            raise ValueError(f"property lookup by name supports names up to {_NAME_WORD} bytes, got {name!r}")
        matches = np.flatnonzero(
            (self.name_len == len(wanted)) & (self.name_head == _little_endian_word(wanted))
        )
        rows = self.entry_rows[matches]
        last = np.ones(len(matches), dtype=bool)
        last[:-1] = rows[1:] != rows[:-1]
        matches, rows = matches[last], rows[last]
        index = np.full(self.rows, -1, dtype=np.int64)
        index[rows] = np.arange(len(rows))
        return self._values(matches).take(pa.array(index, mask=index < 0))

    def _name_fingerprints(self) -> np.ndarray:
        """Equal names give equal values: length, first 8 and last 8 bytes mixed into a uint64."""
        tail = np.zeros(len(self.name_at), dtype=np.uint64)
        long_names = np.flatnonzero(self.name_len > _NAME_WORD)
        tail[long_names] = _gather_blocks(self.data, self.split_at[long_names] - _NAME_WORD, _NAME_WORD).view(
            "<u8"
        )[:, 0]
        return self.name_head * _MIX[0] + tail * _MIX[1] + self.name_len.astype(np.uint64)

    def as_map(self) -> pa.Array:
        names = _take_ranges(self.data, self.name_at, self.split_at)
        screen = np.asarray(pa.array(self._name_fingerprints()).dictionary_encode().indices, dtype=np.int64)
        keep = _last_of_each_name(names, screen, self.entry_offsets, self.entry_rows)
        entries, offsets = np.arange(len(self.name_at)), self.entry_offsets
        if keep is not None:
            entries, offsets = np.flatnonzero(keep), _kept_offsets(keep, self.entry_offsets)
            names = names.filter(pa.array(keep))
        offsets = pa.array(offsets.astype(np.int32), type=pa.int32())
        return pa.MapArray.from_arrays(offsets, names, self._values(entries), type=COLUMNS["properties"])


_NAME_WORD = 8
_WORD_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(_NAME_WORD + 1)], dtype=np.uint64)
"""Mask keeping the first n bytes of a little-endian 8-byte word."""
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))


def _little_endian_word(data: bytes) -> np.uint64:
    return np.uint64(int.from_bytes(data.ljust(_NAME_WORD, b"\0"), "little"))


def _kept_offsets(kept: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Row offsets into the kept items, given row offsets into all items and a kept mask."""
    kept_before = np.zeros(len(kept) + 1, dtype=np.int64)
    np.cumsum(kept, out=kept_before[1:])
    return kept_before[offsets]


def _last_of_each_name(
    names: pa.Array, screen: np.ndarray, offsets: np.ndarray, entry_rows: np.ndarray
) -> np.ndarray | None:
    """Mask of the entries that survive "last duplicate wins" per row, or None if no row repeats a name.

    `screen` gives equal names equal small codes (distinct names may collide). A row whose 64-bit
    mask of (code mod 64) has as many bits as entries repeats no name; only the other rows are
    resolved exactly, on the name strings.
    """
    counts = np.diff(offsets)
    filled = np.flatnonzero(counts > 0)
    if not len(filled):
        return None
    bits = np.left_shift(np.uint64(1), (screen & 63).astype(np.uint64))
    seen = np.bitwise_count(np.bitwise_or.reduceat(bits, offsets[filled]))
    suspect = filled[seen < counts[filled]]
    if not len(suspect):
        return None
    entries = np.flatnonzero(np.isin(entry_rows, suspect))
    exact = np.asarray(names.take(pa.array(entries)).dictionary_encode().indices, dtype=np.int64)
    key = entry_rows[entries] * (int(exact.max()) + 1) + exact
    _, first_from_back = np.unique(key[::-1], return_index=True)
    keep = np.ones(len(screen), dtype=bool)
    keep[entries] = False
    keep[entries[len(entries) - 1 - first_from_back]] = True
    return keep


def _split_keys(keys: pa.Array) -> pa.Array:
    """KEYS split on single spaces, empty tokens dropped (§2.8); null where there is no KEYS."""
    split = pc.split_pattern(keys, KEY_SEPARATOR)
    offsets, tokens = np.asarray(split.offsets, dtype=np.int64), split.values
    empty = np.asarray(pc.binary_length(tokens)) == 0
    if empty.any():
        offsets = _kept_offsets(~empty, offsets)
        tokens = tokens.filter(pa.array(~empty))
    offsets = pa.array(offsets.astype(np.int32), type=pa.int32())
    return pa.ListArray.from_arrays(offsets, tokens, type=COLUMNS["keys"], mask=keys.is_null())


# ---------------------------------------------------------------------------------------------
# hosts and ids


def _host_strings(groups: list[tuple[slice | np.ndarray, np.ndarray]], n: int) -> pa.Array:
    """`ip:port` / `[v6]:port` per row (§2.4). Hosts repeat, so each distinct value is formatted once."""
    labels: list[str] = []
    codes = np.zeros(n, dtype=np.int64)
    for rows, raw in groups:
        width = raw.shape[1]
        encoded = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(width), len(raw), [None, pa.py_buffer(np.ascontiguousarray(raw))]
        ).dictionary_encode()
        codes[rows] = np.asarray(encoded.indices) + len(labels)
        labels.extend(decode_host(value) for value in encoded.dictionary.to_pylist())
    return pa.array(labels, type=pa.string()).take(pa.array(codes))


def _msg_ids(store_hosts: list[tuple[slice | np.ndarray, np.ndarray]], offsets: np.ndarray) -> pa.Array:
    """offsetMsgId per row: uppercase hex of store host bytes + 8-byte PHYSICALOFFSET (§3.1).

    Each host layout group becomes one zero-copy string array of fixed-width ids; several groups are
    put back into row order with a take.
    """
    parts, group_rows = [], []
    for rows, host in store_hosts:
        count, width = host.shape
        raw = np.empty((count, width + 8), dtype=np.uint8)
        raw[:, :width] = host
        raw[:, width:] = offsets[rows].astype(">i8").view(np.uint8).reshape(count, 8)
        hex_chars = _HEX_PAIRS[raw]
        bounds = (2 * (width + 8) * np.arange(count + 1)).astype(np.int32)
        parts.append(
            pa.Array.from_buffers(pa.string(), count, [None, pa.py_buffer(bounds), pa.py_buffer(hex_chars)])
        )
        group_rows.append(rows)
    if len(parts) == 1:
        return parts[0]
    position = np.empty(len(offsets), dtype=np.int64)
    position[np.concatenate(group_rows)] = np.arange(len(offsets))
    return pa.concat_arrays(parts).take(pa.array(position))
