"""PROPERTIES (§2.8) in compiled code: `split_properties` parses a record's field into a scratch
array (one column per property), `find_property` looks a name up in it.
"""

from __future__ import annotations

import numpy as np

from rmqstore.format.contract_layout import PROPERTY_NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR
from rmqstore.format.kernels.primitives import (
    BELOW_3,
    HIGH,
    LOW7,
    MIX,
    equal,
    load_word,
    same,
    trailing_zeros,
)
from rmqstore.jit import compiled, inlined

# rows of the scratch array `split_properties` fills, one column per property
NAME_AT = 0
NAME_LEN = 1
VALUE_AT = 2
VALUE_LEN = 3
NAME_PRINT = 4
PROPERTY_ROWS = 5
_MAX_PROPERTIES = (0x7FFF + 1) // 3 + 1
"""Most properties one PROPERTIES field (at most 32767 bytes) can hold: each takes 3 bytes or more."""


def _print_of(name: bytes) -> int:
    """`_name_print` of a constant name (signed 64-bit, as the kernel stores it)."""
    value = int.from_bytes(name[:8].ljust(8, b"\0"), "little") ^ (len(name) * int(MIX)) % (1 << 64)
    return value - (1 << 64) if value >= 1 << 63 else value


def name_constant(name: bytes) -> tuple[np.ndarray, int]:
    """A property name as the kernels compare it: its bytes and its `_print_of`."""
    return np.frombuffer(name, dtype=np.uint8), _print_of(name)


@compiled
def property_scratch():
    """Scratch for `split_properties`: room for the most properties a PROPERTIES field can hold."""
    return np.empty((PROPERTY_ROWS, _MAX_PROPERTIES), dtype=np.int64)


@inlined
def _name_print(buf, at, length):
    """The name's first 8 bytes mixed with its length: equal names give equal prints, and names of
    at most 8 bytes with equal prints and lengths are equal."""
    if at + 8 <= len(buf):
        word = load_word(buf, at)
    else:
        word = np.uint64(0)
        for k in range(min(length, 8)):
            word |= np.uint64(buf[at + k]) << np.uint64(8 * k)
    if length < 8:
        word &= (np.uint64(1) << np.uint64(8 * length)) - np.uint64(1)
    return np.int64(word ^ (np.uint64(length) * MIX))


@inlined
def _same_name(buf, props, e, at, length, name_print):
    return (
        props[NAME_PRINT, e] == name_print
        and props[NAME_LEN, e] == length
        and (length <= 8 or same(buf, props[NAME_AT, e], at, length))
    )


@inlined
def _end_segment(buf, segment, split, end, count, seen, props):
    """Add the property of segment [segment, end) whose first 0x01 is at split (-1: none).

    `seen` has bit (print * mix) >> 58 set for every name of the row so far: a name whose bit is
    clear is new without comparing. Returns (count, seen).
    """
    if not segment < split < end - 1:
        return count, seen
    length = split - segment
    name_print = _name_print(buf, segment, length)
    bit = np.uint64(1) << ((np.uint64(name_print) * MIX) >> np.uint64(58))
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


@inlined
def _separator(buf, q, segment, split, count, seen, props):
    """Step `split_properties` over the byte at q: 0x02 ends the segment, the segment's first 0x01
    splits it; other bytes change nothing. Returns (segment, split, count, seen)."""
    byte = buf[q]
    if byte == PROPERTY_SEPARATOR:
        count, seen = _end_segment(buf, segment, split, q, count, seen, props)
        return q + 1, -1, count, seen
    if byte == PROPERTY_NAME_VALUE_SEPARATOR and split < 0:
        return segment, q, count, seen
    return segment, split, count, seen


@compiled
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
        word = load_word(buf, p)
        bits |= word
        marks = ~(((word & LOW7) + BELOW_3) | word) & HIGH
        while marks:
            q = p + np.int64(trailing_zeros(marks) >> np.uint64(3))
            marks &= marks - np.uint64(1)
            segment, split, count, seen = _separator(buf, q, segment, split, count, seen, props)
        p += 8
    for q in range(p, end):
        bits |= np.uint64(buf[q])
        segment, split, count, seen = _separator(buf, q, segment, split, count, seen, props)
    count, seen = _end_segment(buf, segment, split, end, count, seen, props)
    return count, bits & HIGH == 0


@inlined
def find_property(buf, word, word_print, count, props):
    """Index of the property named `word`, or -1."""
    for e in range(count):
        if _same_name(buf, props, e, props[NAME_AT, e], len(word), word_print) and (
            len(word) <= 8 or equal(buf, props[NAME_AT, e], len(word), word)
        ):
            return e
    return -1
