"""Where store times lie in the commit log: exact seeks by storeTimestamp (design §3.5).

Each segment is summarized as runs of records whose store times never decrease (a broker clock that
steps back starts a new run; more than `MAX_RUNS` runs make one unordered run); a seek bisects inside the
first run that reaches the time, a window takes a stretch of each run reaching into it. Summaries are
cached outside the store (`rmqstore.store.segment_cache`, kind `timeline`; design §8): a sealed segment
is walked once, the segment holding the valid end only from where its summary ends. On a remote store a
window plan (`window_runs`) takes a segment with no summary whole, and the tasks scanning it summarize
what they read as pieces (`summarizing`), which the next plan joins (design §3.5).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import astuple, dataclass, field
from functools import cached_property
from typing import NamedTuple, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqstore.format.layout import (
    OFF_BODYCRC,
    OFF_BORNHOST,
    OFF_BORNTIMESTAMP,
    OFF_PHYSICALOFFSET,
    OFF_TOTALSIZE,
)
from rmqstore.store.cache_identity import CacheIdentity
from rmqstore.store.commitlog import PROBE_BYTES, CommitLog
from rmqstore.store.contract_store import TIMELINE_CACHE_KIND, TIMELINE_CACHE_VERSION
from rmqstore.store.errors import PERMISSIVE
from rmqstore.store.records import RecordReader
from rmqstore.store.segment_cache import SegmentCache, cache_dir
from rmqstore.store.segments import Segment

MAX_RUNS = 256
"""A segment with more runs than this is summarized as one unordered run."""
SEEK_FIRST_WINDOW = 2 * PROBE_BYTES
"""A seek walks forward through ranges of this size, doubling each time (after a bisection, the
record it looks for starts within PROBE_BYTES)."""
RUN_COLUMNS = ["commitLogOffset", "storeSize", "storeTimestamp"]
"""What runs are made of: where each record is and its time."""
SUMMARY_COLUMNS = (*RUN_COLUMNS, "bodyCrc", "bornTimestamp")
"""What a task decodes to summarize its records: the runs, and the last record's identity (`_identity`)."""
UNKNOWN_FIRST_MS, UNKNOWN_LAST_MS = -(2**63), 2**63 - 1
"""The times of a run whose times are not known yet (a remote segment not summarized yet)."""
_I32, _I64 = struct.Struct(">i"), struct.Struct(">q")


class TimedLog(Protocol):
    """What the functions below read: the log, its records and the identity its cache files are kept by."""

    @property
    def log(self) -> CommitLog: ...
    @property
    def records(self) -> RecordReader: ...
    @property
    def cache_identity(self) -> CacheIdentity: ...
    @property
    def summarized(self) -> list[tuple[int, int]]: ...


@dataclass(frozen=True)
class TimeRun:
    """Records [start, end) of the log (physical offsets) with store times in [first_ms, last_ms],
    non-decreasing in log order when `ordered`."""

    start: int
    end: int
    first_ms: int
    last_ms: int
    ordered: bool


@dataclass(frozen=True)
class _Summary:
    """The runs of one segment (or of a piece of it), and the identity of its last record (`_identity`):
    what tells a grown segment from a rewritten one, or another store's."""

    runs: tuple[TimeRun, ...]
    last: tuple[int, ...] | None

    def to_entry(self) -> list:
        return [None if self.last is None else list(self.last), *(astuple(run) for run in self.runs)]

    @classmethod
    def from_entry(cls, entry: list) -> _Summary:
        return cls(tuple(TimeRun(*run) for run in entry[1:]), None if entry[0] is None else tuple(entry[0]))


@dataclass
class _Runs:
    """Runs built from records in log order (batches of `RUN_COLUMNS`) or from the runs of
    consecutive pieces: a run goes on while store times do not decrease."""

    runs: list[TimeRun] = field(default_factory=list)
    last: tuple[int, ...] | None = None

    def add_batch(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        offset = batch.column("commitLogOffset").to_numpy()
        end = offset + batch.column("storeSize").to_numpy()
        t = _millis(batch)
        breaks = np.flatnonzero(t[1:] < t[:-1]) + 1
        firsts, lasts = np.concatenate(([0], breaks)), np.concatenate((breaks, [len(t)])) - 1
        for a, b in zip(firsts.tolist(), lasts.tolist(), strict=True):
            self.add(TimeRun(int(offset[a]), int(end[b]), int(t[a]), int(t[b]), True))

    def add(self, run: TimeRun) -> None:
        """Append `run`, the next records after the last run's."""
        last = self.runs[-1] if self.runs else None
        if last and last.ordered and run.ordered and run.first_ms >= last.last_ms:  # the run goes on
            self.runs[-1] = TimeRun(last.start, run.end, last.first_ms, run.last_ms, True)
        else:
            self.runs.append(run)

    def summary(self) -> _Summary:
        runs = self.runs
        if len(runs) > MAX_RUNS or not all(run.ordered for run in runs):
            runs = [TimeRun(runs[0].start, runs[-1].end, min(run.first_ms for run in runs),
                            max(run.last_ms for run in runs), False)]
        return _Summary(tuple(runs), self.last)


class Timeline:
    """Seeks and windows by store time over `log` (module docstring), its summaries cached outside the
    store under `cache_identity` and kept per instance."""

    def __init__(self, log: CommitLog, records: RecordReader, cache_identity: CacheIdentity) -> None:
        self.log = log
        self.records = records
        self.cache_identity = cache_identity
        self.summarized: list[tuple[int, int]] = []
        """The parts of the log walked to summarize their store times (not cached yet)."""

    @property
    def note(self) -> str | None:
        """What summarizing read, when some summaries were not cached (None: none walked): a one-time
        cost per segment the plan reports (design §3.5)."""
        if not self.summarized:
            return None
        return (f"summarized the store times of {len(self.summarized)} commit-log segment(s), "
                f"{sum(z - a for a, z in self.summarized)} bytes, walked once: cached in "
                f"{cache_dir(TIMELINE_CACHE_KIND)}")

    @cached_property
    def _time_runs(self) -> list[TimeRun]:
        return time_runs(self)

    def seek_time(self, ts_ms: int) -> int:
        """Physical offset of the first record (log order) with storeTimestamp >= ts_ms, else max_offset.

        Exact also when the broker's clock stepped back, by any amount: the log's store times are
        summarized per segment (module docstring: one walk of the storeTimestamp column per segment,
        cached on disk outside the store and kept per store), then bisected.
        """
        return first_at_or_after(self, self._time_runs, ts_ms)

    @cached_property
    def _window_runs(self) -> WindowRuns:
        return window_runs(self)

    def time_ranges(self, begin_ms: int | None, end_ms: int | None) -> list[tuple[int, int]]:
        """Commit-log byte ranges, in log order, holding every record with begin_ms <= storeTimestamp
        <= end_ms (inclusive; None: unbounded), and few others (clock steps included; see `seek_time`).

        On a remote store, the segments whose store times are not summarized yet are taken whole
        (`unsummarized_spans`) instead of downloaded to be summarized: the scan of them summarizes them
        (`summarizing`).
        """
        return time_ranges(self, self._window_runs.runs, begin_ms, end_ms)

    def unsummarized_spans(self) -> list[tuple[int, int]]:
        """The parts of the log [start, end), one per segment, that `time_ranges` takes whole because
        their store times are not summarized yet (remote stores only)."""
        return list(self._window_runs.unknown)

    def walked_spans(self) -> list[tuple[int, int]]:
        """The parts of the log, one per segment, whose store times `time_ranges` walked because the
        tasks of an earlier plan were asked to summarize them and no summary came back (remote stores)."""
        return list(self._window_runs.walked)

    def ask_summaries(self, spans: Sequence[tuple[int, int]]) -> None:
        """Note that a plan's tasks summarize these `unsummarized_spans`: a later plan that finds no
        summary of them walks them (`window_runs`)."""
        ask_summaries(self, spans)


def time_runs(store: TimedLog) -> list[TimeRun]:
    """The runs of every segment holding records, in log order (from the cache where still valid,
    else walked)."""
    live, summaries, _ = _summaries(store, walk=True)
    return [run for s in live for run in summaries[s.base_offset].runs]


class WindowRuns(NamedTuple):
    """What a window plan knows of the store times (`window_runs`)."""

    runs: list[TimeRun]
    unknown: list[tuple[int, int]]
    """The spans [start, end) of the segments whose times are not known yet."""
    walked: list[tuple[int, int]]
    """The spans of the segments walked because their tasks were asked and no summary came back."""


def window_runs(store: TimedLog) -> WindowRuns:
    """The runs a window plan uses, the spans [start, end) of the segments among them whose times are
    not known yet, and those walked by the rule below (`WindowRuns`): on a remote store whose listing
    gives modification times, a segment with no cached summary (or pieces covering it) is one
    unordered run of unknown times over its part of the log, which every window takes whole; the tasks
    scanning it summarize it (`summarizing`). Else `time_runs`.

    The rule when tasks were asked and no summary came back (`ask_summaries` noted it, for the segment
    as it is now: same size, modification time and records' end): the plan walks that segment itself
    and caches its summary. Tasks cache pieces where they run; executors that do not share the
    driver's cache directory never hand them to the planner, so a remote segment costs at most one
    scan by the tasks and one walk by the driver, then small windows (where they share it, the walk is
    never needed: one scan)."""
    live, summaries, walked = _summaries(store, walk=False)
    runs, unknown = [], []
    for seg in live:
        if seg.base_offset in summaries:
            runs += summaries[seg.base_offset].runs
        else:
            span = _span(store, seg)
            runs.append(TimeRun(*span, UNKNOWN_FIRST_MS, UNKNOWN_LAST_MS, False))
            unknown.append(span)
    return WindowRuns(runs, unknown, [_span(store, seg) for seg in walked])


def ask_summaries(store: TimedLog, spans: Iterable[tuple[int, int]]) -> None:
    """Note in the cache directory that the tasks of a plan were asked to summarize the segments
    holding `spans` (unknown spans of `window_runs`): the next plan walks those it still lacks."""
    cache = _cache(store)
    if cache is None or not _by_pieces(store, cache):
        return
    for start, _ in spans:
        seg = store.log.segment_at(start)
        if seg is not None:
            cache.save_asked(store.log, seg)


def summarizing(store: TimedLog, start: int, end: int,
                batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """`batches` (a scan of [start, end), inside one segment, decoding `SUMMARY_COLUMNS`) passed on;
    once all were read, and the read met no damaged record (`StoreStats.skipped`: then it returned
    the records a walk returns), their summary is cached as the piece [start, end) of the segment's."""
    runs = _Runs()
    for batch in batches:
        runs.add_batch(batch)
        if batch.num_rows:
            runs.last = _row_identity(batch, batch.num_rows - 1)
        yield batch
    seg = store.log.segment_at(start)
    cache = _cache(store)
    if seg is None or cache is None or store.records.stats.skipped or not _by_pieces(store, cache):
        return
    cache.save_piece(store.log, seg, start, end, runs.summary().to_entry())


def _cache(store: TimedLog) -> SegmentCache | None:
    return SegmentCache.for_store(store, TIMELINE_CACHE_KIND, TIMELINE_CACHE_VERSION, content_checked=True)


def _by_pieces(store: TimedLog, cache: SegmentCache) -> bool:
    """Summaries may be joined from pieces: a remote store whose segments have modification times."""
    return not cache.local and all(seg.mtime_ns is not None for seg in store.log.segments)


def _span(store: TimedLog, seg: Segment) -> tuple[int, int]:
    """The segment's part of the log (what its summary covers)."""
    return max(store.log.min_offset, seg.base_offset), min(seg.end_offset, store.log.max_offset)


def _summaries(store: TimedLog, *, walk: bool) -> tuple[list[Segment], dict[int, _Summary], list[Segment]]:
    """The live segments and, by base offset, their summaries: cached, else joined from cached pieces
    (where pieces are used), else walked (with `walk`, where pieces are not used, or where tasks were
    asked for pieces: `window_runs`, the segments returned third); what is new is cached. On a remote
    store each one is checked to still end with the record it ends with."""
    live = [s for s in store.log.segments if s.base_offset < store.log.max_offset]
    cache = _cache(store)
    pieces = cache is not None and _by_pieces(store, cache)
    found = {base: _Summary.from_entry(entry) for base, entry in
             (cache.load(store.log, live) if cache else {}).items()}
    if cache and not cache.local:  # maybe no mtime: the segment must still end with the same record
        found = {base: summary for base, summary in found.items() if _checked(store, base, summary)}
    joined = {}
    if pieces:
        assert cache is not None
        joined = {s.base_offset: summary for s in live if s.base_offset not in found
                  and (summary := _joined(store, cache, s)) is not None
                  and _checked(store, s.base_offset, summary)}
    found.update(joined)
    lacking = [s for s in live if s.base_offset not in found]
    asked: list[Segment] = []
    if not walk and pieces:  # only those whose tasks were asked (`window_runs`)
        assert cache is not None
        lacking = asked = [s for s in lacking if cache.asked(store.log, s)]
    fresh = {s.base_offset: _summarize(store, s, _grown(store, cache, s) if cache else None) for s in lacking}
    store.summarized.extend(_span(store, s) for s in lacking)
    found.update(fresh)
    if cache and (fresh or joined):
        cache.save(store.log, [(s, found[s.base_offset].to_entry()) for s in live if s.base_offset in found])
        for seg in live:
            if pieces and (seg.base_offset in joined or seg.base_offset in fresh):
                cache.drop_pieces(seg)  # in the segment's entry now
    return live, found, asked


def _checked(store: TimedLog, base: int, summary: _Summary) -> bool:
    """The segment at `base` still ends with the record the summary ends with (or it has none)."""
    seg = store.log.segment_at(base)
    return summary.last is None or (seg is not None and _still_ends(store, seg, summary))


def _joined(store: TimedLog, cache: SegmentCache, seg: Segment) -> _Summary | None:
    """The summary of `seg` from cached pieces that cover its part of the log one after another."""
    pieces = cache.pieces(store.log, seg)
    start, end = _span(store, seg)
    runs = _Runs()
    while start < end:
        if start not in pieces:
            return None
        start, entry = pieces[start]
        piece = _Summary.from_entry(entry)
        for run in piece.runs:
            runs.add(run)
        runs.last = piece.last if piece.last is not None else runs.last
    return runs.summary() if start == end else None


def _grown(store: TimedLog, cache: SegmentCache, seg: Segment) -> _Summary | None:
    """The cached summary of `seg` from when it held the valid end, if the segment has only grown
    since: the broker appends and never rewrites records before its valid end, so the cached runs
    still hold when the record they end with is still there (same identity)."""
    stale = cache.stale(seg)
    if stale is None:
        return None
    (size, _, records_end), entry = stale[0], stale[1]
    summary = _Summary.from_entry(entry)
    if size != seg.size or records_end is None or summary.last is None:
        return None
    if min(seg.end_offset, store.log.max_offset) < summary.runs[-1].end:
        return None
    return summary if _still_ends(store, seg, summary) and _same_last_time(store, seg, summary) else None


def _same_last_time(store: TimedLog, seg: Segment, summary: _Summary) -> bool:
    """The record the summary ends with still has the last time of its run, when that run is ordered (the
    identity does not hold the store time: a segment rewritten with other store times is walked again)."""
    assert summary.last is not None
    run = summary.runs[-1]
    return not run.ordered or store.log.store_time_at(seg, summary.last[0] - seg.base_offset) == run.last_ms


def _still_ends(store: TimedLog, seg: Segment, summary: _Summary) -> bool:
    """The record the summary ends with is still there (same identity)."""
    assert summary.last is not None
    return _identity(store, seg, summary.last[0]) == summary.last


def _identity(store: TimedLog, seg: Segment, offset: int) -> tuple[int, ...]:
    """PHYSICALOFFSET, TOTALSIZE, BODYCRC and BORNTIMESTAMP of the record at `offset`, from one small
    read of its header (spec §2.2): tells a record from any other one (another store's, a rewrite)."""
    head = bytes.fromhex(store.log.record_header(seg, offset - seg.base_offset))
    if len(head) < OFF_BORNHOST:
        return ()
    return (_I64.unpack_from(head, OFF_PHYSICALOFFSET)[0], _I32.unpack_from(head, OFF_TOTALSIZE)[0],
            _I32.unpack_from(head, OFF_BODYCRC)[0], _I64.unpack_from(head, OFF_BORNTIMESTAMP)[0])


def _row_identity(batch: pa.RecordBatch, row: int) -> tuple[int, ...]:
    """`_identity` of a decoded record (a row of `SUMMARY_COLUMNS`): no read."""
    return (batch.column("commitLogOffset")[row].as_py(), batch.column("storeSize")[row].as_py(),
            batch.column("bodyCrc")[row].as_py(),
            pc.cast(batch.column("bornTimestamp").slice(row, 1), pa.int64())[0].as_py() // 1000)


def first_at_or_after(store: TimedLog, runs: Sequence[TimeRun], ts_ms: int) -> int:
    """Physical offset of the first record with storeTimestamp >= ts_ms, `max_offset` if none."""
    for run in runs:
        if run.last_ms >= ts_ms:
            return _first_in_run(store, run, ts_ms)
    return store.log.max_offset


def time_ranges(store: TimedLog, runs: Sequence[TimeRun], begin_ms: int | None,
                end_ms: int | None) -> list[tuple[int, int]]:
    """Commit-log byte ranges [start, end), in log order, holding every record with begin_ms <=
    storeTimestamp <= end_ms (None: unbounded): in each run whose times reach into the window, its
    records inside the window (found by bisection at the window's edges) or, for an unordered run, all
    of them. The ranges of consecutive runs taken whole at their meeting point are merged (no record
    lies between them)."""
    out: list[tuple[int, int]] = []
    last_taken = -2
    for number, run in enumerate(runs):
        outside = (end_ms is not None and run.first_ms > end_ms) or (begin_ms is not None
                                                                     and run.last_ms < begin_ms)
        if outside:
            continue
        start, stop = run.start, run.end
        if run.ordered and begin_ms is not None and run.first_ms < begin_ms:
            start = _first_in_run(store, run, begin_ms)
        if run.ordered and end_ms is not None and run.last_ms > end_ms:
            stop = _first_in_run(store, run, end_ms + 1)
        if start >= stop:
            continue
        if last_taken == number - 1 and start == run.start:
            out[-1] = (out[-1][0], stop)
        else:
            out.append((start, stop))
        last_taken = number if stop == run.end else -2
    return out


def _summarize(store: TimedLog, seg: Segment, grown: _Summary | None) -> _Summary:
    """The runs of one segment's records (module docstring), from a walk of its store times (only of
    the records after those of `grown`, the cached summary of a segment that has grown since)."""
    runs = _Runs(list(grown.runs), grown.last) if grown else _Runs()
    start = grown.runs[-1].end if grown else seg.base_offset
    last = None
    end = min(seg.end_offset, store.log.max_offset)
    for batch in store.records.scan(start, end, RUN_COLUMNS, mode=PERMISSIVE, decompress=False):
        runs.add_batch(batch)
        last = batch.column("commitLogOffset")[-1].as_py() if batch.num_rows else last
    if last is not None:
        runs.last = _identity(store, seg, last)
    return runs.summary()


def _first_in_run(store: TimedLog, run: TimeRun, ts_ms: int) -> int:
    """Offset of the first record of `run` with time >= ts_ms (`run.end` if none): a bisection when
    the run is ordered, then a walk forward through windows of growing size."""
    start, window = (_bisect(store, run, ts_ms) if run.ordered else run.start), SEEK_FIRST_WINDOW
    while start < run.end:  # ranges [start, stop): each record is in exactly one
        stop = min(start + window, run.end)
        for batch in store.records.scan(start, stop, ["commitLogOffset", "storeTimestamp"], mode=PERMISSIVE):
            hit = np.flatnonzero(_millis(batch) >= ts_ms)
            if hit.size:
                return int(batch.column("commitLogOffset")[int(hit[0])].as_py())
        start, window = stop, window * 2
    return run.end


def _bisect(store: TimedLog, run: TimeRun, ts_ms: int) -> int:
    """A record start of the ordered `run` at or before its first record with time >= ts_ms."""
    seg = store.log.segment_at(run.start)
    assert seg is not None  # runs are made of the records of a segment
    low, high = run.start - seg.base_offset, run.end - seg.base_offset
    while high - low > PROBE_BYTES:
        mid = (low + high) // 2
        found = store.log.resync(seg, mid, high)
        if found is None:
            high = mid
        elif store.log.store_time_at(seg, found) < ts_ms:
            low = found
        else:
            high = found
    return seg.base_offset + low


def _millis(batch: pa.RecordBatch) -> np.ndarray:
    """The storeTimestamp column in epoch milliseconds (as stored)."""
    return pc.cast(batch.column("storeTimestamp"), pa.int64()).to_numpy() // 1000
