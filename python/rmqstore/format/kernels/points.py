"""Records at given positions in compiled code: check each one (`check_starts`, the verdict of
`record.check_record`) and copy the kept ones back to back (`gather`).
"""

from __future__ import annotations

import numpy as np

from rmqstore.format.kernels.crc import crc_mismatch
from rmqstore.format.kernels.primitives import load_i64, memcpy, prefetch
from rmqstore.format.kernels.properties import property_scratch
from rmqstore.format.kernels.recordscan import INVALID, RECORD, delay_ok, scan_record
from rmqstore.jit import compiled

PREFETCH_AHEAD = 8
"""Point reads hint the header of the record this many positions ahead: scattered records then
arrive from memory while earlier ones are checked or copied, not one after the other."""


@compiled
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
                prefetch(buf, ahead)
        pos = starts[i]
        kind, size, _, body_at, body_len, topic_at, topic_len, props_at, props_len = scan_record(buf, pos)
        if kind == RECORD and (
            load_i64(buf, pos + 28) != physical[i]
            or not delay_ok(buf, topic_at, topic_len, props_at, props_len, props)
            or (check_crc and crc_mismatch(buf, pos, body_at, body_len, native))
        ):
            kind = INVALID
        kinds[i] = kind
        sizes[i] = size
    return kinds, sizes


@compiled
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
                prefetch(buf, line)
                line += 64
        memcpy(out, at, buf, starts[i], sizes[i])
        at += sizes[i]
    return at
