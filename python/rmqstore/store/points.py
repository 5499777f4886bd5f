"""Reading the records at many physical offsets of one segment: one buffer, one check (§2.12).

A memory-mapped segment is read as one zero-copy window over the offsets' span (pages are touched only
where records are). Other files (remote stores) are read in windows around runs of offsets closer than
`READ_RUN_GAP`, gathered into one buffer by a single `read_ranges` call. Every position is then checked
by one `PointReader.check` call; a record longer than its window is read again with a longer window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rmqstore.format.points import PointCheck, PointReader
from rmqstore.store.commitlog import PROBE_BYTES, CommitLog
from rmqstore.store.segments import Segment

READ_RUN_GAP = 64 << 10
"""Offsets of a non-mapped (remote) segment closer than this share one ranged read: a request's
latency costs about as much as transferring this many bytes."""


@dataclass(frozen=True)
class SegmentPoints:
    """`buf` holds the windows read; `positions[i]` is where offset i starts in it; `checked` the verdicts."""

    buf: np.ndarray
    positions: np.ndarray
    checked: PointCheck


def read_points(log: CommitLog, reader: PointReader, seg: Segment, offsets: np.ndarray, *,
                check_crc: bool) -> SegmentPoints:
    """Read and check the records at `offsets` (sorted, unique, inside `seg`)."""
    rel = offsets - seg.base_offset
    if log.zero_copy(seg):
        starts, ends = rel[:1], rel[-1:] + PROBE_BYTES
    else:
        breaks = np.flatnonzero(np.diff(rel) >= READ_RUN_GAP) + 1
        starts, ends = rel[np.r_[0, breaks]], rel[np.r_[breaks - 1, len(rel) - 1]] + PROBE_BYTES
    ends = np.minimum(ends, seg.size)
    owner = np.searchsorted(starts, rel, side="right") - 1
    while True:
        lengths = ends - starts
        buf = (log.read(seg, int(starts[0]), int(lengths[0])) if len(starts) == 1
               else log.read_ranges(seg, starts.tolist(), lengths.tolist()))
        at = np.cumsum(lengths) - lengths
        positions = rel - starts[owner] + at[owner]
        checked = reader.check(buf, positions, offsets, check_crc=check_crc)
        room = ends[owner] - rel
        cut = (checked.sizes > room) & (ends[owner] < seg.size) & (checked.sizes <= seg.size - rel)
        if not cut.any():
            return SegmentPoints(buf, positions, checked)
        np.maximum.at(ends, owner[cut], rel[cut] + checked.sizes[cut])
