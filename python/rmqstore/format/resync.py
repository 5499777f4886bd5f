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

from rmqstore.format import reference
from rmqstore.format.columnar import as_byte_array
from rmqstore.speedups import NUMBA

if NUMBA:  # else `reference.next_boundary`
    from rmqstore.format.kernels.walk import next_boundary


def next_record_start(buf: Any, pos: int, base_offset: int, end: int) -> int | None:
    """The first position p with pos <= p < end where a record (or the segment-ending BLANK) starts.

    `buf` is the whole segment, `base_offset` its physical offset. None when there is none. One
    compiled byte-by-byte scan (`kernels.walk.next_boundary`) that stops at the first hit (without
    numba, `reference.next_boundary`).
    """
    buf = as_byte_array(buf)
    if NUMBA:
        found = next_boundary(buf, pos, min(end, len(buf)), base_offset)
    else:
        reference.slow_note()
        found = reference.next_boundary(buf, pos, min(end, len(buf)), base_offset)
    return None if found < 0 else int(found)
