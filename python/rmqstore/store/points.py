"""Reading the records at many physical offsets of one segment: one buffer, one check (§2.12).

The offsets are taken in parts spanning at most the log's window for the file (`LOCAL_WINDOW` mapped,
`REMOTE_WINDOW` else), which bounds the memory a part holds. A memory-mapped part is read as one
zero-copy window (pages are touched only where records are), unless it is one offset or its offsets lie
`LOCAL_SPARSE_GAP` apart on average: then, like other files (remote stores), in windows around runs of
offsets, gathered into one buffer by a single `read_ranges` call (positioned reads of `LOCAL_PROBE`
bytes per record locally, which read no more than that: a page fault in the map would read the
read-ahead window around the record; runs of offsets closer than `READ_RUN_GAP` remotely). Every
position of a part is then checked by one `PointReader.check` call; a record longer than its window is
read again whole (a mapped window is made longer, other records are read once more after the windows).
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
LOCAL_SPARSE_GAP = 24 << 10
"""Offsets of a memory-mapped segment this far apart on average are read by positioned reads, not
through the map (measured on 430-byte records: a page fault maps, and later unmaps, the pages around
the one touched, about 1.5 us per record at 1% of the records, 0.7 at 2%; a 1 KiB read costs 0.4-0.5)."""
LOCAL_PROBE = 1 << 10
"""Bytes read at each offset of a sparse local read; a longer record is read again whole."""


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
    if not log.zero_copy(seg):
        return _read_runs(log, reader, seg, offsets, READ_RUN_GAP, PROBE_BYTES, check_crc)
    if rel[-1] - rel[0] >= LOCAL_SPARSE_GAP * (len(rel) - 1):
        return _read_runs(log, reader, seg, offsets, LOCAL_PROBE, LOCAL_PROBE, check_crc)
    start, end = int(rel[0]), min(int(rel[-1]) + PROBE_BYTES, seg.size)
    while True:
        buf = log.read(seg, start, end - start)
        checked = reader.check(buf, rel - start, offsets, check_crc=check_crc)
        cut = (checked.sizes > end - rel) & (end < seg.size) & (checked.sizes <= seg.size - rel)
        if not cut.any():
            return SegmentPoints(offsets, buf, rel - start, checked, 0)
        end = int((rel[cut] + checked.sizes[cut]).max())


def _read_runs(log: CommitLog, reader: PointReader, seg: Segment, offsets: np.ndarray, gap: int,
               probe: int, check_crc: bool) -> SegmentPoints:
    """Windows from the first offset of each run (offsets closer than `gap`) to `probe` bytes past its
    last offset, gathered by one `read_ranges`; records cut by their window are read whole after them."""
    rel = offsets - seg.base_offset
    breaks = np.flatnonzero(np.diff(rel) >= gap) + 1
    starts = rel[np.r_[0, breaks]]
    ends = np.minimum(rel[np.r_[breaks - 1, len(rel) - 1]] + probe, seg.size)
    owner = np.searchsorted(starts, rel, side="right") - 1
    lengths = ends - starts
    buf = log.read_ranges(seg, starts.tolist(), lengths.tolist())
    positions = rel - starts[owner] + (np.cumsum(lengths) - lengths)[owner]
    checked = reader.check(buf, positions, offsets, check_crc=check_crc)
    cut = np.flatnonzero((checked.sizes > ends[owner] - rel) & (ends[owner] < seg.size)
                         & (checked.sizes <= seg.size - rel))
    if len(cut):
        sizes = checked.sizes[cut]
        whole = log.read_ranges(seg, rel[cut].tolist(), sizes.tolist())
        positions[cut] = len(buf) + np.cumsum(sizes) - sizes
        buf = np.concatenate([buf, whole])
        again = reader.check(buf, positions[cut], offsets[cut], check_crc=check_crc)
        ok = checked.ok.copy()
        ok[cut] = again.ok & (again.sizes == sizes)  # read whole: the same record, or no record
        checked = PointCheck(ok, checked.sizes)
    return SegmentPoints(offsets, buf, positions, checked, len(buf))


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
