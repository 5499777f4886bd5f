"""The torn-record rule: how far a reader may walk the commit log while a broker writes it (design §4.3).

A broker writes a record with one put into a mapped file, but a
reader of the file can see any prefix of that put. A record at position p counts as complete only
when (1) all of it validates as recovery would (§2.12: magic, TOTALSIZE equal to the recomputed
length, BODYCRC, PHYSICALOFFSET == p, and room for a BLANK after it, §2.6), and (2) it is sealed:
the writer has provably finished it, because
  a. the segment is sealed: a later segment has started (the broker wrote this segment's BLANK
     before the first record of the next one), or
  b. the 8 bytes after it are the start of the next write (a BLANK, or TOTALSIZE > 0 with a record
     magic): the broker starts the next put only after the previous one finished, or
  c. its consume-queue unit exists (the dispatcher builds units only from complete records, §4.1), or
  d. no broker is writing: the store has no `abort` file (§6.2).
A record that validates but is not sealed waits for the next walk (the next trigger of a stream).
A record that fails (1) is still being written only when nothing valid follows it (damage.md §2): no
complete record where its TOTALSIZE leads, no consume-queue unit and no index entry past it. Then the
walk holds at it and reports where (`Advance.held`); otherwise it is damage (damage.md §1): FAILFAST
raises naming file, offset and cause, PERMISSIVE steps over it and the read skips and counts it. A
stream reading by queue reads only records that have a consume-queue unit, so (c) holds for all of them.

Entry framing (`lead`, §2.13): in a DLedger log every record is the body of an entry whose 48-byte header
comes right before it, and the writes the rule speaks of are entries. Positions stay record positions
(commitLogOffset, what batch reads, msgIds and consume queues hold): a boundary of the walk is the position
of the record an entry starting there would hold, `lead` bytes after the entry (a segment's first is its
start + 48, the end of a full segment the next segment's first). A record validates only with its entry
header (magic, size, body size, pos), the next write (b) is an entry (magic 1, size > 0) or a DLedger blank
(magic -1), and an entry fits only with room for that blank after it (`MmapFileList.preAppend`).

`CommitLogTail` is the only walker of the live end of the log: the streaming sources call it (the
JVM port is connector/.../store/Tail.scala). The valid end after a crash (recovery, §2.12) is a
different rule: `rmqstore.store.commitlog`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from rmqstore.format.contract_layout import DLEDGER_BLANK_MAGIC, DLEDGER_ENTRY_MAGIC
from rmqstore.format.dledger import entry_problem
from rmqstore.format.layout import (
    BLANK_MAGIC,
    END_FILE_MIN_BLANK_LENGTH,
    MAGIC_V1,
    MAGIC_V2,
    MIN_RECORD_SIZE,
    QUEUED_TRANSACTION_TYPES,
    SYSFLAG_TRANSACTION_MASK,
)
from rmqstore.format.record import check_record, decode_record
from rmqstore.format.resync import next_record_start
from rmqstore.io.base import RandomAccessFile, StoreFileSystem
from rmqstore.store.commitlog import CommitLog
from rmqstore.store.config import StoreConfig
from rmqstore.store.errors import StoreCorruptionError
from rmqstore.store.index import IndexFiles
from rmqstore.store.lost_units import dispatch_frontier
from rmqstore.store.names import segment_file_name
from rmqstore.store.queues import Queues
from rmqstore.store.segments import OpenFiles, Segment

_HEADER = struct.Struct(">iI")
"""TOTALSIZE, MAGICCODE: the first 8 bytes of every record and BLANK (§2.2, §2.6)."""


@dataclass(frozen=True)
class Limits:
    """Admission limits of one trigger: at most `records` messages and `bytes` record bytes.

    A batch always admits at least one record, so a record bigger than `bytes` cannot stall a query.
    """

    records: int | None = None
    bytes: int | None = None

    def admits(self, records: int, nbytes: int, next_size: int) -> bool:
        if records == 0:
            return True
        if self.records is not None and records + 1 > self.records:
            return False
        return self.bytes is None or nbytes + next_size <= self.bytes


NO_LIMITS = Limits()


@dataclass
class Advance:
    """Result of a walk: the end position and the records / record bytes between start and end;
    `held`: the position of a record still being written that the walk stopped at (damage.md §2)."""

    end: int
    records: int = 0
    bytes: int = 0
    held: int | None = None


@dataclass
class LogWalkCache:
    """What a driver remembers between triggers about one store's commit log.

    `sealed_until`: every record before this position was checked and sealed (it only moves forward),
    except at `damaged`: where a PERMISSIVE walk stepped over damage (damage.md §1). A walk checks
    those again: a hop by the TOTALSIZE there would land inside the damage, not on the next record.
    `segment_counts`: records in sealed segments walked from start to BLANK (for the lag figure).
    """

    sealed_until: int = 0
    damaged: set[int] = field(default_factory=set)
    segment_counts: dict[int, int] = field(default_factory=dict)


class OpenedStore(Protocol):
    """What a tail is made of: a freshly opened store's listing, file system and services."""

    @property
    def fs(self) -> StoreFileSystem: ...
    @property
    def log(self) -> CommitLog: ...
    @property
    def queues(self) -> Queues: ...
    @property
    def index(self) -> IndexFiles: ...
    @property
    def config(self) -> StoreConfig: ...


class SealConfirmer:
    """Rule (c) and (d) of the module docstring: the consume queue or a closed store vouch for a record."""

    def __init__(self, queues: Queues, index: IndexFiles, config: StoreConfig) -> None:
        self._queues = queues
        self._index = index
        self._config = config

    def store_closed(self) -> bool:
        return not self._config.abort_present

    def unit_confirms(self, data: Any, pos: int, physical_offset: int, size: int) -> bool:
        """True when the record's consume-queue unit exists and points at exactly this record."""
        try:
            record = decode_record(data, pos, decompress=False)
            if record.sys_flag & SYSFLAG_TRANSACTION_MASK not in QUEUED_TRANSACTION_TYPES:
                return False  # prepared / rollback records never get a unit (§4.1)
            queue = self._queues.consume_queue(record.topic, record.queue_id)
        except (OSError, ValueError):
            return False
        if record.queue_offset >= queue.max_offset or record.queue_offset < queue.min_offset:
            return False
        unit = queue.units(record.queue_offset, record.queue_offset + 1)
        return len(unit) == 1 and int(unit["phy"][0]) == physical_offset and int(unit["size"][0]) == size

    def known_past(self, position: int) -> int | None:
        """The furthest record start after `position` that the store's consume queues (a queue's last
        valid unit) or index (the newest file's endPhyOffset) name, or None: evidence that a failing
        record at `position` is damage, not a record still being written (damage.md §2)."""
        known = dispatch_frontier(self._index, self._queues)
        return known if known is not None and known > position else None


class SegmentBytes:
    """The bytes of one segment for a walk: a local map whole; a remote file in windows read from the
    position asked for, growing from `FIRST_WINDOW` (x2 each, up to `MAX_WINDOW`), so a walk over the
    records written since the last trigger downloads those and little more, not the segment."""

    FIRST_WINDOW = 64 << 10
    MAX_WINDOW = 8 << 20

    def __init__(self, handle: RandomAccessFile) -> None:
        self._handle = handle
        self.size = handle.size
        self._start = 0
        self._buf = handle.read(0, handle.size) if handle.zero_copy else np.zeros(0, dtype=np.uint8)
        self._window = self.FIRST_WINDOW

    def at(self, rel: int, length: int) -> tuple[np.ndarray, int]:
        """A buffer holding segment bytes [rel, rel + length) (clipped to the file) and where rel is in it."""
        end = min(rel + length, self.size)
        if not (self._start <= rel and end <= self._start + len(self._buf)):
            self._buf = self._handle.read(rel, max(end - rel, self._window))
            self._start, self._window = rel, min(self._window * 2, self.MAX_WINDOW)
        return self._buf, rel - self._start


class CommitLogTail:
    """The commit log of one store as a stream sees it: record boundaries and the sealed end.

    `segments` come from one `Store.open` (a fresh listing per trigger); bytes are read through `open_file`.
    Sealed segments are only hopped over (TOTALSIZE by TOTALSIZE); records of the active segment
    beyond `cache.sealed_until` get the full check and the seal test.
    """

    def __init__(self, segments: list[Segment], open_file: Callable[[str], RandomAccessFile],
                 confirmer: SealConfirmer, cache: LogWalkCache, *, permissive: bool = False,
                 lead: int = 0) -> None:
        self.segments = segments
        self.lead = lead
        """Bytes of entry framing before each record: 0, or 48 in a DLedger log (module docstring)."""
        self._open = open_file
        self._confirmer = confirmer
        self._cache = cache
        self._permissive = permissive
        self._started = [self._segment_started(seg) for seg in segments]
        self.skipped: list[str] = []

    @classmethod
    def of(cls, store: OpenedStore, cache: LogWalkCache, *, permissive: bool = False) -> CommitLogTail:
        """The tail of a freshly opened `store` (its segment listing), its own file handles, the
        store's consume queues and `abort` file as the confirmer (rules c and d), its entry framing."""
        confirmer = SealConfirmer(store.queues, store.index, store.config)
        return cls(list(store.log.segments), OpenFiles(store.fs).get, confirmer, cache,
                   permissive=permissive, lead=store.log.lead)

    @property
    def min_offset(self) -> int:
        return self._first(self.segments[0]) if self.segments else 0

    def _first(self, seg: Segment) -> int:
        """The boundary at the segment's start: its first record's position."""
        return seg.base_offset + self.lead

    def _last(self, seg: Segment) -> int:
        """The boundary at the segment's end: the next segment's first record's position."""
        return seg.base_offset + seg.size + self.lead

    def _bytes(self, seg: Segment) -> SegmentBytes:
        return SegmentBytes(self._open(seg.path))

    def _segment_started(self, seg: Segment) -> bool:
        head = self._open(seg.path).read_at(0, 8)
        return len(head) == 8 and _write_started(head, 0, seg.size, self.lead)

    def _is_sealed_segment(self, index: int) -> bool:
        return any(self._started[index + 1:])

    def _segment_index(self, position: int) -> int | None:
        for index, seg in enumerate(self.segments):
            if self._first(seg) <= position < self._last(seg):
                return index
        return None

    def canonical(self, position: int) -> int:
        """The position itself, or the next segment's start when `position` holds a BLANK."""
        index = self._segment_index(position)
        if index is None:
            return position
        seg = self.segments[index]
        rel = position - seg.base_offset - self.lead
        data = self._open(seg.path).read_at(rel, 8)
        return self._last(seg) if _frame(data, 0, seg.size - rel, self.lead)[0] == "blank" else position

    def is_record_start(self, position: int) -> bool:
        """True for a segment start, the log end, or the position of a valid record."""
        index = self._segment_index(position)
        if index is None or position == self._first(self.segments[index]):
            return True
        seg = self.segments[index]
        data = self._bytes(seg)
        rel = position - seg.base_offset
        buf, at = data.at(rel, _HEADER.size)
        total = _HEADER.unpack_from(buf, at)[0] if len(buf) - at >= _HEADER.size else 0
        buf, at = data.at(rel - self.lead, self.lead + max(total, _HEADER.size))
        if self.lead:  # a DLedger blank's position counts, as a BLANK's does (`canonical` moves on)
            left = seg.size - rel + self.lead
            blank = len(buf) - at >= _HEADER.size and _frame(buf, at, left, self.lead)[0] == "blank"
            return blank or self._problem(buf, at + self.lead, position, check_crc=False) is None
        return check_record(buf, at, check_crc=False, expected_physical_offset=position).kind != "invalid"

    def walk(self, start: int, limits: Limits = NO_LIMITS, stop: int | None = None) -> Advance:
        """From record boundary `start`, admit sealed records within `limits`, never past `stop`."""
        advance = Advance(end=start)
        index = self._segment_index(start)
        while index is not None:
            seg = self.segments[index]
            sealed = self._is_sealed_segment(index)
            fast = (sealed and limits == NO_LIMITS and advance.end == self._first(seg)
                    and (stop is None or stop >= self._last(seg)))
            known = self._cache.sealed_until
            if fast:
                advance.end = self._last(seg)
                done = False
            elif (limits == NO_LIMITS and advance.end < known < self._last(seg)
                    and (stop is None or stop >= known)):
                advance.end = known  # checked and sealed by an earlier walk: only what is new is read
                done = self._walk_segment(seg, sealed, advance, limits, stop)
            else:
                done = self._walk_segment(seg, sealed, advance, limits, stop)
            if done or index + 1 >= len(self.segments) or not self._started[index + 1]:
                return advance
            if advance.end != self._last(seg):
                return advance
            index += 1
        return advance

    def _walk_segment(self, seg: Segment, sealed: bool, advance: Advance, limits: Limits,
                      stop: int | None) -> bool:
        """Walk one segment from `advance.end`; True when the walk must stop inside it."""
        data = self._bytes(seg)
        base, size, lead = seg.base_offset, seg.size, self.lead
        rel = advance.end - base  # the record's position in the segment; its entry starts `lead` before
        from_start = rel == lead
        counted = 0
        while True:
            if stop is not None and base + rel >= stop:
                advance.end = base + rel
                return True
            if rel - lead + 8 > size:
                return self._invalid(seg, rel, sealed, advance,
                                     f"{size - rel + lead} bytes left, no room for a header")
            buf, at = data.at(rel - lead, _HEADER.size)
            kind, total, cause = _frame(buf, at, size - rel + lead, lead)
            if kind == "blank":
                advance.end = self._last(seg)
                if from_start and sealed:
                    self._cache.segment_counts[base] = counted
                return False
            position = base + rel
            if kind != "record":
                if sealed:
                    return self._invalid(seg, rel, sealed, advance, cause)
                if kind == "empty":
                    advance.end = position  # nothing written here yet
                    return True
                rel = self._failing(seg, data, rel, None, advance, cause)
                if rel is None:
                    return True
                continue
            if not sealed and (position >= self._cache.sealed_until or position in self._cache.damaged):
                buf, at = data.at(rel - lead, lead + total + _HEADER.size)
                problem = self._problem(buf, at + lead, position)
                if problem is not None:
                    rel = self._failing(seg, data, rel, total, advance, problem)
                    if rel is None:
                        return True
                    continue
                if not self._record_sealed(buf, at + lead, position, total, at + size - rel + lead):
                    advance.end = advance.held = position
                    return True
                self._cache.sealed_until = position + total + lead
            if not limits.admits(advance.records, advance.bytes, total):
                advance.end = position
                return True
            advance.records += 1
            advance.bytes += total
            counted += 1
            rel += total + lead
            advance.end = base + rel

    def _problem(self, buf: Any, at: int, position: int, *, check_crc: bool = True) -> str | None:
        """Why the record at `buf[at]` (physical `position`) does not validate as recovery would, its entry
        header included in a DLedger log (which frames its size); None when it does."""
        check = check_record(buf, at, check_crc=check_crc, expected_physical_offset=position)
        if check.kind != "record":
            return check.reason or "not a record"
        return entry_problem(buf, at - self.lead, position - at, check.size) if self.lead else None

    def _record_sealed(self, data: Any, rel: int, position: int, total: int, segment_end: int) -> bool:
        """The valid record at `data[rel]` (physical `position`) is sealed; the segment's end is at
        `data[segment_end]`."""
        after = rel + total
        if _write_started(data, after, segment_end, self.lead):
            return True
        return self._confirmer.unit_confirms(data, rel, position, total) or self._confirmer.store_closed()

    def _failing(self, seg: Segment, data: SegmentBytes, rel: int, total: int | None, advance: Advance,
                 cause: str) -> int | None:
        """A record of the active segment that fails its checks (damage.md §2): None when it is still
        being written (the walk holds at it); else damage: FAILFAST raises, PERMISSIVE returns where the
        walk goes on (the read skips and counts the bytes before it, damage.md §1)."""
        position = seg.base_offset + rel
        # whole when read again (before or after looking for what follows): the broker was writing it
        after = None if self._whole_now(seg, rel) else self._valid_after(seg, data, rel, total)
        if after is None or self._whole_now(seg, rel):
            advance.end = advance.held = position
            return None
        evidence = (f"a valid record follows at physical offset {after[0]}" if after[1] is None
                    else f"the store's consume queues or index name a record at physical offset {after[1]}")
        if not self._permissive:
            raise StoreCorruptionError(seg.path, position, (
                f"corrupt commit log: {cause}. This is not a record still being written: {evidence} "
                "(docs/damage.md §2). Use mode=PERMISSIVE to step over the damaged bytes."))
        self.skipped.append(f"{seg.path} at physical offset {position}: {cause}; {evidence}; the read steps "
                            "over the damaged bytes")
        self._cache.damaged.add(position)
        advance.end = after[0]
        return after[0] - seg.base_offset

    def _whole_now(self, seg: Segment, rel: int) -> bool:
        """The record at `rel` validates when read again now: the broker finished it after the walk first
        read it, and what follows it was written since (a live broker, not damage)."""
        handle = self._open(seg.path)
        head = handle.read_at(rel, _HEADER.size)
        total = _HEADER.unpack_from(head, 0)[0] if len(head) == _HEADER.size else 0
        if total < MIN_RECORD_SIZE or rel + total > seg.size or rel < self.lead:
            return False
        buf = handle.read_at(rel - self.lead, self.lead + total)
        return self._problem(buf, self.lead, seg.base_offset + rel) is None

    def _valid_after(self, seg: Segment, data: SegmentBytes, rel: int,
                     total: int | None) -> tuple[int, int | None] | None:
        """(where the walk goes on, the position the store names or None) when something valid follows
        the failing record at `rel`: a complete record (or the segment's end filler) where its size leads,
        else the first record start before the furthest one the consume queues or index name (damage.md
        §2); None otherwise."""
        base, size, lead = seg.base_offset, seg.size, self.lead
        nxt = rel + (total or 0) + lead
        if total is not None and total > 0 and nxt - lead + _HEADER.size <= size:
            buf, at = data.at(nxt - lead, _HEADER.size)
            kind, following, _cause = _frame(buf, at, size - nxt + lead, lead)
            if kind == "blank":
                return base + nxt, None
            if kind == "record":
                buf, at = data.at(nxt - lead, lead + following)
                if self._problem(buf, at + lead, base + nxt) is None:
                    return base + nxt, None
        known = self._confirmer.known_past(base + rel)
        if known is None:
            return None
        stop = min(known, base + size) - base
        buf, at = data.at(rel, stop - rel + _HEADER.size)
        found = next_record_start(buf, at + 1, base + rel - at, at + stop - rel + 1)
        return (base + rel - at + found if found is not None else base + stop), known

    def _invalid(self, seg: Segment, rel: int, sealed: bool, advance: Advance, cause: str) -> bool:
        """Bad bytes inside a sealed segment: an error (FAILFAST), or (PERMISSIVE) this walk moves on to
        the next segment while the read of that range steps over the damaged bytes (`Store.scan`)."""
        where = (f"{seg.path} ({segment_file_name(seg.base_offset)}) "
                 f"at physical offset {seg.base_offset + rel}")
        if not sealed:
            advance.end = seg.base_offset + rel
            return True
        if not self._permissive:
            raise ValueError(f"rmqstore: corrupt commit log: {where}: {cause}. A later segment exists, "
                             "so this is not a torn tail. Use mode=PERMISSIVE to step over the "
                             "damaged bytes.")
        self.skipped.append(f"{where}: {cause}; the read steps over the damaged bytes")
        advance.end = self._last(seg)
        return False

    def count_records(self, start: int, end: int) -> int:
        """Records in [start, end) (both record boundaries), using cached counts of whole sealed segments."""
        records = 0
        position = start
        while position < end:
            index = self._segment_index(position)
            if index is None:
                break
            seg = self.segments[index]
            seg_end = self._last(seg)
            cached = self._cache.segment_counts.get(seg.base_offset)
            if cached is not None and position == self._first(seg) and end >= seg_end:
                records += cached
            else:
                advance = Advance(end=position)
                self._walk_segment(seg, self._is_sealed_segment(index), advance, NO_LIMITS, end)
                records += advance.records
                if advance.end < seg_end:
                    break
            position = seg_end
        return records


def _frame(data: Any, at: int, left: int, lead: int) -> tuple[str, int, str]:
    """What the write boundary at `data[at]` (`left` bytes before the segment's end) holds: ("blank", 0, ""),
    ("empty", 0, "") when nothing is written, ("record", its TOTALSIZE, "") when the header announces a
    record that fits (§2.2, §2.6; in a DLedger log an entry with room for a blank after it, §2.13), else
    ("bad", 0, cause)."""
    first, second = _HEADER.unpack_from(data, at)
    if first == 0 and second == 0:
        return "empty", 0, ""
    if lead:
        if first == DLEDGER_BLANK_MAGIC:
            return "blank", 0, ""
        total, fits = second - lead, second + END_FILE_MIN_BLANK_LENGTH <= left
        if first == DLEDGER_ENTRY_MAGIC and total >= MIN_RECORD_SIZE and fits:
            return "record", total, ""
        return "bad", 0, f"DLedger entry magic {first}, size {second}: not an entry or blank"
    if second == BLANK_MAGIC and first == left:
        return "blank", 0, ""
    fits = first + END_FILE_MIN_BLANK_LENGTH <= left
    if second in (MAGIC_V1, MAGIC_V2) and first >= MIN_RECORD_SIZE and fits:
        return "record", first, ""
    return "bad", 0, f"TOTALSIZE {first}, magic {second:#010x}: not a record or BLANK"


def _write_started(data: Any, pos: int, size: int, lead: int) -> bool:
    """True when the 8 bytes at pos are the beginning of a write: a BLANK or a record header (§2.2, §2.6);
    in a DLedger log a DLedger blank or an entry header (§2.13)."""
    if pos + 8 > min(size, len(data)):
        return False
    first, second = _HEADER.unpack_from(data, pos)
    if lead:
        return first == DLEDGER_BLANK_MAGIC or (first == DLEDGER_ENTRY_MAGIC and second > 0)
    if second == BLANK_MAGIC:
        return first == size - pos
    return second in (MAGIC_V1, MAGIC_V2) and first > 0
