"""Compiled (numba) kernels of the columnar decoder: one pass over the records per job (spec §2.2-§2.12).

`scan_record` is the structural part of `checkMessageAndReturnSize` (§2.12) on a byte buffer; `walk`
follows the TOTALSIZE chain with it, `next_boundary` searches record starts byte by byte, and
`decode` fills the output buffers of every requested column in one pass: fixed fields, variable-length
values copied into contiguous Arrow data buffers with int32 offsets, PROPERTIES parsed per §2.8,
KEYS / TAGS / UNIQ_KEY, offsetMsgIds (§3.1) and host dictionary codes (§2.4).

Buffers are 1-D uint8 arrays passed read-only (one compiled specialization); outputs of columns not
requested (`decode`'s `want` flags) may be empty arrays. Kernels never read outside the buffer: every
record is checked by `scan_record` before its fields are read. Compiled code is cached on disk
(`NUMBA_CACHE_DIR`, default `numba/` under `rmqstore.cachedir.cache_root()`), so only the first use
on a machine pays the compile time.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
from pathlib import Path
from typing import Any

from rmqstore.cachedir import cache_root
from rmqstore.format.contract_layout import (
    BLANK_MAGIC,
    DLEDGER_BLANK_MAGIC,
    DLEDGER_ENTRY_HEADER,
    DLEDGER_ENTRY_MAGIC,
    MAGIC_V1,
    MAGIC_V2,
    MIN_RECORD_SIZE,
    PROPERTY_NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_COMPRESSED,
    SYSFLAG_STOREHOST_V6,
)


def _configure_cache() -> bool:
    """Point numba's cache at a writable directory unless NUMBA_CACHE_DIR is set; False if none is.

    The package directory may be read-only (site-packages, a Spark executor's archive), so the
    default is the user cache, then the temp directory.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return True
    for candidate in (cache_root() / "numba", Path(tempfile.gettempdir()) / "rmqstore-numba"):
        try:
            candidate.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(candidate, os.W_OK | os.X_OK):
            os.environ["NUMBA_CACHE_DIR"] = str(candidate)
            return True
    return False


_CACHE = _configure_cache()

import numba  # noqa: E402  (the cache location must be set before numba reads its configuration)
import numpy as np  # noqa: E402
from llvmlite import ir  # noqa: E402
from numba.core import cgutils, types  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

if _CACHE:
    numba.config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]  # numba may have been imported earlier

_jit = numba.njit(cache=_CACHE, nogil=True)
compiled = _jit
"""The decorator of every compiled function (this module's numba cache setup), for other layers'."""
_inline = numba.njit(cache=_CACHE, nogil=True, inline="always")
"""For small helpers on hot paths: inlined into the caller at numba IR level (LLVM does not inline
across numba's per-function modules reliably, and a call passes every array as ~7 arguments)."""

# record kinds returned by scan_record / walk
RECORD = 0
BLANK = 1
INVALID = 2
END = 3
"""walk only: reached the end position."""

_KEY_SEPARATOR = 0x20
_INT_MAX = (1 << 31) - 1
_MAX_PROPERTIES = (0x7FFF + 1) // 3 + 1
"""Most properties one PROPERTIES field (at most 32767 bytes) can hold: each takes 3 bytes or more."""

_SCHEDULE_TOPIC = np.frombuffer(b"SCHEDULE_TOPIC_XXXX", dtype=np.uint8)
_DELAY = np.frombuffer(b"DELAY", dtype=np.uint8)
_KEYS = np.frombuffer(b"KEYS", dtype=np.uint8)
_TAGS = np.frombuffer(b"TAGS", dtype=np.uint8)
_UNIQ_KEY = np.frombuffer(b"UNIQ_KEY", dtype=np.uint8)
_HEX_PAIRS = np.frombuffer(b"".join(b"%02X" % value for value in range(256)), dtype=np.uint16)
"""Byte value -> its two uppercase hex digits as one native-order uint16 (memory order = text order)."""


# ---------------------------------------------------------------------------------------------
# unaligned loads, memcpy, bit scan (LLVM primitives numba does not expose)


def _loader(bits: int, big_endian: bool, signed: bool) -> Any:
    """An intrinsic reading a `bits`-wide integer at byte position `at` of a uint8 array (no
    alignment needed) as int64 (uint64 for a native-order 64-bit read)."""
    result = types.uint64 if bits == 64 and not big_endian else types.int64

    @intrinsic
    def load(typingctx: Any, arr: Any, at: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            pointer = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(bits).as_pointer())
            value = builder.load(pointer, align=1)
            if big_endian:
                value = builder.bswap(value)
            if bits < 64:
                value = (builder.sext if signed else builder.zext)(value, ir.IntType(64))
            return value

        return result(arr, at), codegen

    return load


_word = _loader(64, False, False)
"""8 bytes in native (little-endian) order, for scanning many bytes at a time."""
_i16 = _loader(16, True, True)
_i32 = _loader(32, True, True)
_u32 = _loader(32, True, False)
_i64 = _loader(64, True, True)


@intrinsic
def _memcpy(typingctx: Any, dst: Any, dst_at: Any, src: Any, src_at: Any, length: Any) -> Any:
    """dst[dst_at:dst_at+length] = src[src_at:src_at+length] with LLVM's memcpy (no view objects)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        dst_data = context.make_array(signature.args[0])(context, builder, args[0]).data
        src_data = context.make_array(signature.args[2])(context, builder, args[2]).data
        count = builder.sext(args[4], ir.IntType(64)) if args[4].type.width < 64 else args[4]
        cgutils.raw_memcpy(
            builder, builder.gep(dst_data, [args[1]]), builder.gep(src_data, [args[3]]), count, 1
        )
        return context.get_dummy_value()

    return types.void(dst, dst_at, src, src_at, length), codegen


@intrinsic
def _trailing_zeros(typingctx: Any, value: Any) -> Any:
    """Number of trailing zero bits of a non-zero uint64."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return types.uint64(value), codegen


@intrinsic
def _prefetch(typingctx: Any, arr: Any, at: Any) -> Any:
    """Hint the CPU to load the cache line of arr[at] (`llvm.prefetch`, read, high locality): never
    faults, so a position outside the array or on a page not mapped yet costs nothing but the hint."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        pointer = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        hint = ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer(), i32, i32, i32])
        function = cgutils.get_or_insert_function(builder.module, hint, "llvm.prefetch.p0")
        builder.call(function, [pointer, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(arr, at), codegen


_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_HIGH = np.uint64(0x8080808080808080)
_BELOW_3 = np.uint64(0x7D7D7D7D7D7D7D7D)
"""(byte & 0x7F) + 0x7D sets the byte's high bit iff its low 7 bits are >= 3 (no carry between bytes)."""


@_inline
def _equal(buf, at, length, word):
    """buf[at:at+length] == word."""
    if length != len(word):
        return False
    for k in range(length):  # noqa: SIM110 (a loop compiles to tight code, a generator does not)
        if buf[at + k] != word[k]:
            return False
    return True


@_inline
def _same(buf, a, b, length):
    for k in range(length):  # noqa: SIM110
        if buf[a + k] != buf[b + k]:
            return False
    return True


# ---------------------------------------------------------------------------------------------
# one record


@_jit
def scan_record(buf, pos):
    """Structure of the record at pos, in the order of `checkMessageAndReturnSize` (§2.12).

    Returns (kind, TOTALSIZE, sysFlag, body_at, body_len, topic_at, topic_len, props_at, props_len):
    kind RECORD when every field lies inside the buffer, BODYLENGTH / TOPICLENGTH /
    PROPERTIESLENGTH are in range and the recomputed length equals TOTALSIZE; BLANK for the
    end-of-segment filler; else INVALID. Lengths are those of the byte ranges (a negative BODYLENGTH
    or PROPERTIESLENGTH is an empty range, but counts negative in the recomputed length, as in Java).
    No CRC, DELAY, PHYSICALOFFSET or minimum-size check.
    """
    n = len(buf)
    if pos < 0 or n - pos <= 4:
        return INVALID, -1, 0, 0, 0, 0, 0, 0, 0
    size = _i32(buf, pos)
    if n - pos < size or n - pos < 8:
        return INVALID, size, 0, 0, 0, 0, 0, 0, 0
    magic = _u32(buf, pos + 4)
    if magic == BLANK_MAGIC:
        return BLANK, size, 0, 0, 0, 0, 0, 0, 0
    if (magic != MAGIC_V1 and magic != MAGIC_V2) or size < 0 or n - pos < 40:
        return INVALID, size, 0, 0, 0, 0, 0, 0, 0
    sys_flag = _i32(buf, pos + 36)
    body_len_at = (pos + 68 + (20 if sys_flag & SYSFLAG_BORNHOST_V6 else 8)
                   + (20 if sys_flag & SYSFLAG_STOREHOST_V6 else 8))
    if body_len_at + 4 > n:
        return INVALID, size, 0, 0, 0, 0, 0, 0, 0
    body_len = _i32(buf, body_len_at)
    body_at = body_len_at + 4
    at = body_at
    if body_len > 0:
        if body_len > size or at + body_len > n:
            return INVALID, size, 0, 0, 0, 0, 0, 0, 0
        at += body_len
    topic_width = 2 if magic == MAGIC_V2 else 1
    if at + topic_width > n:
        return INVALID, size, 0, 0, 0, 0, 0, 0, 0
    topic_len = _i16(buf, at) if topic_width == 2 else np.int64(np.int8(buf[at]))
    topic_at = at + topic_width
    if topic_len < 0 or topic_len > size or topic_at + topic_len + 2 > n:
        return INVALID, size, 0, 0, 0, 0, 0, 0, 0
    props_len = _i16(buf, topic_at + topic_len)
    props_at = topic_at + topic_len + 2
    if props_len > 0 and (props_len > size or props_at + props_len > n):
        return INVALID, size, 0, 0, 0, 0, 0, 0, 0
    computed = body_at - pos + body_len + topic_width + topic_len + 2 + props_len
    if computed != size:
        return INVALID, size, 0, 0, 0, 0, 0, 0, 0
    return (
        RECORD,
        size,
        sys_flag,
        body_at,
        max(body_len, 0),
        topic_at,
        topic_len,
        props_at,
        max(props_len, 0),
    )


# ---------------------------------------------------------------------------------------------
# properties (§2.8)


# rows of the scratch array `split_properties` fills, one column per property
NAME_AT = 0
NAME_LEN = 1
VALUE_AT = 2
VALUE_LEN = 3
NAME_PRINT = 4
PROPERTY_ROWS = 5
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _print_of(name: bytes) -> int:
    """`_name_print` of a constant name (signed 64-bit, as the kernel stores it)."""
    value = int.from_bytes(name[:8].ljust(8, b"\0"), "little") ^ (len(name) * int(_MIX)) % (1 << 64)
    return value - (1 << 64) if value >= 1 << 63 else value


_DELAY_PRINT = _print_of(bytes(_DELAY))
_KEYS_PRINT = _print_of(bytes(_KEYS))
_TAGS_PRINT = _print_of(bytes(_TAGS))
_UNIQ_KEY_PRINT = _print_of(bytes(_UNIQ_KEY))


@_jit
def property_scratch():
    """Scratch for `split_properties`: room for the most properties a PROPERTIES field can hold."""
    return np.empty((PROPERTY_ROWS, _MAX_PROPERTIES), dtype=np.int64)


@_inline
def _name_print(buf, at, length):
    """The name's first 8 bytes mixed with its length: equal names give equal prints, and names of
    at most 8 bytes with equal prints and lengths are equal."""
    if at + 8 <= len(buf):
        word = _word(buf, at)
    else:
        word = np.uint64(0)
        for k in range(min(length, 8)):
            word |= np.uint64(buf[at + k]) << np.uint64(8 * k)
    if length < 8:
        word &= (np.uint64(1) << np.uint64(8 * length)) - np.uint64(1)
    return np.int64(word ^ (np.uint64(length) * _MIX))


@_inline
def _same_name(buf, props, e, at, length, name_print):
    return (
        props[NAME_PRINT, e] == name_print
        and props[NAME_LEN, e] == length
        and (length <= 8 or _same(buf, props[NAME_AT, e], at, length))
    )


@_inline
def _end_segment(buf, segment, split, end, count, seen, props):
    """Add the property of segment [segment, end) whose first 0x01 is at split (-1: none).

    `seen` has bit (print * mix) >> 58 set for every name of the row so far: a name whose bit is
    clear is new without comparing. Returns (count, seen).
    """
    if not segment < split < end - 1:
        return count, seen
    length = split - segment
    name_print = _name_print(buf, segment, length)
    bit = np.uint64(1) << ((np.uint64(name_print) * _MIX) >> np.uint64(58))
    found = count
    if seen & bit:
        for e in range(count):
            if _same_name(buf, props, e, segment, length, name_print):
                found = e
                break
    if found == count:
        props[NAME_AT, count] = segment
        props[NAME_LEN, count] = length
        props[NAME_PRINT, count] = name_print
        count += 1
        seen |= bit
    props[VALUE_AT, found] = split + 1
    props[VALUE_LEN, found] = end - split - 1
    return count, seen


@_jit
def split_properties(buf, at, length, props):
    """Parse PROPERTIES like `string2messageProperties` into `props` (`property_scratch`), one column
    per property; returns (count, ascii).

    Split at 0x02 (the last segment may lack it); the first 0x01 of a segment separates name and
    value; segments with an empty name or value are skipped; a later duplicate name replaces the
    value of the first one, which keeps its place (Python dict / last-wins HashMap put). `ascii`:
    no byte is 0x80 or above. Byte-level splitting equals splitting the decoded text only for valid
    UTF-8; callers validate non-ASCII fields first. Scans 8 bytes at a time for bytes below 3.
    """
    count = 0
    seen = np.uint64(0)
    segment = at
    split = -1
    end = at + length
    bits = np.uint64(0)
    p = at
    while p <= end - 8:
        word = _word(buf, p)
        bits |= word
        marks = ~(((word & _LOW7) + _BELOW_3) | word) & _HIGH
        while marks:
            q = p + np.int64(_trailing_zeros(marks) >> np.uint64(3))
            marks &= marks - np.uint64(1)
            byte = buf[q]
            if byte == PROPERTY_SEPARATOR:
                count, seen = _end_segment(buf, segment, split, q, count, seen, props)
                segment = q + 1
                split = -1
            elif byte == PROPERTY_NAME_VALUE_SEPARATOR and split < 0:
                split = q
        p += 8
    for q in range(p, end):
        byte = buf[q]
        bits |= np.uint64(byte)
        if byte == PROPERTY_SEPARATOR:
            count, seen = _end_segment(buf, segment, split, q, count, seen, props)
            segment = q + 1
            split = -1
        elif byte == PROPERTY_NAME_VALUE_SEPARATOR and split < 0:
            split = q
    count, seen = _end_segment(buf, segment, split, end, count, seen, props)
    return count, bits & _HIGH == 0


@_inline
def _find(buf, word, word_print, count, props):
    """Index of the property named `word`, or -1."""
    for e in range(count):
        if _same_name(buf, props, e, props[NAME_AT, e], len(word), word_print) and (
            len(word) <= 8 or _equal(buf, props[NAME_AT, e], len(word), word)
        ):
            return e
    return -1


@_jit
def _java_int_text(buf, at, length):
    """`Integer.parseInt` succeeds on these bytes: optional sign, ASCII digits, inside int range."""
    if length > 0 and (buf[at] == 0x2B or buf[at] == 0x2D):
        negative = buf[at] == 0x2D
        at += 1
        length -= 1
    else:
        negative = False
    if length == 0:
        return False
    value = 0
    for k in range(length):
        digit = np.int64(buf[at + k]) - 0x30
        if digit < 0 or digit > 9:
            return False
        if value <= _INT_MAX + 1:
            value = value * 10 + digit
    return value <= _INT_MAX + (1 if negative else 0)


@_jit
def _delay_ok(buf, topic_at, topic_len, props_at, props_len, props):
    """§2.12 step 6: a SCHEDULE_TOPIC_XXXX record's DELAY property, if any, must be a Java int."""
    if props_len <= 0 or not _equal(buf, topic_at, topic_len, _SCHEDULE_TOPIC):
        return True
    count, _ = split_properties(buf, props_at, props_len, props)
    e = _find(buf, _DELAY, _DELAY_PRINT, count, props)
    return e < 0 or _java_int_text(buf, props[VALUE_AT, e], props[VALUE_LEN, e])


@_jit
def valid_utf8(buf, at, length):
    """Well-formed UTF-8 (Unicode table 3-7: no overlongs, surrogates or values above U+10FFFF)."""
    i = at
    end = at + length
    while i < end:
        b = buf[i]
        if b < 0x80:
            i += 1
            continue
        if b < 0xC2 or b > 0xF4:
            return False
        width = 2 if b < 0xE0 else (3 if b < 0xF0 else 4)
        if i + width > end:
            return False
        second = buf[i + 1]
        low, high = 0x80, 0xBF
        if b == 0xE0:
            low = 0xA0
        elif b == 0xED:
            high = 0x9F
        elif b == 0xF0:
            low = 0x90
        elif b == 0xF4:
            high = 0x8F
        if second < low or second > high:
            return False
        for k in range(2, width):
            if buf[i + k] & 0xC0 != 0x80:
                return False
        i += width
    return True


# ---------------------------------------------------------------------------------------------
# walk and resync


@_jit
def entry_ok(buf, at, base_offset, size):
    """The DLedger entry header at `at` frames a record of `size` bytes right after it (§2.13): magic 1,
    entry size and body size agree with it, pos is the header's own position base_offset + at."""
    return (
        at >= 0
        and at + DLEDGER_ENTRY_HEADER <= len(buf)
        and _i32(buf, at) == DLEDGER_ENTRY_MAGIC
        and _i32(buf, at + 4) == size + DLEDGER_ENTRY_HEADER
        and _i64(buf, at + 24) == base_offset + at
        and _i32(buf, at + 44) == size
    )


@_jit
def walk(buf, base_offset, start, end, out, lead=0):
    """Follow TOTALSIZE from `start` while the position is below `end` (the recovery loop, §2.12).

    Writes record starts to `out` (room for (end - start) // 91 + 1); returns (count, stop_pos, kind)
    with kind END, BLANK or INVALID (the record at stop_pos fails `scan_record`, is below 91 bytes,
    has another PHYSICALOFFSET than base_offset + position, or is a schedule-topic record with a
    bad DELAY). `lead` > 0 (48, a DLedger log, §2.13): each record is the body of an entry whose
    header takes the `lead` bytes before it (in `buf`) and must pass `entry_ok`; a DLedger blank there
    is a BLANK at the record position; records follow each other TOTALSIZE + lead apart.
    """
    props = property_scratch()
    count = 0
    pos = start
    while pos < end:
        if lead and pos >= lead and _i32(buf, pos - lead) == DLEDGER_BLANK_MAGIC:
            return count, pos, BLANK
        kind, size, _, _, _, topic_at, topic_len, props_at, props_len = scan_record(buf, pos)
        if kind == BLANK and not lead:
            return count, pos, BLANK
        if (
            kind != RECORD
            or size < MIN_RECORD_SIZE
            or _i64(buf, pos + 28) != base_offset + pos
            or not _delay_ok(buf, topic_at, topic_len, props_at, props_len, props)
            or (lead and not entry_ok(buf, pos - lead, base_offset, size))
        ):
            return count, pos, INVALID
        out[count] = pos
        count += 1
        pos += size + lead
    return count, pos, END


@_jit
def walk_ranges(buf, at, physical, length, out):
    """`walk` over each of several ranges gathered into one buffer: range r holds buf[at[r]:at[r] +
    length[r]], the commit-log bytes from physical offset physical[r], starting at a record start.

    Writes the record starts of every range to `out` (room for len(buf) // 91 + len(at)); returns
    (count, clean): clean[r] is False when range r's walk stopped before its end (a BLANK, an invalid
    record, or a record reaching past the range) - its starts are still in `out`, up to that record.
    """
    clean = np.ones(len(at), dtype=np.bool_)
    count = 0
    for r in range(len(at)):
        end = at[r] + length[r]
        found, stop, kind = walk(buf[:end], physical[r] - at[r], at[r], end, out[count:])
        count += found
        clean[r] = kind == END and stop == end
    return count, clean


@_jit
def next_boundary(buf, lo, hi, base_offset):
    """First p in [lo, hi) where a record starts or a BLANK reaching exactly the end of the buffer
    starts; -1 if none. A record start is a structurally valid record (`scan_record`) of at least 91
    bytes whose PHYSICALOFFSET is base_offset + p."""
    n = len(buf)
    for p in range(max(lo, 0), min(hi, n - 7)):
        b = buf[p + 4]
        if b == 0xDA:
            magic = _u32(buf, p + 4)
            if magic in (MAGIC_V1, MAGIC_V2):
                kind, size, _, _, _, _, _, _, _ = scan_record(buf, p)
                if kind == RECORD and size >= MIN_RECORD_SIZE and _i64(buf, p + 28) == base_offset + p:
                    return p
        elif b == 0xCB and _u32(buf, p + 4) == BLANK_MAGIC and _i32(buf, p) == n - p:
            return p
    return -1


def _crc32_tables() -> np.ndarray:
    """Slicing-by-8 tables of the reflected CRC-32 (polynomial 0xEDB88320, zlib's CRC)."""
    tables = np.zeros((8, 256), dtype=np.uint32)
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
        tables[0, byte] = crc
    for k in range(1, 8):
        tables[k] = (tables[k - 1] >> 8) ^ tables[0][tables[k - 1] & 0xFF]
    return tables


_CRC32_TABLES = _crc32_tables()


def _native_crc32() -> int:
    """Address of ISA-L's `crc32_gzip_refl(crc, data, length)` (zlib's CRC-32 by carry-less
    multiplication, some 5x the table kernel), exported by python-isal's extension module; 0 when
    python-isal is missing or does not export it.

    Compiled code takes the address as an argument (`crc32`'s `native`), never as a global: a global
    would be frozen into the on-disk cache, and the library loads at another address in each process.
    """
    try:
        from isal import isal_zlib

        function = ctypes.CDLL(isal_zlib.__file__).crc32_gzip_refl
    except (ImportError, OSError, AttributeError):
        return 0
    return ctypes.cast(function, ctypes.c_void_p).value or 0


NATIVE_CRC32 = _native_crc32()
"""Pass as `native` to the CRC kernels (0: the table kernel)."""


@intrinsic
def _call_crc32(typingctx: Any, address: Any, buf: Any, at: Any, length: Any) -> Any:
    """The function at `address` (`_native_crc32`) on buf[at:at + length], from CRC 0."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        i32, i64 = ir.IntType(32), ir.IntType(64)
        function_type = ir.FunctionType(i32, [i32, ir.IntType(8).as_pointer(), i64])
        function = builder.inttoptr(args[0], function_type.as_pointer())
        data = context.make_array(signature.args[1])(context, builder, args[1]).data
        crc = builder.call(function, [ir.Constant(i32, 0), builder.gep(data, [args[2]]), args[3]])
        return builder.zext(crc, i64)

    return types.int64(types.int64, buf, types.int64, types.int64), codegen


@_jit
def crc32(buf, at, length, native=0):
    """zlib's CRC-32 of buf[at:at + length]: by the function at address `native` (`NATIVE_CRC32`)
    when not 0, else slicing-by-8 (eight bytes per step)."""
    if native != 0:
        return np.uint32(_call_crc32(np.int64(native), buf, np.int64(at), np.int64(length)))
    t = _CRC32_TABLES
    crc = np.uint32(0xFFFFFFFF)
    i = at
    end = at + length
    while i + 8 <= end:
        lo = crc ^ (np.uint32(buf[i]) | (np.uint32(buf[i + 1]) << 8) | (np.uint32(buf[i + 2]) << 16)
                    | (np.uint32(buf[i + 3]) << 24))
        crc = (t[7, lo & 0xFF] ^ t[6, (lo >> 8) & 0xFF] ^ t[5, (lo >> 16) & 0xFF] ^ t[4, lo >> 24]
               ^ t[3, buf[i + 4]] ^ t[2, buf[i + 5]] ^ t[1, buf[i + 6]] ^ t[0, buf[i + 7]])
        i += 8
    while i < end:
        crc = (crc >> 8) ^ t[0, (crc ^ buf[i]) & 0xFF]
        i += 1
    return crc ^ np.uint32(0xFFFFFFFF)


@_jit
def crc_mismatches(buf, starts, native=0):
    """Per record: True when its BODYCRC is not its body's CRC-32 masked to 31 bits (§2.7; records
    already checked with `scan_record`, empty bodies not compared); `native` as in `crc32`."""
    bad = np.zeros(len(starts), dtype=np.bool_)
    for i in range(len(starts)):
        kind, _, _, body_at, body_len, _, _, _, _ = scan_record(buf, starts[i])
        if kind == RECORD:
            bad[i] = _crc_mismatch(buf, starts[i], body_at, body_len, native)
    return bad


@_inline
def _crc_mismatch(buf, pos, body_at, body_len, native=0):
    """The record at pos has a non-empty body whose CRC-32 masked to 31 bits is not its BODYCRC (§2.7)."""
    return body_len > 0 and np.int64(crc32(buf, body_at, body_len, native) & 0x7FFFFFFF) != _i32(buf, pos + 8)


PREFETCH_AHEAD = 8
"""Point reads hint the header of the record this many positions ahead: scattered records then
arrive from memory while earlier ones are checked or copied, not one after the other."""


@_jit
def check_starts(buf, starts, physical, check_crc, native=0):
    """The record check of `record.check_record(..., expected_physical_offset=physical[i])` at each
    position: structure (`scan_record`), PHYSICALOFFSET == physical[i], a schedule-topic DELAY that is
    a Java int and, with `check_crc`, BODYCRC (empty bodies not compared; `native` as in `crc32`).

    Returns (kinds, sizes): kind RECORD, BLANK or INVALID per position, and the TOTALSIZE field read
    there (-1 when at most 4 bytes are left), so the caller can tell a record cut by the buffer's end.
    """
    props = property_scratch()
    kinds = np.empty(len(starts), dtype=np.int8)
    sizes = np.empty(len(starts), dtype=np.int64)
    for i in range(len(starts)):
        if i + PREFETCH_AHEAD < len(starts):
            ahead = starts[i + PREFETCH_AHEAD]
            if 0 <= ahead < len(buf):
                _prefetch(buf, ahead)
        pos = starts[i]
        kind, size, _, body_at, body_len, topic_at, topic_len, props_at, props_len = scan_record(buf, pos)
        if kind == RECORD and (
            _i64(buf, pos + 28) != physical[i]
            or not _delay_ok(buf, topic_at, topic_len, props_at, props_len, props)
            or (check_crc and _crc_mismatch(buf, pos, body_at, body_len, native))
        ):
            kind = INVALID
        kinds[i] = kind
        sizes[i] = size
    return kinds, sizes


@_jit
def gather(buf, starts, sizes, out, at):
    """out[at + ...]: the byte ranges buf[starts[i]:starts[i] + sizes[i]] back to back, from `at` (the
    records a point read keeps, copied together so they are decoded in one sequential pass).

    Ranges must lie inside `buf` and `out` must have room; the ranges PREFETCH_AHEAD ahead are hinted
    line by line. Returns the position in `out` after the last range.
    """
    for i in range(len(starts)):
        if i + PREFETCH_AHEAD < len(starts):
            line = starts[i + PREFETCH_AHEAD]
            end = line + sizes[i + PREFETCH_AHEAD]
            while line < end:
                _prefetch(buf, line)
                line += 64
        _memcpy(out, at, buf, starts[i], sizes[i])
        at += sizes[i]
    return at


# ---------------------------------------------------------------------------------------------
# decode


@_jit
def measure(buf, starts):
    """Sizes of the variable-length outputs: (first row that is no record or -1, BODY bytes,
    TOPIC bytes, PROPERTIES bytes, IPv6 store hosts, compressed bodies)."""
    body = topic = props = v6 = compressed = 0
    for i in range(len(starts)):
        kind, _, sys_flag, _, body_len, _, topic_len, _, props_len = scan_record(buf, starts[i])
        if kind != RECORD:
            return i, 0, 0, 0, 0, 0
        body += body_len
        topic += topic_len
        props += props_len
        if sys_flag & SYSFLAG_STOREHOST_V6:
            v6 += 1
        if sys_flag & SYSFLAG_COMPRESSED:
            compressed += 1
    return -1, body, topic, props, v6, compressed


@_inline
def _ascii(buf, at, length):
    """All bytes of buf[at:at+length] are below 0x80."""
    bits = np.uint64(0)
    p = at
    while p + 8 <= at + length:
        bits |= _word(buf, p)
        p += 8
    for q in range(p, at + length):
        bits |= np.uint64(buf[q])
    return bits & _HIGH == 0


@_inline
def _host_words(buf, at, width):
    """A host (§2.4) as 3 native-order words: bytes 0-8, and for a 20-byte host 8-16 and 12-20."""
    if width == 8:
        return _word(buf, at), np.uint64(0), np.uint64(0)
    return _word(buf, at), _word(buf, at + 8), _word(buf, at + 12)


@_inline
def _host_code(words, width, table, hosts, host_widths, count):
    """Dictionary code of a host (`_host_words`); a new host is appended. Returns (code, count).

    `table` is an open-addressing hash table (power-of-two size, 0 = empty, else code + 1) with room
    for every host of the batch at load factor 1/2; `hosts` / `host_widths` hold the distinct hosts.
    """
    w0, w1, w2 = words
    h = (w0 * _MIX) ^ ((w1 + np.uint64(width)) * np.uint64(0xC2B2AE3D27D4EB4F)) ^ w2
    h ^= h >> np.uint64(31)
    h *= _MIX
    mask = len(table) - 1
    slot = np.int64(h >> np.uint64(32)) & mask
    while True:
        entry = table[slot]
        if entry == 0:
            table[slot] = count + 1
            host_widths[count] = width
            hosts[count, 0] = w0
            hosts[count, 1] = w1
            hosts[count, 2] = w2
            return count, count + 1
        code = entry - 1
        if _is_host(words, width, hosts, host_widths, code):
            return code, count
        slot = (slot + 1) & mask


@_inline
def _is_host(words, width, hosts, host_widths, code):
    w0, w1, w2 = words
    return (
        host_widths[code] == width and hosts[code, 0] == w0 and hosts[code, 1] == w1 and hosts[code, 2] == w2
    )


@_inline
def _emit_string(data, offsets, used, row, src, at, length):
    """Append src[at:at+length] as row `row` of a string column; returns the new data length."""
    _memcpy(data, used, src, at, length)
    used += length
    offsets[row + 1] = used
    return used


# what `decode` fills: indexes into its `want` flags
WANT_FIXED = 0
WANT_BODY = 1
WANT_TOPIC = 2
WANT_MSG_ID = 3
WANT_BORN_HOST = 4
WANT_STORE_HOST = 5
WANT_PROPERTIES = 6
WANT_KEY = 7
WANT_TAGS = 8
WANT_UNIQ_KEY = 9
WANT_KEYS = 10
WANT_FLAGS = 11


@_inline
def _hex(out, used, buf, at, length):
    """Uppercase hex of buf[at:at+length] into the uint16 array out from index used; returns the new index."""
    for p in range(at, at + length):
        out[used] = _HEX_PAIRS[buf[p]]
        used += 1
    return used


@_inline
def _emit_value(buf, props, e, w, row, offsets, data, valid, used):
    """Row `row` of wanted string column w: the value of property e, null when e < 0; returns the new
    data length."""
    if e < 0:
        valid[w, row] = 0
        offsets[w, row + 1] = used
        return used
    valid[w, row] = 1
    return _emit_string(data[w], offsets[w], used, row, buf, props[VALUE_AT, e], props[VALUE_LEN, e])


@_inline
def _emit_tokens(buf, props, keys, offsets, data, tokens, used):
    """The KEYS value of property `keys` (none if < 0) split at single spaces, empty tokens dropped
    (§2.8), appended as list items; returns (tokens, data length)."""
    if keys < 0:
        return tokens, used
    token = props[VALUE_AT, keys]
    end = token + props[VALUE_LEN, keys]
    for p in range(token, end + 1):
        if p < end and buf[p] != _KEY_SEPARATOR:
            continue
        if p > token:
            used = _emit_string(data, offsets, used, tokens, buf, token, p - token)
            tokens += 1
        token = p + 1
    return tokens, used


@_jit
def decode(
    buf,
    starts,
    want,
    fixed_i32,
    fixed_i64,
    body_offsets,
    body_data,
    reserved,
    topic_offsets,
    topic_data,
    msg_id_offsets,
    msg_id_data,
    host_codes,
    host_table,
    hosts,
    host_widths,
    map_offsets,
    name_offsets,
    name_data,
    value_offsets,
    value_data,
    wanted_offsets,
    wanted_data,
    wanted_valid,
    token_offsets,
    token_data,
    bad_text,
):
    """Fill the columns flagged in `want` (WANT_*) for the records at `starts` in one pass.

    The records must have passed `measure`; outputs of columns not wanted may be empty. String and
    binary columns get int32 offsets (offsets[0] preset to 0) and contiguous data.
    - fixed_i32 rows: queueId, storeSize, bodyCrc, flag, sysFlag, reconsumeTimes; fixed_i64 rows:
      queueOffset, commitLogOffset, bornTimestamp (µs), storeTimestamp (µs), preparedTransactionOffset.
    - BODY: a row with reserved[row] = n >= 0 (reserved may be empty: none) gets n bytes of body_data
      left for the caller to fill (a decompressed body) instead of its stored body.
    - msgId: store host + PHYSICALOFFSET in uppercase hex (§3.1); msg_id_data is uint16, two digits
      per element, offsets in bytes.
    - host_codes rows (born, store): codes of the distinct hosts in `hosts` / `host_widths`,
      interned through `host_table` (`_host_code`).
    - PROPERTIES (§2.8): map offsets per row, then names / values per entry. wanted_* rows 0-2:
      KEYS, TAGS, UNIQ_KEY string columns (data in the wanted_data tuple) with validity; row 3: the
      `keys` list (offsets into the tokens in token_*, validity).
    - A row whose TOPIC (bit 1) or PROPERTIES (bit 2) is not valid UTF-8 gets the bit in bad_text
      and an empty topic / no properties (the caller decodes it with the scalar decoder).

    Returns (entries, tokens, name bytes, value bytes, KEYS bytes, TAGS bytes, UNIQ_KEY bytes,
    token bytes, distinct hosts).
    """
    want_props = (
        want[WANT_PROPERTIES] or want[WANT_KEY] or want[WANT_TAGS] or want[WANT_UNIQ_KEY] or want[WANT_KEYS]
    )
    props = property_scratch()
    body_used = topic_used = msg_id_used = name_used = value_used = token_used = 0
    keys_used = tags_used = uniq_used = 0
    entries = tokens = host_count = 0
    for i in range(len(starts)):
        pos = starts[i]
        _, size, sys_flag, body_at, body_len, topic_at, topic_len, props_at, props_len = scan_record(buf, pos)
        born_len = 20 if sys_flag & SYSFLAG_BORNHOST_V6 else 8
        store_host_at = pos + 56 + born_len
        store_host_len = 20 if sys_flag & SYSFLAG_STOREHOST_V6 else 8
        reconsume_at = store_host_at + store_host_len
        if want[WANT_FIXED]:
            fixed_i32[0, i] = _i32(buf, pos + 12)
            fixed_i32[1, i] = size
            fixed_i32[2, i] = _i32(buf, pos + 8)
            fixed_i32[3, i] = _i32(buf, pos + 16)
            fixed_i32[4, i] = sys_flag
            fixed_i32[5, i] = _i32(buf, reconsume_at)
            fixed_i64[0, i] = _i64(buf, pos + 20)
            fixed_i64[1, i] = _i64(buf, pos + 28)
            fixed_i64[2, i] = _i64(buf, pos + 40) * 1000
            fixed_i64[3, i] = _i64(buf, store_host_at - 8) * 1000
            fixed_i64[4, i] = _i64(buf, reconsume_at + 4)
        for which in range(2):
            if not want[WANT_BORN_HOST + which]:
                continue
            at = pos + 48 if which == 0 else store_host_at
            width = born_len if which == 0 else store_host_len
            words = _host_words(buf, at, width)
            if i > 0 and _is_host(words, width, hosts, host_widths, host_codes[which, i - 1]):
                host_codes[which, i] = host_codes[which, i - 1]
            else:
                code, host_count = _host_code(words, width, host_table, hosts, host_widths, host_count)
                host_codes[which, i] = code
        if want[WANT_MSG_ID]:
            msg_id_used = _hex(msg_id_data, msg_id_used, buf, store_host_at, store_host_len)
            msg_id_used = _hex(msg_id_data, msg_id_used, buf, pos + 28, 8)
            msg_id_offsets[i + 1] = 2 * msg_id_used
        if want[WANT_BODY]:
            if len(reserved) and reserved[i] >= 0:
                body_used += reserved[i]
                body_offsets[i + 1] = body_used
            else:
                body_used = _emit_string(body_data, body_offsets, body_used, i, buf, body_at, body_len)
        if want[WANT_TOPIC]:
            if _ascii(buf, topic_at, topic_len) or valid_utf8(buf, topic_at, topic_len):
                topic_used = _emit_string(topic_data, topic_offsets, topic_used, i, buf, topic_at, topic_len)
            else:
                bad_text[i] |= 1
                topic_offsets[i + 1] = topic_used
        if not want_props:
            continue
        count, ascii = split_properties(buf, props_at, props_len, props)
        if not ascii and not valid_utf8(buf, props_at, props_len):
            bad_text[i] |= 2
            count = 0
        if want[WANT_PROPERTIES]:
            for e in range(count):
                name_used = _emit_string(
                    name_data, name_offsets, name_used, entries, buf, props[NAME_AT, e], props[NAME_LEN, e]
                )
                value_used = _emit_string(
                    value_data,
                    value_offsets,
                    value_used,
                    entries,
                    buf,
                    props[VALUE_AT, e],
                    props[VALUE_LEN, e],
                )
                entries += 1
            map_offsets[i + 1] = entries
        if want[WANT_KEY] or want[WANT_KEYS]:
            keys = _find(buf, _KEYS, _KEYS_PRINT, count, props)
            if want[WANT_KEY]:
                keys_used = _emit_value(
                    buf, props, keys, 0, i, wanted_offsets, wanted_data, wanted_valid, keys_used
                )
            if want[WANT_KEYS]:
                wanted_valid[3, i] = keys >= 0
                tokens, token_used = _emit_tokens(
                    buf, props, keys, token_offsets, token_data, tokens, token_used
                )
                wanted_offsets[3, i + 1] = tokens
        if want[WANT_TAGS]:
            tags = _find(buf, _TAGS, _TAGS_PRINT, count, props)
            tags_used = _emit_value(
                buf, props, tags, 1, i, wanted_offsets, wanted_data, wanted_valid, tags_used
            )
        if want[WANT_UNIQ_KEY]:
            uniq = _find(buf, _UNIQ_KEY, _UNIQ_KEY_PRINT, count, props)
            uniq_used = _emit_value(
                buf, props, uniq, 2, i, wanted_offsets, wanted_data, wanted_valid, uniq_used
            )
    return entries, tokens, name_used, value_used, keys_used, tags_used, uniq_used, token_used, host_count


@_jit
def expand_labels(codes, label_offsets, label_data):
    """String column (offsets, data) whose row i is label codes[i]."""
    rows = len(codes)
    offsets = np.empty(rows + 1, dtype=np.int32)
    offsets[0] = 0
    total = 0
    for i in range(rows):
        code = codes[i]
        total += label_offsets[code + 1] - label_offsets[code]
        offsets[i + 1] = total
    data = np.empty(total, dtype=np.uint8)
    for i in range(rows):
        code = codes[i]
        at = label_offsets[code]
        _memcpy(data, offsets[i], label_data, at, label_offsets[code + 1] - at)
    return offsets, data


@_jit
def compressed_bodies(buf, starts):
    """(rows, BODY positions, BODY lengths, sysFlags) of the records whose body is compressed
    (records already checked with `scan_record`)."""
    count = 0
    for i in range(len(starts)):
        if _i32(buf, starts[i] + 36) & SYSFLAG_COMPRESSED:
            count += 1
    rows = np.empty(count, dtype=np.int64)
    at = np.empty(count, dtype=np.int64)
    length = np.empty(count, dtype=np.int64)
    sys_flags = np.empty(count, dtype=np.int64)
    k = 0
    for i in range(len(starts)):
        if not _i32(buf, starts[i] + 36) & SYSFLAG_COMPRESSED:
            continue
        _, _, sys_flag, body_at, body_len, _, _, _, _ = scan_record(buf, starts[i])
        if sys_flag & SYSFLAG_COMPRESSED:
            rows[k] = i
            at[k] = body_at
            length[k] = body_len
            sys_flags[k] = sys_flag
            k += 1
    return rows, at, length, sys_flags
