"""Where store times lie in the commit log: exact seeks by storeTimestamp (design §3, §4).

The broker stamps STORETIMESTAMP under the put lock, so store times never decrease in log order -
unless the broker's clock steps back (NTP, a resumed VM, an operator), by any amount. A seek must not
lose the records written after such a step, so each segment's records are summarized as runs:
maximal stretches of records whose store times never decrease, each with its byte range and its
first and last (smallest and largest) time. Then, exactly: the first record with time >= t is in
the first run whose last time is >= t (every record before that run is < t), found inside the run by
bisection; the records of a window [a, b] are, in each run whose times reach into it, a stretch
found by bisection at a and b + 1 (a run entirely inside the window needs no bisection). A log
whose clock never stepped back is one run per segment, so a window is one byte range; after a step
back, a few. A segment with more than `MAX_RUNS` runs (a jittering clock) is one unordered run:
first / last are its smallest / largest time, a seek walks it and a window takes all of it.

A summary costs one walk of the storeTimestamp column of a segment (compiled decoder, no bodies).
Summaries are cached on disk outside the store (`rmqstore.store.segment_cache`, kind `timeline`):
a sealed segment is walked once; the segment holding the valid end, when it has grown, only from
where its cached summary ends (if the record that summary ends with is still there). Remote files
may have no mtime, so a remote store's cached summaries are used only while each segment still ends
with the record its summary ends with (one small read per segment).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqstore.store.commitlog import PROBE_BYTES
from rmqstore.store.errors import PERMISSIVE
from rmqstore.store.segment_cache import SegmentCache
from rmqstore.store.segments import Segment

if TYPE_CHECKING:
    from rmqstore.store.store import Store

CACHE_KIND = "timeline"
CACHE_VERSION = 1
MAX_RUNS = 256
"""A segment with more runs than this is summarized as one unordered run."""
SEEK_FIRST_WINDOW = 2 * PROBE_BYTES
"""A seek walks forward through ranges of this size, doubling each time (after a bisection, the
record it looks for starts within PROBE_BYTES)."""


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
    """The runs of one segment, and where its last record starts with that record's first header
    bytes (TOTALSIZE to BORNTIMESTAMP, hex): what tells a grown segment from a rewritten one."""

    runs: tuple[TimeRun, ...]
    last_start: int | None
    last_header: str

    def to_entry(self) -> list:
        return [self.last_start, self.last_header, *(astuple(run) for run in self.runs)]

    @classmethod
    def from_entry(cls, entry: list) -> _Summary:
        return cls(tuple(TimeRun(*run) for run in entry[2:]), entry[0], entry[1])


def time_runs(store: Store) -> list[TimeRun]:
    """The runs of every segment holding records, in log order (from the cache where still valid)."""
    live = [s for s in store.segments if s.base_offset < store.max_offset]
    cache = SegmentCache.for_store(store, CACHE_KIND, CACHE_VERSION, content_checked=True)
    summaries = {base: _Summary.from_entry(entry) for base, entry in
                 (cache.load(store, live) if cache else {}).items()}
    if cache and not cache.local:  # maybe no mtime: the segment must still end with the same record
        by_base = {s.base_offset: s for s in live}
        summaries = {base: summary for base, summary in summaries.items()
                     if summary.last_start is None or _still_ends(store, by_base[base], summary)}
    fresh = {s.base_offset: _summarize(store, s, _grown(store, cache, s) if cache else None)
             for s in live if s.base_offset not in summaries}
    summaries.update(fresh)
    if cache and fresh:
        cache.save(store, [(s, summaries[s.base_offset].to_entry()) for s in live])
    return [run for s in live for run in summaries[s.base_offset].runs]


def _grown(store: Store, cache: SegmentCache, seg: Segment) -> _Summary | None:
    """The cached summary of `seg` from when it held the valid end, if the segment has only grown
    since: the broker appends and never rewrites records before its valid end, so the cached runs
    still hold when the record they end with is still there (same header bytes)."""
    stale = cache.stale(seg)
    if stale is None:
        return None
    (size, _, records_end), entry = stale[0], stale[1]
    summary = _Summary.from_entry(entry)
    if size != seg.size or records_end is None or summary.last_start is None:
        return None
    if min(seg.end_offset, store.max_offset) < summary.runs[-1].end:
        return None
    return summary if _still_ends(store, seg, summary) else None


def _still_ends(store: Store, seg: Segment, summary: _Summary) -> bool:
    """The record the summary ends with is still there (same header bytes)."""
    assert summary.last_start is not None
    return _header(store, seg, summary.last_start) == summary.last_header


def first_at_or_after(store: Store, runs: Sequence[TimeRun], ts_ms: int) -> int:
    """Physical offset of the first record with storeTimestamp >= ts_ms, `max_offset` if none."""
    for run in runs:
        if run.last_ms >= ts_ms:
            return _first_in_run(store, run, ts_ms)
    return store.max_offset


def time_ranges(store: Store, runs: Sequence[TimeRun], begin_ms: int | None,
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


def _summarize(store: Store, seg: Segment, grown: _Summary | None) -> _Summary:
    """The runs of one segment's records (module docstring), from a walk of its store times (only of
    the records after those of `grown`, the cached summary of a segment that has grown since)."""
    offsets, ends, times = [], [], []
    columns = ["commitLogOffset", "storeSize", "storeTimestamp"]
    start = grown.runs[-1].end if grown else seg.base_offset
    for batch in store.scan(start, min(seg.end_offset, store.max_offset), columns, mode=PERMISSIVE,
                            decompress=False):
        offset = batch.column("commitLogOffset").to_numpy()
        offsets.append(offset)
        ends.append(offset + batch.column("storeSize").to_numpy())
        times.append(_millis(batch))
    runs = list(grown.runs) if grown else []
    if not offsets:
        return _Summary(tuple(runs), grown.last_start, grown.last_header) if grown else _Summary((), None, "")
    offset, end, t = np.concatenate(offsets), np.concatenate(ends), np.concatenate(times)
    breaks = np.flatnonzero(t[1:] < t[:-1]) + 1
    firsts, lasts = np.concatenate(([0], breaks)), np.concatenate((breaks, [len(t)])) - 1
    for a, b in zip(firsts.tolist(), lasts.tolist(), strict=True):
        if runs and runs[-1].ordered and a == 0 and int(t[0]) >= runs[-1].last_ms:  # the run goes on
            runs[-1] = TimeRun(runs[-1].start, int(end[b]), runs[-1].first_ms, int(t[b]), True)
        else:
            runs.append(TimeRun(int(offset[a]), int(end[b]), int(t[a]), int(t[b]), True))
    if len(runs) > MAX_RUNS or not all(run.ordered for run in runs):
        runs = [TimeRun(runs[0].start, runs[-1].end, min(run.first_ms for run in runs),
                        max(run.last_ms for run in runs), False)]
    last = int(offset[-1])
    return _Summary(tuple(runs), last, _header(store, seg, last))


def _header(store: Store, seg: Segment, offset: int) -> str:
    """TOTALSIZE to BORNTIMESTAMP of the record at `offset`, hex."""
    return store.log.record_header(seg, offset - seg.base_offset)


def _first_in_run(store: Store, run: TimeRun, ts_ms: int) -> int:
    """Offset of the first record of `run` with time >= ts_ms (`run.end` if none): a bisection when
    the run is ordered, then a walk forward through windows of growing size."""
    start, window = (_bisect(store, run, ts_ms) if run.ordered else run.start), SEEK_FIRST_WINDOW
    while start < run.end:  # ranges [start, stop): each record is in exactly one
        stop = min(start + window, run.end)
        for batch in store.scan(start, stop, ["commitLogOffset", "storeTimestamp"], mode=PERMISSIVE):
            hit = np.flatnonzero(_millis(batch) >= ts_ms)
            if hit.size:
                return int(batch.column("commitLogOffset")[int(hit[0])].as_py())
        start, window = stop, window * 2
    return run.end


def _bisect(store: Store, run: TimeRun, ts_ms: int) -> int:
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
