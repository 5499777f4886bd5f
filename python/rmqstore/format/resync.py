"""Find the next record boundary from an arbitrary byte position of a commit-log segment (§2.2, §2.6).

Used to split one segment across Spark partitions and to bisect the log by time: a range that starts
in the middle of a record begins at the next record start instead.

A position p is a record start when the record there is structurally valid (v1/v2 magic, TOTALSIZE
at least the minimum and inside the buffer, field lengths adding up to TOTALSIZE) and its own
PHYSICALOFFSET field equals base_offset + p. A message body would have to contain a whole
self-consistent record header carrying its own physical offset to fake this. A caller that needs
certainty confirms it the way the splitter does: the walk of the previous range must stop exactly
at the returned position.

A BLANK at p counts as a boundary only when its TOTALSIZE reaches exactly the end of the buffer
(the segment): that is what the broker writes (§2.6), and 8 stray bytes inside a body are
very unlikely to name the exact distance to the segment end. Returning it tells the caller that
no record starts between pos and the segment end. Without such a BLANK (a segment still being
written, or pos past the BLANK's header) the answer is None.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rmqstore.format.columnar import FieldReader, RecordFields, as_byte_array, record_candidates
from rmqstore.format.layout import BLANK_MAGIC, END_FILE_MIN_BLANK_LENGTH, OFF_MAGIC, OFF_TOTALSIZE

FIRST_WINDOW = 64 << 10
"""Bytes searched first; each further window doubles, up to `LAST_WINDOW`."""
LAST_WINDOW = 8 << 20


def next_record_start(buf: Any, pos: int, base_offset: int, end: int) -> int | None:
    """The first position p with pos <= p < end where a record (or the segment-ending BLANK) starts.

    `buf` is the whole segment, `base_offset` its physical offset. None when there is none.
    """
    buf = as_byte_array(buf)
    reader = FieldReader(buf)
    end = min(end, len(buf))
    window = FIRST_WINDOW
    lo = max(pos, 0)
    while lo < end:
        hi = min(end, lo + window)
        found = _first_boundary(reader, base_offset, lo, hi)
        if found is not None:
            return found
        lo = hi
        window = min(2 * window, LAST_WINDOW)
    return None


def _first_boundary(reader: FieldReader, base_offset: int, lo: int, hi: int) -> int | None:
    records = record_candidates(reader, base_offset, lo, hi)
    if len(records):
        records = records[RecordFields(reader, records).structurally_valid(base_offset)]
    blank = _segment_end_blank(reader, lo, hi)
    starts = [int(p) for p in (records[0] if len(records) else None, blank) if p is not None]
    return min(starts) if starts else None


def _segment_end_blank(reader: FieldReader, lo: int, hi: int) -> int | None:
    """Position in [lo, hi) of a BLANK whose TOTALSIZE is exactly the bytes left in the buffer."""
    buf = reader.buf
    hi = min(hi, len(buf) - END_FILE_MIN_BLANK_LENGTH + 1)
    if hi <= lo:
        return None
    pos = np.flatnonzero(buf[lo + OFF_MAGIC : hi + OFF_MAGIC] == BLANK_MAGIC >> 24) + lo
    pos = pos[reader.read(pos + OFF_MAGIC, ">u4") == BLANK_MAGIC]
    pos = pos[reader.read(pos + OFF_TOTALSIZE, ">i4") == len(buf) - pos]
    return int(pos[0]) if len(pos) else None
