"""Columnar commit-log decoding: find record starts in a segment buffer and decode many records into
one Arrow record batch (spec §2.2-§2.12, §3.1).

`walk_records` follows the TOTALSIZE chain like recovery (§2.12); `decode_records` turns known record
starts into the table's columns (`table.py`). The per-record work runs in compiled kernels
(`kernels/`) that make one pass over the records and write Arrow buffers directly (int32 offsets +
contiguous data, wrapped without copying); Python handles only the rare cases: error reasons
(`record.check_record`), compressed bodies (`compression.decompress_body`), host
formatting once per distinct host, and rows with invalid UTF-8 (decoded by `record.decode_record`
with U+FFFD replacement). `record.py` is the scalar reference these functions are tested against;
without numba, `reference.py` does their work with it (`rmqstore.speedups`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from rmqstore.format import reference
from rmqstore.format.compression import MAX_MESSAGE_SIZE, BodyDecompressionError, decompress_bodies
from rmqstore.format.dledger import entry_problem
from rmqstore.format.hosts import decode_host
from rmqstore.format.layout import IPV4_HOST_LEN, MIN_RECORD_SIZE
from rmqstore.format.record import check_record, decode_record
from rmqstore.format.table import COLUMNS, STRING_LIST, STRING_MAP, arrow_schema
from rmqstore.speedups import NUMBA

if NUMBA:  # else `format/reference.py` stands in for the kernels
    from rmqstore.format.kernels import columns, crc, recordscan, walk

StopKind = Literal["end", "blank", "invalid"]

WALK_WINDOW = 8 << 20
"""Bytes of record starts walked per kernel call (bounds the start buffer; a record may end past it)."""
MAX_BUFFER_SIZE = (1 << 31) - 1
"""Arrow strings use int32 offsets; a commit-log segment size is a Java int, so it always fits."""


def as_byte_array(buf: Any) -> np.ndarray:
    """A read-only 1-D uint8 numpy view of a bytes-like object or array (no copy).

    Read-only always, so the kernels are compiled for one buffer type only.
    """
    arr = buf if isinstance(buf, np.ndarray) else np.frombuffer(buf, dtype=np.uint8)
    if arr.dtype != np.uint8 or arr.ndim != 1 or not arr.flags.c_contiguous:
        raise ValueError("the buffer must be a contiguous 1-D uint8 array")
    if len(arr) > MAX_BUFFER_SIZE:
        raise ValueError(f"buffer of {len(arr)} bytes exceeds the largest segment size {MAX_BUFFER_SIZE}")
    return _read_only(arr)


def _read_only(arr: np.ndarray) -> np.ndarray:
    if arr.flags.writeable:
        arr = arr.view()
        arr.flags.writeable = False
    return arr


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


def walk_records(buf: Any, base_offset: int, start: int, end: int, *, check_crc: bool = False,
                 lead: int = 0) -> RecordWalk:
    """Record starts from `start` following TOTALSIZE (the recovery loop of §2.12).

    Records starting before `end` are returned (the last one may extend past `end`, not past the
    buffer). The walk stops at `end`, at a BLANK, or at the first invalid record: anything
    `check_record(..., expected_physical_offset=base_offset + position)` rejects, plus a TOTALSIZE
    below the 91-byte minimum; with `check_crc` a BODYCRC mismatch too. `lead`: the DLedger entry
    header before each record (§2.13, `kernels.walk.walk`), in `buf` before `start`.
    """
    if start < 0:
        raise ValueError(f"walk start {start} is negative")
    buf = as_byte_array(buf)
    end = min(end, len(buf))
    walker = _walk if NUMBA else _reference().walk
    starts, pos, kind = walker(buf, base_offset, start, end, check_crc, lead)
    if kind != "end":
        return _stopped(buf, base_offset, starts, pos, kind, check_crc, lead)
    return RecordWalk(starts, pos, "end", f"reached the end position {end}")


def _reference() -> Any:
    """The scalar reference standing in for the kernels (numba missing), said once (`slow_note`)."""
    reference.slow_note()
    return reference


def _walk(buf: np.ndarray, base_offset: int, start: int, end: int, check_crc: bool,
          lead: int) -> tuple[np.ndarray, int, StopKind]:
    """`kernels.walk.walk` window by window, then BODYCRC (`kernels.crc`): (starts, stop, kind)."""
    kinds: dict[int, StopKind] = {recordscan.END: "end", recordscan.BLANK: "blank",
                                  recordscan.INVALID: "invalid"}
    out = np.empty(WALK_WINDOW // MIN_RECORD_SIZE + 1, dtype=np.int64)
    found: list[np.ndarray] = []
    pos, kind = start, recordscan.END
    while pos < end:
        count, pos, kind = walk.walk(buf, base_offset, pos, min(end, pos + WALK_WINDOW), out, lead)
        chain = out[:count].copy()
        bad = np.flatnonzero(crc.crc_mismatches(buf, chain, crc.NATIVE_CRC32)) if check_crc else ()
        if len(bad):
            chain, pos, kind = chain[: bad[0]], int(chain[bad[0]]), recordscan.INVALID
        found.append(chain)
        if kind != recordscan.END:
            break
    return _concat(found), int(pos), kinds[int(kind)]


@dataclass(frozen=True)
class RangesWalk:
    """Outcome of `walk_ranges`: `starts` (int64 buffer positions of the records of the clean ranges,
    in range order), `offsets` (the physical offset of each of those records) and `clean` (per
    range: its records reach exactly its end, none invalid)."""

    starts: np.ndarray
    offsets: np.ndarray
    clean: np.ndarray


def walk_ranges(buf: Any, physical: np.ndarray, length: np.ndarray, *, check_crc: bool = False) -> RangesWalk:
    """`walk_records` over many ranges laid back to back in one buffer, in one compiled call.

    Range r holds length[r] > 0 bytes of the commit log from physical offset physical[r] (a record
    start), right after range r - 1 (as `RandomAccessFile.read_ranges` returns them). A range is
    clean when its walk reaches exactly its end without a BLANK, an invalid record or (with
    `check_crc`) a BODYCRC mismatch; the starts of unclean ranges are left out, for the caller to
    read them another way (with the reasons `walk_records` gives).
    """
    buf = as_byte_array(buf)
    physical, length = (np.ascontiguousarray(a, dtype=np.int64) for a in (physical, length))
    at = np.cumsum(length) - length
    if NUMBA:
        out = np.empty(len(buf) // MIN_RECORD_SIZE + len(at) + 1, dtype=np.int64)
        count, clean = walk.walk_ranges(buf, at, physical, length, out)
        starts = out[:count]
    else:
        starts, clean = _reference().walk_ranges(buf, at, physical, length, check_crc)
    owner = np.searchsorted(at, starts, side="right") - 1
    if check_crc and NUMBA:
        clean[owner[crc.crc_mismatches(buf, starts, crc.NATIVE_CRC32)]] = False
    kept = clean[owner]
    offsets = physical[owner] + starts - at[owner]
    return RangesWalk(starts[kept].copy(), offsets[kept], clean)


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _stopped(
    buf: np.ndarray, base_offset: int, starts: np.ndarray, pos: int, kind: StopKind, check_crc: bool,
    lead: int = 0,
) -> RecordWalk:
    """The walk result for a stop at a BLANK or an invalid record, with the reference checker's reason.

    The reason counts positions from the record's first byte (its entry header's with `lead`), as a
    check of that record alone does (`CommitLog.check_at`): the same damage reads the same whatever
    window the walk read it in."""
    if kind == "blank" and lead:
        return RecordWalk(starts, pos, "blank", f"DLedger blank at position {pos - lead}")
    record, physical = buf[pos - lead:], base_offset + pos
    verdict = check_record(record, lead, check_crc=check_crc, expected_physical_offset=physical)
    if kind == "blank":
        return RecordWalk(starts, pos, "blank", f"BLANK record of {verdict.size} bytes at position {pos}")
    size = verdict.size if verdict.kind == "record" else None
    reason = entry_problem(record, 0, physical - lead, size) if lead else None  # the header first
    if reason is None and verdict.kind == "invalid":
        reason = verdict.reason
    if reason is None:
        size = int.from_bytes(buf[pos : pos + 4].tobytes(), "big", signed=True)
        reason = f"record at position {lead} fails the structural checks (TOTALSIZE {size})"
    return RecordWalk(starts, pos, "invalid", reason)


# ---------------------------------------------------------------------------------------------
# decode


def decode_records(
    buf: Any,
    starts: np.ndarray,
    base_offset: int | np.ndarray,
    columns: tuple[str, ...] | list[str] | None,
    *,
    decompress: bool = True,
    max_body_size: int = MAX_MESSAGE_SIZE,
    decompress_threads: int | None = None,
) -> pa.RecordBatch:
    """The requested table columns (all when None) of the valid records at `starts` (design §2, table.py).

    `starts` are buffer positions of records already checked (`walk_records`, `check_record`), in
    any order, repeats allowed; a position holding no structurally valid record raises ValueError.
    With `decompress`, compressed bodies are decompressed like `record.decode_record` (an empty
    stored body stays empty); the first that cannot be, or inflates past `max_body_size` bytes,
    raises BodyDecompressionError carrying its row and buffer position. Bodies are decompressed on
    up to `decompress_threads` threads (`compression.decompress_bodies`; None: its default).
    `base_offset` is the physical offset of buf[0], or (for ranges laid back to back, see
    `walk_ranges`) the physical offset of each record at `starts`; errors name those offsets.
    `commitLogOffset` and `msgId` use the PHYSICALOFFSET field (the walk checked it equals the
    record's physical offset). Strings with invalid UTF-8 get U+FFFD like Java's decoder.
    `properties` keeps every property including a trailing 5.2+ `__CRC32#`; for a repeated name the
    last value wins, at the place where the name was first stored.
    """
    schema = arrow_schema(columns)
    starts = _read_only(np.ascontiguousarray(starts, dtype=np.int64))
    if not len(starts):
        return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)
    offsets = base_offset + starts if np.isscalar(base_offset) else np.asarray(base_offset, dtype=np.int64)
    if not NUMBA:
        return _reference().decode(buf, starts, offsets, schema.names, decompress=decompress,
                                   max_body_size=max_body_size)
    built = _decode(as_byte_array(buf), starts, offsets, frozenset(schema.names),
                    max_body_size if decompress else None, decompress_threads)
    return pa.RecordBatch.from_arrays([built[name] for name in schema.names], schema=schema)


_FIXED_I32 = ("queueId", "storeSize", "bodyCrc", "flag", "sysFlag", "reconsumeTimes")
_FIXED_I64 = (
    "queueOffset",
    "commitLogOffset",
    "bornTimestamp",
    "storeTimestamp",
    "preparedTransactionOffset",
)
"""Columns read from the fixed header, in the row order of the kernel's fixed_i32 / fixed_i64."""
_WANTED = ("key", "tags", "uniqKey")
"""String columns of the KEYS, TAGS and UNIQ_KEY properties, in the kernel's wanted_* order (then
the `keys` list)."""
_PROPERTY_COLUMNS = frozenset({"properties", "keys", *_WANTED})
_MSG_ID_LEN = {False: 32, True: 56}
"""Hex digits of an offsetMsgId with an IPv4 / IPv6 store host (§3.1)."""


def _empty(dtype: type, *shape: int) -> np.ndarray:
    """An uninitialized array in Arrow's memory pool, which reuses freed memory: successive batches
    then write to pages already mapped instead of faulting in fresh ones."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    return np.frombuffer(pa.allocate_buffer(count * dtype.itemsize), dtype=dtype, count=count).reshape(shape)


def _offsets(wanted: bool, count: int) -> np.ndarray:
    """int32 offsets for `count` values (first one 0), or an empty array when not wanted."""
    out = _empty(np.int32, count + 1 if wanted else 0)
    if wanted:
        out[0] = 0
    return out


class _Plan:
    """Output buffers of one `columns.decode` call, sized from `columns.measure`."""

    def __init__(self, buf: np.ndarray, starts: np.ndarray, offsets: np.ndarray,
                 names: frozenset[str]) -> None:
        bad_row, body_total, topic_total, props_total, store_v6, compressed = columns.measure(buf, starts)
        if bad_row >= 0:
            pos = int(starts[bad_row])
            verdict = check_record(buf, pos, check_crc=False)
            raise reference.no_record(pos, int(offsets[bad_row]), verdict.reason or verdict.kind)
        rows = len(starts)
        msg_id_total = (rows - store_v6) * _MSG_ID_LEN[False] + store_v6 * _MSG_ID_LEN[True]
        if max(body_total, props_total, msg_id_total) > MAX_BUFFER_SIZE:
            raise ValueError(
                f"{rows} records are too many for one batch: a column would exceed {MAX_BUFFER_SIZE} bytes"
            )
        self.rows = rows
        self.compressed = compressed
        want = np.zeros(columns.WANT_FLAGS, dtype=np.uint8)
        want[columns.WANT_FIXED] = bool(names & {*_FIXED_I32, *_FIXED_I64})
        for flag, name in (
            (columns.WANT_BODY, "body"),
            (columns.WANT_TOPIC, "topic"),
            (columns.WANT_MSG_ID, "msgId"),
            (columns.WANT_BORN_HOST, "bornHost"),
            (columns.WANT_STORE_HOST, "storeHost"),
            (columns.WANT_PROPERTIES, "properties"),
            (columns.WANT_KEY, "key"),
            (columns.WANT_TAGS, "tags"),
            (columns.WANT_UNIQ_KEY, "uniqKey"),
            (columns.WANT_KEYS, "keys"),
        ):
            want[flag] = name in names
        self.want = want
        fixed_rows = rows if want[columns.WANT_FIXED] else 0
        self.fixed_i32 = _empty(np.int32, len(_FIXED_I32), fixed_rows)
        self.fixed_i64 = _empty(np.int64, len(_FIXED_I64), fixed_rows)
        self.body_offsets = _offsets(bool(want[columns.WANT_BODY]), rows)
        self.body_total = body_total if want[columns.WANT_BODY] else 0
        self.reserved = np.zeros(0, dtype=np.int64)
        self.replacements: list[bytes] = []
        self.replaced_rows = np.zeros(0, dtype=np.int64)
        self.topic_offsets = _offsets(bool(want[columns.WANT_TOPIC]), rows)
        self.topic_data = _empty(np.uint8, topic_total if want[columns.WANT_TOPIC] else 0)
        self.msg_id_offsets = _offsets(bool(want[columns.WANT_MSG_ID]), rows)
        self.msg_id_data = _empty(np.uint16, msg_id_total // 2 if want[columns.WANT_MSG_ID] else 0)
        host_columns = int(want[columns.WANT_BORN_HOST]) + int(want[columns.WANT_STORE_HOST])
        self.host_codes = _empty(np.int32, 2, rows if host_columns else 0)
        distinct = host_columns * rows
        self.host_table = np.zeros(
            1 << max(2 * distinct - 1, 1).bit_length() if host_columns else 0, np.int32
        )
        self.hosts = _empty(np.uint64, distinct, 3)
        self.host_widths = _empty(np.int64, distinct)
        props = bool(names & _PROPERTY_COLUMNS)
        # every property needs 3 bytes (name, 0x01, value) and a separator, except a row's last one
        max_entries = (props_total + rows) // 3 if props else 0
        want_map = bool(want[columns.WANT_PROPERTIES])
        self.map_offsets = _offsets(want_map, rows)
        self.name_offsets = _offsets(want_map, max_entries)
        self.name_data = _empty(np.uint8, props_total if want_map else 0)
        self.value_offsets = _offsets(want_map, max_entries)
        self.value_data = _empty(np.uint8, props_total if want_map else 0)
        self.wanted_offsets = _empty(np.int32, len(_WANTED) + 1, rows + 1 if props else 0)
        self.wanted_offsets[:, :1] = 0
        self.wanted_data = tuple(_empty(np.uint8, props_total if name in names else 0) for name in _WANTED)
        self.wanted_valid = _empty(np.uint8, len(_WANTED) + 1, rows if props else 0)
        want_keys = bool(want[columns.WANT_KEYS])
        # a KEYS token takes at least one byte and a separator, except the last one
        self.token_offsets = _offsets(want_keys, (props_total + rows) // 2 if want_keys else 0)
        self.token_data = _empty(np.uint8, props_total if want_keys else 0)
        self.bad_text = np.zeros(rows, dtype=np.uint8)
        self.body_data = np.zeros(0, dtype=np.uint8)

    def replace_bodies(self, bodies: list[bytes], rows: np.ndarray, stored_lengths: np.ndarray) -> None:
        """Decompressed bodies for these rows (§2.9) replace the stored ones (`run` copies them in)."""
        lengths = np.array([len(body) for body in bodies], dtype=np.int64)
        self.reserved = np.full(self.rows, -1, dtype=np.int64)
        self.reserved[rows] = lengths
        self.replacements = bodies
        self.replaced_rows = rows
        self.body_total += int(lengths.sum()) - int(stored_lengths.sum())
        if self.body_total > MAX_BUFFER_SIZE:
            raise ValueError(f"decompressed bodies of {self.rows} records exceed {MAX_BUFFER_SIZE} bytes")

    def run(self, buf: np.ndarray, starts: np.ndarray) -> tuple[int, ...]:
        self.body_data = _empty(np.uint8, self.body_total)
        used = columns.decode(
            buf,
            starts,
            self.want,
            self.fixed_i32,
            self.fixed_i64,
            self.body_offsets,
            self.body_data,
            self.reserved,
            self.topic_offsets,
            self.topic_data,
            self.msg_id_offsets,
            self.msg_id_data,
            self.host_codes,
            self.host_table,
            self.hosts,
            self.host_widths,
            self.map_offsets,
            self.name_offsets,
            self.name_data,
            self.value_offsets,
            self.value_data,
            self.wanted_offsets,
            self.wanted_data,
            self.wanted_valid,
            self.token_offsets,
            self.token_data,
            self.bad_text,
        )
        if self.replacements:  # straight into the body column: no joined copy of the bodies
            data = memoryview(self.body_data)
            at = self.body_offsets[self.replaced_rows].tolist()
            for begin, body in zip(at, self.replacements, strict=True):
                data[begin : begin + len(body)] = body
        return used


def _decode(
    buf: np.ndarray,
    starts: np.ndarray,
    offsets: np.ndarray,
    names: frozenset[str],
    max_body_size: int | None,
    threads: int | None,
) -> dict[str, pa.Array]:
    plan = _Plan(buf, starts, offsets, names)
    if max_body_size is not None and plan.compressed and "body" in names:
        rows, body_at, body_len, sys_flags = columns.compressed_bodies(buf, starts)
        bodies = _decompressed(buf, starts, offsets, rows, body_at, body_len, sys_flags, max_body_size,
                               threads)
        plan.replace_bodies(bodies, rows, body_len)
    entries, tokens, name_used, value_used, keys_used, tags_used, uniq_used, token_used, _ = plan.run(
        buf, starts
    )
    rows = plan.rows
    out: dict[str, pa.Array] = {}
    for index, name in enumerate(_FIXED_I32):
        if name in names:
            out[name] = _fixed(pa.int32(), plan.fixed_i32[index])
    for index, name in enumerate(_FIXED_I64):
        if name in names:
            out[name] = _fixed(COLUMNS[name], plan.fixed_i64[index])
    if "body" in names:
        out["body"] = _strings(pa.binary(), plan.body_offsets, plan.body_data)
    if "topic" in names:
        out["topic"] = _strings(pa.string(), plan.topic_offsets, plan.topic_data)
    if "msgId" in names:
        out["msgId"] = _strings(pa.string(), plan.msg_id_offsets, plan.msg_id_data.view(np.uint8))
    for index, name in enumerate(("bornHost", "storeHost")):
        if name in names:
            out[name] = _host_strings(plan.host_codes[index], plan.hosts, plan.host_widths)
    if "properties" in names:
        keys = _strings(pa.string(), _fit(plan.name_offsets, entries + 1), _fit(plan.name_data, name_used))
        values = _strings(
            pa.string(), _fit(plan.value_offsets, entries + 1), _fit(plan.value_data, value_used)
        )
        entry_array = pa.StructArray.from_arrays(
            [keys, values], fields=[STRING_MAP.key_field, STRING_MAP.item_field]
        )
        out["properties"] = pa.Array.from_buffers(
            STRING_MAP, rows, [None, pa.py_buffer(plan.map_offsets)], children=[entry_array]
        )
    used = (keys_used, tags_used, uniq_used)
    for index, name in enumerate(_WANTED):
        if name in names:
            out[name] = _strings(
                pa.string(),
                plan.wanted_offsets[index],
                _fit(plan.wanted_data[index], used[index]),
                plan.wanted_valid[index],
            )
    if "keys" in names:
        token_array = _strings(
            pa.string(), _fit(plan.token_offsets, tokens + 1), _fit(plan.token_data, token_used)
        )
        out["keys"] = pa.Array.from_buffers(
            STRING_LIST,
            rows,
            [_validity(plan.wanted_valid[len(_WANTED)]), pa.py_buffer(plan.wanted_offsets[len(_WANTED)])],
            children=[token_array],
        )
    bad = np.flatnonzero(plan.bad_text)
    if len(bad):
        _patch_text(out, buf, starts, bad, plan.bad_text[bad])
    return out


def _fit(values: np.ndarray, used: int) -> np.ndarray:
    """values[:used]; copied to its own buffer when that frees more than half of an upper-bound
    allocation (property outputs are sized for the worst case), so a batch holds what it uses."""
    if 2 * used >= len(values):
        return values[:used]
    fitted = _empty(values.dtype, used)
    fitted[:] = values[:used]
    return fitted


def _fixed(arrow_type: pa.DataType, values: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(arrow_type, len(values), [None, pa.py_buffer(values)])


def _validity(valid: np.ndarray) -> pa.Buffer | None:
    return None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))


def _strings(
    arrow_type: pa.DataType, offsets: np.ndarray, data: np.ndarray, valid: np.ndarray | None = None
) -> pa.Array:
    """A string / binary array over int32 offsets and data, without copying."""
    validity = None if valid is None else _validity(valid)
    return pa.Array.from_buffers(
        arrow_type, len(offsets) - 1, [validity, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def _decompressed(
    buf: np.ndarray,
    starts: np.ndarray,
    offsets: np.ndarray,
    rows: np.ndarray,
    at: np.ndarray,
    length: np.ndarray,
    sys_flags: np.ndarray,
    max_body_size: int,
    threads: int | None,
) -> list[bytes]:
    """The compressed bodies of these rows decompressed (§2.9, `compression.decompress_bodies`); the
    first row that fails raises, naming its physical offset."""
    view = memoryview(buf)
    stored = [view[begin : begin + size] for begin, size in zip(at.tolist(), length.tolist(), strict=True)]
    try:
        return decompress_bodies(stored, sys_flags.tolist(), max_size=max_body_size, threads=threads)
    except BodyDecompressionError as exc:
        row = int(rows[exc.row])
        message = f"record at physical offset {int(offsets[row])}: {exc}"
        raise BodyDecompressionError(exc.cause, position=int(starts[row]), row=row, message=message) from None


def _host_strings(codes: np.ndarray, hosts: np.ndarray, widths: np.ndarray) -> pa.Array:
    """`ip:port` / `[v6]:port` per row (§2.4); each distinct host is formatted once.

    `hosts` rows are the kernel's native-order words of bytes 0-8, 8-16 and 12-20 of each host.
    """
    used = int(codes.max()) + 1
    labels = []
    for code in range(used):
        raw = hosts[code].tobytes()
        host = raw[:IPV4_HOST_LEN] if widths[code] == IPV4_HOST_LEN else raw[:16] + raw[20:24]
        labels.append(decode_host(host).encode("ascii"))
    label_offsets = np.zeros(used + 1, dtype=np.int64)
    np.cumsum([len(label) for label in labels], out=label_offsets[1:])
    offsets, data = columns.expand_labels(codes, label_offsets, np.frombuffer(b"".join(labels), np.uint8))
    return _strings(pa.string(), offsets, data)


def _patch_text(
    out: dict[str, pa.Array], buf: np.ndarray, starts: np.ndarray, rows: np.ndarray, bits: np.ndarray
) -> None:
    """Rows with invalid UTF-8 in TOPIC (bit 1) or PROPERTIES (bit 2) from the scalar decoder, which
    replaces malformed bytes with U+FFFD (the kernel left them empty / null)."""
    records = [decode_record(buf, int(starts[row]), decompress=False) for row in rows]

    def patch(name: str, mask: int, value: Any) -> None:
        if name not in out:
            return
        picked = np.flatnonzero(bits & mask)
        if len(picked):
            fixed = pa.array([value(records[k]) for k in picked], type=COLUMNS[name])
            out[name] = _replace_rows(out[name], rows[picked], fixed)

    patch("topic", 1, lambda r: r.topic)
    getters: dict[str, Any] = {
        "properties": lambda r: list(r.properties.items()),
        "key": lambda r: r.key,
        "keys": lambda r: r.keys,
        "tags": lambda r: r.tags,
        "uniqKey": lambda r: r.uniq_key,
    }
    for name, value in getters.items():
        patch(name, 2, value)


def _replace_rows(column: pa.Array, rows: np.ndarray, values: pa.Array) -> pa.Array:
    """column with column[rows[k]] = values[k]."""
    index = np.arange(len(column), dtype=np.int64)
    index[rows] = len(column) + np.arange(len(rows))
    return pa.concat_arrays([column, values]).take(pa.array(index))
