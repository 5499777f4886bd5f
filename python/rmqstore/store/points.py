"""Reading the records at many physical offsets of one segment: one buffer, one check (§2.12).

The offsets are taken in parts spanning at most the log's window for the file (`LOCAL_WINDOW` mapped,
`REMOTE_WINDOW` else), which bounds the memory a part holds. A memory-mapped part is read as one
zero-copy window (pages are touched only where records are); other files (remote stores) in windows
around runs of offsets closer than `READ_RUN_GAP`, gathered into one buffer by a single `read_ranges`
call. Every position of a part is then checked by one `PointReader.check` call; a record longer than
its window is read again with a longer window.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from rmqstore.format.points import PointCheck, PointReader, PointRecords
from rmqstore.store.commitlog import LOCAL_WINDOW, PROBE_BYTES, REMOTE_WINDOW, CommitLog
from rmqstore.store.segments import Segment

READ_RUN_GAP = 64 << 10
"""Offsets of a non-mapped (remote) segment closer than this share one ranged read: a request's
latency costs about as much as transferring this many bytes."""


@dataclass(frozen=True)
class SegmentPoints:
    """`buf` holds the windows read; `positions[i]` is where `offsets[i]` starts in it; `checked` the
    verdicts; `held` the memory that keeping `buf` costs (0 for a view of a memory map)."""

    offsets: np.ndarray
    buf: np.ndarray
    positions: np.ndarray
    checked: PointCheck
    held: int

    def valid(self) -> PointRecords:
        """The records that passed the check."""
        ok = self.checked.ok
        return PointRecords(self.buf, self.positions[ok], self.checked.sizes[ok], self.offsets[ok])


def read_points(log: CommitLog, reader: PointReader, seg: Segment, offsets: np.ndarray, *,
                check_crc: bool) -> Iterator[SegmentPoints]:
    """Read and check the records at `offsets` (sorted, unique, inside `seg`), part by part."""
    cap = LOCAL_WINDOW if log.zero_copy(seg) else REMOTE_WINDOW
    breaks = np.flatnonzero(np.diff((offsets - offsets[0]) // cap)) + 1 if len(offsets) else []
    for part in np.split(offsets, breaks) if len(offsets) else ():
        yield _read_part(log, reader, seg, part, check_crc)


def _read_part(log: CommitLog, reader: PointReader, seg: Segment, offsets: np.ndarray,
               check_crc: bool) -> SegmentPoints:
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
            return SegmentPoints(offsets, buf, positions, checked, 0 if log.zero_copy(seg) else len(buf))
        np.maximum.at(ends, owner[cut], rel[cut] + checked.sizes[cut])


MAX_PENDING_BYTES = REMOTE_WINDOW
"""Sparse records waiting to be copied together keep the buffers they were read into (not memory
maps, which cost nothing to keep) up to this many bytes."""


class PendingRecords:
    """Sparse valid records of successive parts, waiting to be copied together into one batch."""

    def __init__(self) -> None:
        self._parts: list[tuple[PointRecords, int]] = []
        self.rows = 0
        self.held = 0
        """Bytes of non-mapped buffers kept alive (a buffer shared by two parts counts twice)."""

    def add(self, records: PointRecords, held: int) -> None:
        """Queue records read into a buffer whose keeping costs `held` bytes."""
        self._parts.append((records, held))
        self.rows += len(records)
        self.held += held

    def take(self, rows: int) -> list[PointRecords]:
        """The first `rows` records queued (all when fewer), in order; the rest stay queued."""
        taken: list[PointRecords] = []
        while self._parts and rows:
            records, held = self._parts[0]
            if len(records) > rows:
                taken.append(records.part(0, rows))
                self._parts[0] = (records.part(rows, len(records)), held)
                self.rows -= rows
                break
            taken.append(records)
            self._parts.pop(0)
            self.rows -= len(records)
            self.held -= held
            rows -= len(records)
        return taken
