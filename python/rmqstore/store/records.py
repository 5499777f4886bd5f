"""`RecordReader`: the records of a commit log, decoded into Arrow batches (design §4.1).

Scans of byte ranges (from the first record start in them, §2.12) and point reads at record starts,
in FAILFAST or PERMISSIVE mode; the planner's tasks and every other service read records through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from rmqstore.format.columnar import decode_records, walk_ranges
from rmqstore.format.compression import BodyDecompressionError
from rmqstore.format.points import PointReader, PointRecords, point_reader, problem_at, worth_gathering
from rmqstore.format.table import arrow_schema
from rmqstore.store.commitlog import CommitLog
from rmqstore.store.errors import FAILFAST, StoreCorruptionError, check_mode
from rmqstore.store.points import MAX_PENDING_BYTES, PendingRecords, read_points
from rmqstore.store.segments import Segment, segment_indexes
from rmqstore.store.stats import StoreStats

DEFAULT_BATCH_ROWS = 16_384
GATHER_RANGE_BYTES = 1 << 20
"""`scan_ranges` reads, walks and decodes the ranges of a segment up to this size together."""


class RecordReader:
    """Reads and decodes the records of `log`, counting in `stats`."""

    def __init__(self, log: CommitLog, stats: StoreStats, *, max_message_size: int,
                 decompress_threads: int | None) -> None:
        self.log = log
        self.stats = stats
        self.max_message_size = max_message_size
        self.decompress_threads = decompress_threads
        self.point_reader: PointReader = point_reader()
        """How `read_offsets` checks and decodes records (tests swap in the reference reader)."""

    def scan(self, start: int | None = None, end: int | None = None, columns: Sequence[str] | None = None,
             *, check_crc: bool = False, mode: str = FAILFAST, decompress: bool = True,
             batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        """Record batches of the records whose commitLogOffset is in [start, end), in log order.

        `start` may be any byte (the first record start at or after it is found by resync); None
        means the log's min / max offset. Only `columns` are decoded (all when None). An invalid
        record, or a body that cannot be decompressed, raises StoreCorruptionError naming the file
        and physical offset (FAILFAST) or is counted in `stats` and stepped over (PERMISSIVE: reading
        resumes at the next valid record).
        """
        mode = check_mode(mode)
        cols = list(arrow_schema(columns).names)
        lo = self.log.min_offset if start is None else start
        hi = self.log.max_offset if end is None else end
        for chunk in self.log.chunks(lo, hi, check_crc=check_crc, mode=mode):
            for first in range(0, len(chunk.starts), batch_rows):
                starts = chunk.starts[first : first + batch_rows]
                yield self._decode(chunk.segment, chunk.buf, starts, chunk.base_offset + starts, cols,
                                   mode, decompress)

    def scan_ranges(self, ranges: Iterable[tuple[int, int]], columns: Sequence[str] | None = None, *,
                    check_crc: bool = False, mode: str = FAILFAST,
                    decompress: bool = True) -> Iterator[pa.RecordBatch]:
        """The records of `scan(start, end)` for each range (not in log order across ranges).

        Meant for many small ranges that start at a record start (the bytes no consume queue covers):
        the ranges inside one segment are read, walked and decoded together in a few compiled calls,
        not one per range. A range that is large, crosses a segment end or whose walk does not end
        cleanly at its end is read by `scan` (same errors and counters).
        """
        mode = check_mode(mode)
        cols = list(arrow_schema(columns).names)
        spans = np.asarray(list(ranges), dtype=np.int64).reshape(-1, 2)
        starts, ends = spans[:, 0], np.minimum(spans[:, 1], self.log.max_offset)
        segments = self.log.segments
        seg_index = segment_indexes(segments, starts)
        seg_ends = np.asarray([seg.end_offset for seg in segments] + [0], dtype=np.int64)  # [-1]: none
        gather = ((seg_index >= 0) & (starts < ends) & (ends <= seg_ends[seg_index])
                  & (ends - starts <= GATHER_RANGE_BYTES) & (self.log.lead == 0))  # DLedger (§2.13): by scan
        by_scan = [(a, b) for a, b, ok in zip(starts.tolist(), ends.tolist(), gather.tolist(), strict=True)
                   if not ok and a < b]
        for i in np.unique(seg_index[gather]).tolist():
            seg, mine = segments[i], gather & (seg_index == i)
            physical, length = starts[mine], ends[mine] - starts[mine]
            buf = self.log.read_ranges(seg, (physical - seg.base_offset).tolist(), length.tolist())
            walked = walk_ranges(buf, physical, length, check_crc=check_crc)
            self.stats.records_walked += len(walked.starts)
            by_scan += [(a, a + n) for a, n, ok in zip(physical.tolist(), length.tolist(),
                                                       walked.clean.tolist(), strict=True) if not ok]
            for first in range(0, len(walked.starts), DEFAULT_BATCH_ROWS):
                part = slice(first, first + DEFAULT_BATCH_ROWS)
                yield self._decode(seg, buf, walked.starts[part], walked.offsets[part], cols, mode,
                                   decompress)
        for start, end in sorted(by_scan):
            yield from self.scan(start, end, cols, check_crc=check_crc, mode=mode, decompress=decompress)

    def segment_spans(self) -> list[tuple[int, int]]:
        """Each segment's part of [min_offset, max_offset), in log order, empty parts left out.

        Scanning ranges that cover a span with `scan(a, b)` yields every record exactly once: a
        range owns the records whose start is in it (alignment happens at read time by resync).
        `rmqstore.plan.tasks.split_spans` cuts spans into task-sized pieces.
        """
        spans = [(max(self.log.min_offset, seg.base_offset), min(self.log.max_offset, seg.end_offset))
                 for seg in self.log.segments]
        return [(lo, hi) for lo, hi in spans if lo < hi]

    def read_offsets(self, offsets: Iterable[int], columns: Sequence[str] | None = None, *,
                     mode: str = FAILFAST, decompress: bool = True, check_crc: bool = False,
                     strict: bool = True) -> pa.RecordBatch:
        """The records starting at the given physical offsets, ascending, each offset once.

        Offsets outside [min_offset, max_offset) hold no record and are left out. With `strict`, an
        offset inside that range that is not a valid record start (checked like §2.12 plus
        PHYSICALOFFSET == offset) raises StoreCorruptionError (FAILFAST) or is counted (PERMISSIVE);
        without it such offsets are simply left out (for index candidates and user-typed offsets).
        """
        cols = list(arrow_schema(columns).names)
        batches = list(self.read_offsets_batches(offsets, cols, mode=mode, decompress=decompress,
                                                 check_crc=check_crc, strict=strict))
        if not batches:
            return _empty(cols)
        return pa.concat_batches(batches) if len(batches) > 1 else batches[0]

    def read_offsets_batches(self, offsets: Iterable[int], columns: Sequence[str] | None = None, *,
                             mode: str = FAILFAST, decompress: bool = True, check_crc: bool = False,
                             strict: bool = True,
                             batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        """`read_offsets` as record batches of at most `batch_rows` rows, in offset order (no copy
        into one batch). The offsets of a segment are read and checked together (`store.points`);
        many records close together are decoded where they lie, sparse or few ones
        (`format.points.worth_gathering`) are copied together first, those of several segments into
        one batch."""
        mode = check_mode(mode)
        cols = list(arrow_schema(columns).names)
        wanted = _sorted_unique(np.asarray(offsets if isinstance(offsets, np.ndarray) else list(offsets),
                                           dtype=np.int64))
        wanted = wanted[(wanted >= self.log.min_offset) & (wanted < self.log.max_offset)]
        reader = self.point_reader
        pending = PendingRecords()
        for seg, mine in self._by_segment(wanted):
            for points in read_points(self.log, reader, seg, mine, check_crc=check_crc):
                if strict:
                    ok = points.checked.ok
                    bad = zip(points.positions[~ok].tolist(), points.offsets[~ok].tolist(), strict=True)
                    for pos, offset in bad:
                        reason = problem_at(points.buf, pos, offset, check_crc=check_crc)
                        self._bad_offset(seg, offset, reason, mode)
                found = points.valid()
                for first in range(0, len(found), batch_rows):
                    part = found.part(first, first + batch_rows)
                    if worth_gathering(part):
                        pending.add(part, points.held)
                        while pending.rows >= batch_rows or pending.held > MAX_PENDING_BYTES:
                            yield self._decode_records(reader.gather(pending.take(batch_rows)), cols, mode,
                                                       decompress)
                        continue
                    if pending.rows:
                        yield self._decode_records(reader.gather(pending.take(batch_rows)), cols, mode,
                                                   decompress)
                    yield self._decode_records(part, cols, mode, decompress, seg)
        if pending.rows:
            yield self._decode_records(reader.gather(pending.take(batch_rows)), cols, mode, decompress)

    def _decode_records(self, records: PointRecords, columns: list[str], mode: str, decompress: bool,
                        seg: Segment | None = None) -> pa.RecordBatch:
        return self._decode(seg, records.buf, records.positions, records.physical, columns, mode, decompress,
                            self.point_reader.decode)

    def _decode(self, seg: Segment | None, buf: np.ndarray, starts: np.ndarray, offsets: np.ndarray,
                columns: list[str], mode: str, decompress: bool,
                decode: Callable[..., pa.RecordBatch] = decode_records) -> pa.RecordBatch:
        """`decode` (`decode_records`) of the records at buffer positions `starts` (physical `offsets`)
        of `seg` (None: of the segments that hold those offsets).

        A body that cannot be decompressed raises StoreCorruptionError naming the file and the
        record's physical offset (FAILFAST), or leaves that record out and counts it (PERMISSIVE).
        """
        while True:
            try:
                batch = decode(buf, starts, offsets, columns, decompress=decompress,
                               max_body_size=self.max_message_size,
                               decompress_threads=self.decompress_threads)
            except BodyDecompressionError as exc:
                offset = int(offsets[exc.row])
                path = self._path_of(seg, offset)
                if mode == FAILFAST:
                    raise StoreCorruptionError(path, offset, exc.cause) from None
                self.stats.skip(path, offset, _total_size(buf, int(starts[exc.row])), exc.cause)
                starts, offsets = np.delete(starts, exc.row), np.delete(offsets, exc.row)
                continue
            self.stats.records_decoded += len(starts)
            return batch

    def _path_of(self, seg: Segment | None, offset: int) -> str:
        """The file of `seg`, or when None of the segment holding the physical `offset`."""
        held = seg or self.log.segment_at(offset)
        assert held is not None, offset  # a decoded record's offset lies in the segment it was read from
        return held.path

    def _by_segment(self, offsets: np.ndarray) -> Iterator[tuple[Segment, np.ndarray]]:
        """Sorted offsets grouped by segment; offsets in no segment are dropped."""
        index = segment_indexes(self.log.segments, offsets)
        inside = index >= 0
        offsets, index = offsets[inside], index[inside]
        if not len(offsets):
            return
        breaks = np.flatnonzero(np.diff(index)) + 1
        for part, seg_index in zip(np.split(offsets, breaks), index[np.r_[0, breaks]].tolist(), strict=True):
            yield self.log.segments[seg_index], part

    def _bad_offset(self, seg: Segment, offset: int, reason: str, mode: str) -> None:
        if mode == FAILFAST:
            raise StoreCorruptionError(seg.path, offset, f"no valid record: {reason}")
        self.stats.skip(seg.path, offset, 0, f"no valid record: {reason}")

def _total_size(buf: np.ndarray, pos: int) -> int:
    return int.from_bytes(bytes(buf[pos : pos + 4]), "big", signed=True) if len(buf) - pos >= 4 else 1 << 62


def _sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending. A stable sort (timsort) is linear on the few ascending runs
    that plans pass (one per consume queue), where np.unique's hashing is several times slower."""
    if np.all(values[1:] > values[:-1]):
        return values
    values = np.sort(values, kind="stable")
    return values[np.r_[True, values[1:] != values[:-1]]]


def _empty(columns: list[str]) -> pa.RecordBatch:
    schema = arrow_schema(columns)
    return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)
