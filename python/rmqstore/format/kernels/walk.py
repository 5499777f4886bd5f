"""Record starts in compiled code: the recovery walk along TOTALSIZE (§2.12), over DLedger entries
too (§2.13), and the byte-by-byte search for the next record boundary (§2.2, §2.6).
"""

from __future__ import annotations

import numpy as np

from rmqstore.format.contract_layout import (
    BLANK_MAGIC,
    DLEDGER_BLANK_MAGIC,
    DLEDGER_ENTRY_HEADER,
    DLEDGER_ENTRY_MAGIC,
    MAGIC_V1,
    MAGIC_V2,
    MIN_RECORD_SIZE,
)
from rmqstore.format.kernels.primitives import load_i32, load_i64, load_u32
from rmqstore.format.kernels.properties import property_scratch
from rmqstore.format.kernels.recordscan import BLANK, END, INVALID, RECORD, delay_ok, scan_record
from rmqstore.jit import compiled


@compiled
def entry_ok(buf, at, base_offset, size):
    """The DLedger entry header at `at` frames a record of `size` bytes right after it (§2.13): magic 1,
    entry size and body size agree with it, pos is the header's own position base_offset + at."""
    return (
        at >= 0
        and at + DLEDGER_ENTRY_HEADER <= len(buf)
        and load_i32(buf, at) == DLEDGER_ENTRY_MAGIC
        and load_i32(buf, at + 4) == size + DLEDGER_ENTRY_HEADER
        and load_i64(buf, at + 24) == base_offset + at
        and load_i32(buf, at + 44) == size
    )


@compiled
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
        if lead and pos >= lead and load_i32(buf, pos - lead) == DLEDGER_BLANK_MAGIC:
            return count, pos, BLANK
        kind, size, _, _, _, topic_at, topic_len, props_at, props_len = scan_record(buf, pos)
        if kind == BLANK and not lead:
            return count, pos, BLANK
        if (
            kind != RECORD
            or size < MIN_RECORD_SIZE
            or load_i64(buf, pos + 28) != base_offset + pos
            or not delay_ok(buf, topic_at, topic_len, props_at, props_len, props)
            or (lead and not entry_ok(buf, pos - lead, base_offset, size))
        ):
            return count, pos, INVALID
        out[count] = pos
        count += 1
        pos += size + lead
    return count, pos, END


@compiled
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


@compiled
def next_boundary(buf, lo, hi, base_offset):
    """First p in [lo, hi) where a record starts or a BLANK reaching exactly the end of the buffer
    starts; -1 if none. A record start is a structurally valid record (`scan_record`) of at least 91
    bytes whose PHYSICALOFFSET is base_offset + p."""
    n = len(buf)
    for p in range(max(lo, 0), min(hi, n - 7)):
        b = buf[p + 4]
        if b == 0xDA:
            magic = load_u32(buf, p + 4)
            if magic in (MAGIC_V1, MAGIC_V2):
                kind, size, _, _, _, _, _, _, _ = scan_record(buf, p)
                if kind == RECORD and size >= MIN_RECORD_SIZE and load_i64(buf, p + 28) == base_offset + p:
                    return p
        elif b == 0xCB and load_u32(buf, p + 4) == BLANK_MAGIC and load_i32(buf, p) == n - p:
            return p
    return -1
