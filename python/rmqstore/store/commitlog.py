"""The commit log read-only: segments, the valid end of the log, windowed record walks (§2.1, §2.12).

Valid end (what recovery would keep, §2.12/§6.3), checked like `checkCRCOnRecover` (BODYCRC included);
the first invalid record (a torn tail after a crash, zeros, garbage, a length past the end) ends the
log there and is not an error:
* With an `abort` file (a crash copy, or a running broker) it is where RocketMQ's abnormal recovery
  ends (§6.3): the walk starts at the first record of the last segment whose first record is valid
  with a store time in (0, getMinTimestamp()] of the checkpoint (else the first segment), goes on
  through BLANKs into the next segments and stops at the first invalid record. It may resume in that
  segment where an earlier such walk stopped (`rmqstore.store.logend`, kept apart from the walks
  from E: a recovery walk checked every record of a segment before the point it remembers), never
  at E: a record before E can be what recovery stops at.
* After a clean shutdown the last segment whose first record is valid (or a BLANK) holds the end;
  later segments are pre-allocated or stale and count as empty. That segment is walked from the
  furthest of: its first record; the last record the broker's index has seen (E = endPhyOffset of
  the newest index file, §5.1/§5.5), when the segment holds E and the record at E passes the same
  check with PHYSICALOFFSET == E (an index can outlive lost log pages: then E is not trusted); the
  end an earlier walk remembered (`rmqstore.store.logend`). So finding the end reads the log past E
  only, not the whole active segment (up to 1 GiB on a remote store), and records before E are
  checked when they are read, like those of older segments.

Without `abort` the broker shut down cleanly, so the log cannot end in a torn write: when valid records
follow the record the walk stopped at, that record is damage (damage.md §2) and the valid end is where
the last of them ends; reads reach the damage and report it (FAILFAST) or step over it (PERMISSIVE).
With `abort` the records the walk never reaches past the end are not rows; `after_end` counts them for
`info` and `verify` (a restarted broker would overwrite them).

An invalid record before the end does not move it: scans report it (FAILFAST) or step over the
damage (PERMISSIVE): reading resumes at the next record start that resync finds (`format.resync`),
and the place and the bytes skipped are counted in `StoreStats`.

Reads go through windows: a local map hands out zero-copy views, a remote file is read in ranged
requests of at most `remote_window` bytes; a record cut by a window edge is re-read whole. Point and
planning reads (a record's check, header or store time, resync, the walk for the end from a remembered
position) are `read_at`: positioned reads of just their bytes, not the map's read-ahead around them.

Entry framing (`lead`): in a DLedger log (§2.13) each record is the body of an entry whose 48-byte
header comes right before it. Positions stay record positions (what consume queues, the index and
msgIds hold); windows start `lead` bytes early so the walk checks each header (`kernels.walk.walk`), a
DLedger blank ends a segment like a BLANK, and the valid end is where the first bad entry starts.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Literal

import numpy as np

from rmqstore.format.columnar import walk_records
from rmqstore.format.contract_layout import DLEDGER_BLANK_MAGIC
from rmqstore.format.dledger import entry_problem
from rmqstore.format.layout import BLANK_MAGIC, OFF_BORNHOST, OFF_MAGIC, OFF_SYSFLAG, store_timestamp_offset
from rmqstore.format.record import check_record
from rmqstore.format.resync import next_record_start
from rmqstore.store.errors import FAILFAST, ReadMode, StoreCorruptionError
from rmqstore.store.segments import OpenFiles, Segment, common_segment_size, find_segment
from rmqstore.store.stats import StoreStats

if TYPE_CHECKING:
    from rmqstore.store.logend import LogEndCache

LOCAL_WINDOW = 64 << 20
"""Largest window handed to the decoder at once for a memory-mapped file."""
REMOTE_WINDOW = 8 << 20
"""Largest single ranged read of a remote segment."""
TAIL_SLACK = 64 << 10
"""Read this much past a range end so the range's last record usually arrives in the same request."""
RESYNC_FIRST_WINDOW = 8 << 10
"""First read of a resync: the next record start is usually within a few kilobytes."""
PROBE_BYTES = 4 << 10
"""First read at a single record: most records fit, bigger ones get a second read."""
RESUME_WINDOW = 16 << 10
"""First range walked when the walk for the log's end resumes where an earlier one ended
(`rmqstore.store.logend`); each further range is 4x longer."""

StopKind = Literal["end", "blank", "invalid"]
_INT = struct.Struct(">i")
_UINT = struct.Struct(">I")
_LONG = struct.Struct(">q")


@dataclass(frozen=True)
class Chunk:
    """Valid records found in one window: `buf[0]` is at position `start` of `segment`."""

    segment: Segment
    start: int
    buf: np.ndarray
    starts: np.ndarray
    """Record positions inside `buf` (int64)."""

    @property
    def base_offset(self) -> int:
        """Physical offset of `buf[0]`."""
        return self.segment.base_offset + self.start


@dataclass
class WalkStop:
    """Why a walk over a segment ended: `end` of the range, a `blank`, or an `invalid` record."""

    kind: StopKind = "end"
    position: int = 0
    """Position in the segment where the walk stopped."""
    reason: str | None = None


@dataclass(frozen=True)
class LogEnd:
    """The valid end of the log and why it is there."""

    offset: int
    segment: Segment | None
    reason: str


class CommitLog:
    """Segments of one commit log (possibly spread over several directories)."""

    def __init__(self, segments: Sequence[Segment], files: OpenFiles, stats: StoreStats, *,
                 check_crc_at_end: bool = True, end_cache: LogEndCache | None = None,
                 last_indexed: Callable[[], int | None] | None = None,
                 crash_min_timestamp: Callable[[], int | None] | None = None,
                 recovery_cache: LogEndCache | None = None, lead: int = 0) -> None:
        self.segments = list(segments)
        self.lead = lead
        """Bytes of entry framing before each record: 0, or 48 in a DLedger log (module docstring)."""
        self.segment_size = common_segment_size(self.segments)
        self._files = files
        self._stats = stats
        self._check_crc_at_end = check_crc_at_end
        self._end_cache = end_cache
        """Where the walk for the end may resume (`rmqstore.store.logend`)."""
        self._last_indexed = last_indexed
        """E, the physical offset of the last record the broker indexed (None: no index), read when the
        end is looked for (`IndexFiles.last_indexed_offset`)."""
        self._crash_min_timestamp = crash_min_timestamp
        """The checkpoint's getMinTimestamp() when `abort` exists, None after a clean shutdown (§6.3)."""
        self._recovery_cache = recovery_cache
        """Where a walk like abnormal recovery may resume in each segment it walks (kept apart:
        `end_cache` walks start at E and leave the records before it unchecked)."""

    # ---- bounds -------------------------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        """First byte of the first segment (older segments were deleted by retention, §2.1)."""
        return self.segments[0].base_offset if self.segments else 0

    @cached_property
    def end(self) -> LogEnd:
        """The valid end of the log (module docstring): where the walk like recovery stops, or, without
        an `abort` file, past the damage it stopped at when valid records follow (damage.md §2)."""
        walked = self._walked_end
        if self._min_timestamp is not None or self.lead:
            return walked
        after, stop = self._found_after
        if not after.records or self._leftovers(walked, after):
            return walked
        return LogEnd(stop, self.segment_at(stop - 1),
                      f"{walked.reason}; without an abort file the log goes on: {after.records} valid "
                      f"records follow, up to {stop}, so what stopped that walk is damage (damage.md §2)")

    def _leftovers(self, walked: LogEnd, after: AfterEnd) -> bool:
        """The records past the walk's end are older than the last record before it: leftovers past a
        crash's recovered end that the restarted broker's writes did not reach, not the log going on
        (damage.md §2). Found records are rare, so this walks the end's segment again."""
        seg, first = walked.segment, after.first
        if seg is None or first is None:
            return False
        last, stop = None, WalkStop()
        for chunk in self.walk(seg, self.lead, seg.size, check_crc=self._check_crc_at_end, stop=stop):
            last = chunk.start + int(chunk.starts[-1])
        found = self.segment_at(first)
        return last is not None and found is not None and \
            self.store_time_at(found, first - found.base_offset) < self.store_time_at(seg, last)

    @cached_property
    def _min_timestamp(self) -> int | None:
        """The checkpoint's getMinTimestamp() when `abort` exists, None after a clean shutdown (§6.3)."""
        return self._crash_min_timestamp() if self._crash_min_timestamp else None

    @cached_property
    def _walked_end(self) -> LogEnd:
        """The first invalid record of the walk like recovery (module docstring), or a segment's end."""
        min_timestamp = self._min_timestamp
        if min_timestamp is not None and self.segments and not self.lead:  # DLedger's own recovery: §2.13
            return self._recovered_end(min_timestamp)
        for seg in reversed(self.segments):
            first = self.check_at(seg, self.lead, check_crc=self._check_crc_at_end)
            if first.kind == "invalid":
                continue
            if first.kind == "blank":
                return LogEnd(seg.end_offset, seg, f"{seg.path} starts with a BLANK")
            start = self._walk_start(seg)
            stop, last = WalkStop(), None
            for chunk in self.walk(seg, start, seg.size, check_crc=self._check_crc_at_end, stop=stop,
                                   first_window=RESUME_WINDOW if start else None):
                last = chunk.start + int(chunk.starts[-1])  # a resumed walk reads what is new
            if self._end_cache and (last is not None or start == self.lead):
                self._end_cache.remember(self, seg, stop.position, last)
            if stop.kind == "invalid":
                what = "DLedger entry" if self.lead else "record"
                return LogEnd(seg.base_offset + stop.position - self.lead, seg,
                              f"{seg.path}: first invalid {what} at position {stop.position - self.lead}: "
                              f"{stop.reason}")
            return LogEnd(seg.end_offset, seg, f"{seg.path} is complete ({stop.kind})")
        return LogEnd(self.min_offset, None, "no segment starts with a valid record: the log is empty")

    def _recovered_end(self, min_timestamp: int) -> LogEnd:
        """Where abnormal recovery ends the log (`CommitLog.recoverAbnormally`, §6.3): walked from
        `_recovery_start`, on through each BLANK into the next segment, to the first invalid record."""
        first, cache = self._recovery_start(min_timestamp), self._recovery_cache
        for i in range(first, len(self.segments)):
            seg = self.segments[i]
            start = cache.resume_at(self, seg) if cache else 0
            stop, last = WalkStop(), None
            for chunk in self.walk(seg, start, seg.size, check_crc=self._check_crc_at_end, stop=stop,
                                   first_window=RESUME_WINDOW if start else None):
                last = chunk.start + int(chunk.starts[-1])
            if cache and (last is not None or start == 0):
                cache.remember(self, seg, stop.position, last)
            if stop.kind == "blank" and i + 1 < len(self.segments):
                continue
            origin = f"recovery after a crash from {self.segments[first].path}"
            if stop.kind == "invalid":
                return LogEnd(seg.base_offset + stop.position, seg,
                              f"{seg.path}: first invalid record at position {stop.position} ({origin}): "
                              f"{stop.reason}")
            return LogEnd(seg.end_offset, seg, f"{seg.path} is complete ({stop.kind}; {origin})")
        raise AssertionError("unreachable: the last segment returns")

    def _recovery_start(self, min_timestamp: int) -> int:
        """The segment abnormal recovery starts from (`isMappedFileMatchedRecover`, §6.3): the last whose
        first record is valid with a store time in (0, min_timestamp], else the first."""
        for i in range(len(self.segments) - 1, 0, -1):
            seg = self.segments[i]
            if self.check_at(seg, 0, check_crc=self._check_crc_at_end).kind == "record" \
                    and 0 < self.store_time_at(seg, 0) <= min_timestamp:
                return i
        return 0

    def after_end(self) -> AfterEnd:
        """Valid records in the files past the valid end, which no reader returns and a restarted broker
        would overwrite (with `abort`; without it they move the end past the damage, `end`)."""
        after, _ = self._found_after
        return after if after.end == self.end.offset else AfterEnd(self.end.offset, 0, 0, None)

    @cached_property
    def _found_after(self) -> tuple[AfterEnd, int]:
        """The valid records past the walk's end (the segment holding it and later ones), found by
        resync, each checked like the walk for the end, damage between them stepped over; and where the
        last of them ends. A segment is searched only up to zeros where a record would start that no
        index entry is past (`_unwritten`): on a sound store this costs an 8-byte read at the end (and at
        each later segment's start), not the rest of the active segment."""
        end = self._walked_end.offset
        records, size, first, stop_at = 0, 0, None, end
        for seg in self.segments:
            if seg.end_offset <= end:
                continue
            pos = max(end - seg.base_offset, 0)
            while pos < seg.size and not self._unwritten(seg, pos):
                found = self.resync(seg, pos, seg.size)
                if found is None:
                    break
                stop, walked = WalkStop(), 0
                for chunk in self.walk(seg, found, seg.size, check_crc=self._check_crc_at_end, stop=stop):
                    first = chunk.base_offset + int(chunk.starts[0]) if first is None else first
                    walked += len(chunk.starts)
                    size += _chunk_bytes(chunk)
                records += walked
                if walked:
                    stop_at = seg.base_offset + stop.position if stop.kind == "invalid" else seg.end_offset
                if stop.kind != "invalid":
                    break
                pos = stop.position + 1
        return AfterEnd(end, records, size, first), stop_at

    @cached_property
    def _indexed_end(self) -> int | None:
        """E (`_last_indexed`), read once."""
        return self._last_indexed() if self._last_indexed else None

    def _unwritten(self, seg: Segment, pos: int) -> bool:
        """Zeros where a record would start at `pos` and no index entry past it (E, the newest index file's
        endPhyOffset): space the broker never wrote, the end of what was written (damage.md §2)."""
        indexed = self._indexed_end
        return (indexed is None or indexed <= seg.base_offset + pos) and not np.any(self.read_at(seg, pos, 8))

    def _walk_start(self, seg: Segment) -> int:
        """Where the walk for the end starts in `seg`, the segment holding it (module docstring): the
        remembered end or E when further, else its first record (0, or `lead`)."""
        start = max(self._end_cache.resume_at(self, seg) if self._end_cache else 0, self.lead)
        indexed = self._indexed_end
        if indexed is None or not seg.contains(indexed) or indexed - seg.base_offset <= start:
            return start
        at = indexed - seg.base_offset
        return at if self.check_at(seg, at, check_crc=self._check_crc_at_end).kind == "record" else start

    @property
    def max_offset(self) -> int:
        return self.end.offset

    # ---- reading ------------------------------------------------------------------------------

    def segment_at(self, offset: int) -> Segment | None:
        return find_segment(self.segments, offset)

    def read(self, seg: Segment, pos: int, length: int) -> np.ndarray:
        """Bytes [pos, pos + length) of a segment, clipped to the file, for a scan (a local map's view)."""
        self._stats.segments_touched.add(seg.base_offset)
        return self._files.get(seg.path).read(pos, length)

    def read_at(self, seg: Segment, pos: int, length: int) -> np.ndarray:
        """`read` for a point read: just these bytes (`RandomAccessFile.read_at`)."""
        self._stats.segments_touched.add(seg.base_offset)
        return self._files.get(seg.path).read_at(pos, length)

    def read_ranges(self, seg: Segment, positions: Sequence[int], lengths: Sequence[int]) -> np.ndarray:
        """Bytes of several ranges of a segment (positions in the segment), concatenated."""
        self._stats.segments_touched.add(seg.base_offset)
        return self._files.get(seg.path).read_ranges(positions, lengths)

    def zero_copy(self, seg: Segment) -> bool:
        """The segment is memory-mapped: a large `read` costs nothing until its pages are touched."""
        return self._files.get(seg.path).zero_copy

    def _window_cap(self, seg: Segment) -> int:
        return LOCAL_WINDOW if self.zero_copy(seg) else REMOTE_WINDOW

    def check_at(self, seg: Segment, pos: int, *, check_crc: bool) -> RecordCheckResult:
        """The broker's record check at one position, reading just that record (two reads at most);
        in a DLedger log its entry header too."""
        lead = self.lead
        if pos < lead:
            return RecordCheckResult("invalid", 0, f"no DLedger entry header before position {pos}",
                                     np.empty(0, np.uint8))
        buf = self.read_at(seg, pos - lead, PROBE_BYTES)
        if self._blank_at(buf, lead):
            return RecordCheckResult("blank", seg.size - pos, None, buf[lead:])
        if len(buf) >= lead + 4:
            total = _INT.unpack_from(buf, lead)[0]
            if len(buf) < total + lead <= seg.size - pos + lead:
                buf = self.read_at(seg, pos - lead, total + lead)
        kind, size, reason = self._check_in(buf, lead, seg.base_offset + pos, check_crc)
        return RecordCheckResult(kind, size, reason, buf[lead:])

    def _blank_at(self, buf: np.ndarray, at: int) -> bool:
        """The record position `at` of `buf` holds the segment's end filler: a BLANK record, or in a
        DLedger log a DLedger blank in the entry header before it."""
        if self.lead:
            header = at - self.lead
            return (len(buf) - header >= 4 and header >= 0
                    and _INT.unpack_from(buf, header)[0] == DLEDGER_BLANK_MAGIC)
        return len(buf) - at >= 8 and _UINT.unpack_from(buf, at + OFF_MAGIC)[0] == BLANK_MAGIC

    def _check_in(self, buf: np.ndarray, at: int, offset: int,
                  check_crc: bool) -> tuple[StopKind | Literal["record"], int, str | None]:
        """`check_record` of the record at `buf[at]` (physical `offset`), and its entry header; positions
        in the reason count from the record's first byte, like the walk's (`columnar.walk_records`)."""
        lead = self.lead
        record = buf[at - lead:]
        checked = check_record(record, lead, check_crc=check_crc, expected_physical_offset=offset)
        if checked.kind == "record" and lead:
            problem = entry_problem(record, 0, offset - lead, checked.size)
            if problem is not None:
                return "invalid", checked.size, problem
        return checked.kind, checked.size, checked.reason

    def record_header(self, seg: Segment, pos: int) -> str:
        """TOTALSIZE to BORNTIMESTAMP of the record at `pos`, hex: tells a record from any other one
        (another store's, or a rewrite) in one small read."""
        return self.read_at(seg, pos, OFF_BORNHOST).tobytes().hex()

    def store_time_at(self, seg: Segment, pos: int) -> int:
        """STORETIMESTAMP of the record at pos (a record start found by a walk or resync)."""
        head = self.read_at(seg, pos, OFF_SYSFLAG + 4)
        offset = store_timestamp_offset(_INT.unpack_from(head, OFF_SYSFLAG)[0])
        return _LONG.unpack_from(self.read_at(seg, pos + offset, 8), 0)[0]

    def resync(self, seg: Segment, pos: int, hi: int) -> int | None:
        """Position of the first record start in [pos, hi) of a segment, None when there is none.

        The first read is `RESYNC_FIRST_WINDOW` bytes (a record start is usually near); a miss
        re-reads from `pos` with a 4x larger window up to `REMOTE_WINDOW` (positioned reads fill fresh
        buffers), then windows of that size slide on, overlapping by TAIL_SLACK so a record cut by one
        window is whole in the next.
        """
        cap = REMOTE_WINDOW
        window = RESYNC_FIRST_WINDOW
        while pos < hi:
            length = min(seg.size - pos, hi - pos + TAIL_SLACK, window)
            buf = self.read_at(seg, pos, length)
            found = next_record_start(buf, 0, seg.base_offset + pos, min(hi - pos, len(buf)))
            if found is not None:
                return pos + found
            if len(buf) == window < cap:
                window = min(window * 4, cap)
                continue
            if pos + len(buf) >= min(hi, seg.size) or len(buf) <= TAIL_SLACK:
                return None
            pos += len(buf) - TAIL_SLACK
        return None

    def walk(self, seg: Segment, pos: int, hi: int, *, check_crc: bool, stop: WalkStop,
             first_window: int | None = None) -> Iterator[Chunk]:
        """Valid records starting in [pos, hi) of a segment, `pos` being a record start.

        Ends at `hi`, a BLANK or the first invalid record; `stop` says which and where. The record
        where the walk stops at `hi` (the first start at or after it) is checked too: a range that
        starts inside the record before it resyncs past an invalid one silently, so damage starting
        exactly there is reported by the walk whose last record ends at it. With `first_window`, for
        walks that usually end soon, windows are point reads (`read_at`) growing from that size (x4
        each) to `REMOTE_WINDOW`; else scan windows of the usual size.
        """
        read = self.read if first_window is None else self.read_at
        cap = self._window_cap(seg) if first_window is None else REMOTE_WINDOW
        window = cap if first_window is None else min(first_window, cap)
        need = 0
        lead = self.lead
        while pos < hi:
            length = min(seg.size - pos, max(min(hi - pos + TAIL_SLACK, window), need))
            window = min(window * 4, cap)
            first = pos - lead  # buf[0]: the entry header before the record at pos (module docstring)
            buf = read(seg, first, length + lead)
            walked = walk_records(buf, seg.base_offset + first, lead, min(hi - first, len(buf)),
                                  check_crc=check_crc, lead=lead)
            self._stats.records_walked += len(walked.starts)
            if len(walked.starts):
                yield Chunk(seg, first, buf, np.asarray(walked.starts, dtype=np.int64))
            at = int(walked.stop_pos)
            need = 0
            if walked.stop_kind == "end":
                pos = first + at
                if pos >= hi:
                    self._reached(seg, buf, at, pos, check_crc, stop)
                    return
                continue
            if walked.stop_kind == "invalid" and first + len(buf) < seg.size:
                cut = _cut_by_window(buf, at, seg.size - first)
                if cut == "blank":
                    stop.kind, stop.position, stop.reason = "blank", first + at, None
                    return
                if cut:
                    pos, need = first + at, cut
                    continue
            stop.kind, stop.position, stop.reason = walked.stop_kind, first + at, walked.reason
            return
        stop.kind, stop.position, stop.reason = "end", pos, None

    def chunks(self, start: int, end: int, *, check_crc: bool, mode: ReadMode) -> Iterator[Chunk]:
        """Valid records whose start is in [start, end) ∩ [min_offset, max_offset), in log order.

        `start` may be any byte: the first record start at or after it is found by resync (a range
        [a, b) owns exactly the records starting in it). An invalid record before the valid end
        raises StoreCorruptionError (FAILFAST) or is stepped over (PERMISSIVE, `_skip_damage`).
        Damage starting at the first record start at or after `end` is reported too (`walk`).
        """
        lo_limit, hi_limit = max(start, self.min_offset), min(end, self.max_offset)
        for seg in self.segments:
            lo, hi = max(lo_limit, seg.base_offset), min(hi_limit, seg.end_offset)
            if lo >= hi:
                continue
            pos = max(lo - seg.base_offset, self.lead)  # a segment's first record follows its entry header
            if pos > self.lead:
                found = self.resync(seg, pos, hi - seg.base_offset)
                if found is None:
                    continue
                pos = found
            while pos < hi - seg.base_offset:
                stop = WalkStop()
                yield from self.walk(seg, pos, hi - seg.base_offset, check_crc=check_crc, stop=stop)
                if stop.kind != "invalid":
                    break
                pos = self._skip_damage(seg, stop, mode)

    def _valid_end_in(self, seg: Segment) -> int:
        """Position in `seg` where its part of the valid log ends."""
        return min(seg.size, self.max_offset - seg.base_offset)

    def _reached(self, seg: Segment, buf: np.ndarray, at: int, pos: int, check_crc: bool,
                 stop: WalkStop) -> None:
        """Set `stop` for a walk that reached its range end at the record start `pos` (`buf[at]`):
        "end", or "invalid" when that record (inside the valid log) fails the check. Checked from
        `buf` when it holds the whole record (the window reads TAIL_SLACK past the range end)."""
        stop.kind, stop.position, stop.reason = "end", pos, None
        if pos >= seg.size or pos >= self._valid_end_in(seg) or self._blank_at(buf, at):
            return
        left = len(buf) - at
        if left >= 4 and _INT.unpack_from(buf, at)[0] <= left:
            kind, _, reason = self._check_in(buf, at, seg.base_offset + pos, check_crc)
        else:
            verdict = self.check_at(seg, pos, check_crc=check_crc)
            kind, reason = verdict.kind, verdict.reason
        if kind == "invalid":
            stop.kind, stop.reason = "invalid", reason

    def _skip_damage(self, seg: Segment, stop: WalkStop, mode: ReadMode) -> int:
        """Where reading resumes after the invalid record at `stop`: the next record start (or the
        segment-ending BLANK) up to the segment's valid end, else that end.

        FAILFAST raises StoreCorruptionError. PERMISSIVE counts the place and the bytes up to the
        resume point, also when that point lies past the range being read (the next range resyncs
        there again without counting), so a log read range by range counts every byte once.
        """
        offset = seg.base_offset + stop.position
        if mode == FAILFAST:
            raise StoreCorruptionError(seg.path, offset, f"invalid record: {stop.reason}")
        limit = self._valid_end_in(seg)
        found = self.resync(seg, stop.position + 1, limit)
        resume = limit if found is None else found
        self._stats.skip(seg.path, offset, resume - stop.position, f"invalid record ({stop.reason})")
        return resume


@dataclass(frozen=True)
class AfterEnd:
    """Valid records lying in the log files past the valid end `end` (`CommitLog.after_end`)."""

    end: int
    records: int
    bytes: int
    first: int | None
    """Physical offset of the first of them."""

    def describe(self) -> str:
        return (f"{self.records} records, {self.bytes} bytes after the recovered end {self.end} (the first "
                f"at {self.first}), which a restarted broker would overwrite")


def _chunk_bytes(chunk: Chunk) -> int:
    """Bytes of the valid records of `chunk` (the last one's TOTALSIZE included)."""
    last = int(chunk.starts[-1])
    return last - int(chunk.starts[0]) + _INT.unpack_from(chunk.buf, last)[0]


@dataclass(frozen=True)
class RecordCheckResult:
    """`check_record`'s verdict at one position plus the bytes read (the record starts at buf[0])."""

    kind: StopKind | Literal["record"]
    size: int
    reason: str | None
    buf: np.ndarray


def _cut_by_window(buf: np.ndarray, at: int, left_in_segment: int) -> int | Literal["blank", False]:
    """Whether the walk stopped at `at` only because the window ended inside the record.

    Returns "blank" for a BLANK whose size runs past the window, the number of bytes to re-read
    from `at` for a cut record, or False for a truly invalid record.
    """
    left_in_buf = len(buf) - at
    if left_in_buf < 8:
        return min(PROBE_BYTES, left_in_segment) if left_in_segment > left_in_buf else False
    if _UINT.unpack_from(buf, at + OFF_MAGIC)[0] == BLANK_MAGIC:
        return "blank"
    total = _INT.unpack_from(buf, at)[0]
    return total if left_in_buf < total <= left_in_segment else False
