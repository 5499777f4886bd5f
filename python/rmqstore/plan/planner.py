"""Predicates -> read tasks, per store (design §3).

Access paths, most selective first; the first one that applies is used and the others only bound it:
1. `commitLogOffset` / `msgId` points: read those offsets.
2. `key` / `uniqKey` values, or `KeysContainAny` (RocketMQ key meaning): index probe. A few values
   are probed here and the hits grouped by segment; many values are probed on the executors,
   partitioned by a stable hash (mmh3) of the value. `key = v` probes v's first KEYS token (a
   record whose whole KEYS string is v is indexed under each token) and is confirmed on the whole
   string. A missing or damaged index falls back to the next path and says so in `notes`. What the
   broker's index lacks (ROLLBACK records, §5.4; the log past its end; lost index files) is probed in
   the store's side index (`Store.side_index`), built here once when needed (a note says so).
3. `topic` (with `queueId`, `queueOffset`, `tags`, queue windows): consume-queue slices.
Path 3 also scans the bytes consume queues do not cover (`Store.uncovered_ranges`: transaction
PREPARED / ROLLBACK records, which are in no queue (§4.1); queues lagging behind the log; topics
without queue files), so it returns the rows a scan returns: the queue tasks leave the scanned bytes
out (`exclude`) and a note says they are scanned. Queue windows (startingOffsets / endingOffsets)
are positions in the queues: they select queue units only.
4. `commitLogOffset` ranges and `storeTimestamp` ranges (seek by time): commit-log byte ranges.
5. Otherwise the whole log, split by `Store.split_ranges`.
Whatever path is used, every task's rows are confirmed against all predicates by the reader.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from rmqstore.format.msgid import decode_offset_msg_id
from rmqstore.plan.predicates import Compare, InSet, KeysContainAny, NotNull, Predicate, QueueWindows
from rmqstore.plan.queues import queue_windows_slices
from rmqstore.plan.tasks import (
    KeyProbeTask,
    OffsetsTask,
    ProbeKind,
    QueueSlice,
    QueueSliceTask,
    RangesTask,
    RangeTask,
    ReadTask,
    merge_ranges,
    probe_bucket,
    subtract_ranges,
    within,
)
from rmqstore.store import IndexUnavailableError, Store

log = logging.getLogger("rmqstore.plan")

OFFSETS_PER_TASK = 200_000
RANGES_PER_TASK = 10_000
UNITS_PER_QUEUE_TASK = 1_000_000


@dataclass(frozen=True)
class PlanSettings:
    """Knobs of the planner (from the source's options)."""

    max_bytes_per_partition: int = 128 * 1024 * 1024
    min_partitions: int | None = None
    key_probe_partition_threshold: int = 64
    """Up to this many key values are probed while planning; more are probed on executors."""


@dataclass
class ReadPlan:
    """The tasks of one read and how they were chosen."""

    tasks: list[ReadTask] = field(default_factory=list)
    access: list[str] = field(default_factory=list)
    """Per store, the access path used ("offsets", "key-index", "queues", "range", "scan")."""
    notes: list[str] = field(default_factory=list)
    """Fallbacks and other facts worth a log line."""


@dataclass
class _Bounds:
    """What a conjunction of predicates says about each plannable column."""

    points: set[int] | None = None
    lo: int | None = None
    hi: int | None = None
    begin_ms: int | None = None
    end_ms: int | None = None
    probes: dict[ProbeKind, tuple[str, ...]] = field(default_factory=dict)
    topics: set[str] | None = None
    queue_ids: set[int] | None = None
    queue_lo: int | None = None
    queue_hi: int | None = None
    tags: set[str] | None = None
    windows: QueueWindows | None = None
    empty: bool = False


def plan_read(stores: Sequence[Store], predicates: Sequence[Sequence[Predicate]],
              settings: PlanSettings) -> ReadPlan:
    """Tasks reading, for each store, a superset of the rows satisfying that store's predicates."""
    plan = ReadPlan()
    for index, (store, preds) in enumerate(zip(stores, predicates, strict=True)):
        access, tasks = _plan_store(index, store, _bounds(preds), settings, plan.notes)
        plan.access.append(access)
        plan.tasks.extend(tasks)
    for note in plan.notes:
        log.info(note)  # callers show plan.notes to the user (the Spark reader: once per application)
    return plan


def _intersect(current: set | None, values: set) -> set:
    return values if current is None else current & values


def _bounds(predicates: Sequence[Predicate]) -> _Bounds:
    b = _Bounds()
    for p in predicates:
        if isinstance(p, NotNull):
            continue
        if isinstance(p, QueueWindows):
            b.windows = p if b.windows is None else b.windows.intersect(p)
            continue
        if isinstance(p, KeysContainAny):
            b.probes["keysContain"] = _narrowest(b.probes.get("keysContain"), p.values)
            continue
        values = _equal_values(p)
        column = p.column
        if column == "commitLogOffset":
            if values is not None:
                b.points = _intersect(b.points, {int(v) for v in values})
            else:
                lo, hi = _int_range(p)
                b.lo, b.hi = _tighter(b.lo, lo, max), _tighter(b.hi, hi, min)
        elif column == "msgId" and values is not None:
            b.points = _intersect(b.points, _msg_id_offsets(values))
        elif column in ("key", "uniqKey") and values is not None:
            kind: ProbeKind = "key" if column == "key" else "uniqKey"
            b.probes[kind] = _narrowest(b.probes.get(kind), tuple(str(v) for v in values))
        elif column == "topic" and values is not None:
            b.topics = _intersect(b.topics, {str(v) for v in values})
        elif column == "tags" and values is not None:
            b.tags = _intersect(b.tags, {str(v) for v in values})
        elif column == "queueId" and values is not None:
            b.queue_ids = _intersect(b.queue_ids, {int(v) for v in values})
        elif column == "queueId":
            lo, hi = _int_range(p)
            b.queue_ids = _intersect(b.queue_ids, set(range(max(lo or 0, 0), min(hi or 1 << 16, 1 << 16))))
        elif column == "queueOffset":
            lo, hi = (int(min(values)), int(max(values)) + 1) if values else _int_range(p)
            b.queue_lo, b.queue_hi = _tighter(b.queue_lo, lo, max), _tighter(b.queue_hi, hi, min)
        elif column == "storeTimestamp":
            lo, hi = (min(values), max(values) + 1) if values else _int_range(p)
            begin = None if lo is None else -(-lo // 1000)          # µs -> ms, inclusive
            end = None if hi is None else -(-hi // 1000) - 1        # exclusive µs -> inclusive ms
            b.begin_ms, b.end_ms = _tighter(b.begin_ms, begin, max), _tighter(b.end_ms, end, min)
    b.empty = (b.points is not None and not b.points) or (b.topics is not None and not b.topics) or \
        (b.queue_ids is not None and not b.queue_ids) or (b.tags is not None and not b.tags)
    return b


def _tighter(current: int | None, new: int | None, pick: Callable[[int, int], int]) -> int | None:
    """Combine two optional bounds with `pick` (max for lower bounds, min for upper bounds)."""
    if current is None:
        return new
    return current if new is None else pick(current, new)


def _narrowest(current: tuple[str, ...] | None, values: tuple[str, ...]) -> tuple[str, ...]:
    """Of two value lists for the same probe, the shorter one (both are confirmed anyway)."""
    return values if current is None or len(values) < len(current) else current


def _equal_values(p: Predicate) -> tuple | None:
    if isinstance(p, InSet):
        return p.values
    if isinstance(p, Compare) and p.op == "=":
        return (p.value,)
    return None


def _int_range(p: Predicate) -> tuple[int | None, int | None]:
    """[lo, hi) of a comparison on an integer-valued column."""
    assert isinstance(p, Compare)
    v = int(p.value)
    return {"<": (None, v), "<=": (None, v + 1), ">": (v + 1, None), ">=": (v, None)}[p.op]


def _msg_id_offsets(values: Sequence) -> set[int]:
    offsets = set()
    for value in values:
        try:
            offsets.add(decode_offset_msg_id(str(value))[1])
        except ValueError:
            continue  # not an offsetMsgId: matches no record
    return offsets


def _plan_store(index: int, store: Store, b: _Bounds, settings: PlanSettings,
                notes: list[str]) -> tuple[str, list[ReadTask]]:
    ranges = _log_ranges(store, b)
    lo, hi = (ranges[0][0], ranges[-1][1]) if ranges else (0, 0)
    if b.empty or lo >= hi:
        return "empty", []
    if b.points is not None:
        offsets = sorted(o for o in b.points if lo <= o < hi)
        return "offsets", _offset_tasks(index, offsets, settings, user_points=True)
    if b.probes:
        kind, values = min(b.probes.items(), key=lambda kv: len(kv[1]))
        probe = _probe_values(kind, values)
        if probe is None:
            notes.append(f"store {store.path}: {kind} values {list(values)[:3]} cannot be looked up in the "
                         "index (empty or space-only); scanning instead")
        else:
            tasks = _probe_tasks(index, store, kind, probe, b, (lo, hi), settings, notes)
            if tasks is not None:
                return "key-index", tasks
    if b.windows is not None:
        return "queues", _queue_tasks(index, b, _queue_slices(store, b), (lo, hi), (), settings)
    if b.topics is not None:
        return _topic_plan(index, store, b, (lo, hi), settings, notes)
    access = "range" if ranges != [(store.min_offset, store.max_offset)] else "scan"
    return access, _range_tasks(index, store, ranges, settings)


def _log_ranges(store: Store, b: _Bounds) -> list[tuple[int, int]]:
    """Commit-log byte ranges, in log order, allowed by offset and time bounds (`Store.time_ranges`:
    one range unless the broker clock stepped back); the other paths are bounded by the first and last."""
    lo = max(store.min_offset, b.lo if b.lo is not None else 0)
    hi = min(store.max_offset, b.hi if b.hi is not None else store.max_offset)
    if lo >= hi:
        return []
    if b.begin_ms is None and b.end_ms is None:
        return [(lo, hi)]
    return list(_within(store.time_ranges(b.begin_ms, b.end_ms), lo, hi))


def _probe_values(kind: ProbeKind, values: tuple[str, ...]) -> tuple[str, ...] | None:
    """Index keys to probe; None when some value cannot be found through the index."""
    if kind != "key":
        return values if all(values) and not any(" " in v for v in values) else None
    tokens = []
    for value in values:
        parts = [t for t in value.split(" ") if t]
        if not parts:
            return None  # an empty or all-space KEYS string is not indexed
        tokens.append(parts[0])
    return tuple(dict.fromkeys(tokens))


def _within(ranges: Sequence[tuple[int, int]], lo: int, hi: int) -> tuple[tuple[int, int], ...]:
    """`ranges` clipped to [lo, hi)."""
    return tuple((max(a, lo), min(b, hi)) for a, b in ranges if max(a, lo) < min(b, hi))


UNCOVERED = ("not covered by consume queues (transaction PREPARED/ROLLBACK records, queues behind the log, "
             "topics without queue files)")


def _scan_tasks(index: int, store: Store, ranges: Sequence[tuple[int, int]], settings: PlanSettings,
                notes: list[str], what: str) -> list[ReadTask]:
    """`RangesTask`s over `ranges` (the bytes `what` describes, inside segments), about
    `max_bytes_per_partition` bytes and at most `RANGES_PER_TASK` ranges each."""
    if not ranges:
        return []
    total = sum(b - a for a, b in ranges)
    notes.append(f"store {store.path}: {len(ranges)} commit-log range(s), {total} bytes, {what}, are scanned "
                 f"too: {list(ranges)[:3]}")
    limit = settings.max_bytes_per_partition
    tasks: list[ReadTask] = []
    group: list[tuple[int, int]] = []
    group_bytes = 0
    for start, end in ranges:
        while start < end:
            piece = min(end, start + limit - group_bytes)
            group.append((start, piece))
            group_bytes += piece - start
            start = piece
            if group_bytes >= limit or len(group) >= RANGES_PER_TASK:
                tasks.append(RangesTask(index, tuple(group)))
                group, group_bytes = [], 0
    if group:
        tasks.append(RangesTask(index, tuple(group)))
    return tasks


def _probe_tasks(index: int, store: Store, kind: ProbeKind, probe: tuple[str, ...], b: _Bounds,
                 bounds: tuple[int, int], settings: PlanSettings, notes: list[str]) -> list[ReadTask] | None:
    try:
        side = store.side_index()  # built here, once, before executors probe it
        # without a topic predicate, every topic that can have indexed records (resolved once, here)
        topics = tuple(store.key_topics()) if b.topics is None else tuple(sorted(b.topics))
    except IndexUnavailableError as exc:
        notes.append(f"store {store.path}: index cannot answer the {kind} lookup ({exc}); scanning instead")
        return None
    if side.note:
        notes.append(f"store {store.path}: {side.note}")
    lo, hi = bounds
    if len(probe) > settings.key_probe_partition_threshold:
        buckets = max(settings.min_partitions or 1, -(-len(probe) // settings.key_probe_partition_threshold))
        grouped: list[list[str]] = [[] for _ in range(buckets)]
        for value in probe:
            grouped[probe_bucket(value, buckets)].append(value)
        return [KeyProbeTask(index, kind, tuple(g), i, buckets, probe, topics, lo, hi)
                for i, g in enumerate(grouped) if g]
    try:
        found = probe_offsets(store, probe, topics)
    except IndexUnavailableError as exc:
        notes.append(f"store {store.path}: index cannot answer the {kind} lookup ({exc}); scanning instead")
        return None
    return _offset_tasks(index, within(found, lo, hi).tolist(), settings, user_points=False)


def probe_offsets(store: Store, values: Sequence[str], topics: Sequence[str] | None) -> np.ndarray:
    """The index's candidates for any of the probe values (`Store.index_candidates`), sorted and
    unique; the reader confirms every row read (raises IndexUnavailableError)."""
    if len(values) > 1:
        store.prefetch_index(values, topics)
    offsets: set[int] = set()
    for value in values:
        offsets.update(store.index_candidates(value, topics))
    return np.fromiter(sorted(offsets), dtype=np.int64, count=len(offsets))


def _offset_tasks(index: int, offsets: list[int], settings: PlanSettings, *,
                  user_points: bool) -> list[ReadTask]:
    """Sorted offsets in few tasks: consecutive chunks, hence grouped by segment."""
    if not offsets:
        return []
    pieces = max(settings.min_partitions or 1, -(-len(offsets) // OFFSETS_PER_TASK))
    pieces = min(pieces, len(offsets))
    bounds = [len(offsets) * i // pieces for i in range(pieces + 1)]
    return [OffsetsTask(index, tuple(offsets[a:b]), user_points) for a, b in pairwise(bounds)]


def _range_tasks(index: int, store: Store, ranges: Sequence[tuple[int, int]],
                 settings: PlanSettings) -> list[ReadTask]:
    """A task per piece of `store.split_ranges` inside each of `ranges` (sorted, disjoint)."""
    return [RangeTask(index, start, end) for start, end in _pieces(store, ranges, settings)]


def _pieces(store: Store, ranges: Sequence[tuple[int, int]], settings: PlanSettings) -> list[tuple[int, int]]:
    """`ranges` cut like a scan's tasks: pieces of `store.split_ranges` (never across segments, at
    most `max_bytes_per_partition`, at least `min_partitions` of them)."""
    total = sum(hi - lo for lo, hi in ranges)
    max_bytes = settings.max_bytes_per_partition
    if settings.min_partitions:
        max_bytes = max(1, min(max_bytes, -(-total // settings.min_partitions)))
    return [part for piece in store.split_ranges(max_bytes) for part in _within(ranges, *piece)]


DENSE_SHARE = 0.8
"""A piece of the log (a scan task's range) where the records a topic plan selects (the sizes of their
consume-queue units) fill at least this share of the bytes is scanned and filtered instead of read by
offset.

Measured on the development machine (2 shared cores, page cache warm, CPU time, a fresh Store per
task like Spark): reading a share d of a segment's records by offset costs 0.06 + 0.95 d of scanning
it (point reads run at scan speed per record; the 0.06 is touching the pages between them), and a
`topic =` plan also reads and sorts the queue units; plan + read + confirm of `topic = T` against the
same read without the predicate, in one process (stores like tests/bench/test_bench_pushdown.py's
`share_store`: 120k records, 16 MiB segments): share 0.70 -> 0.85x, 0.80 -> 0.98x, 0.90 -> 1.00x,
1.00 -> 1.12x.
So from 0.8 on the scan is as cheap or cheaper, and the pushed query is never slower than the unpushed one.
"""
MIN_QUEUE_TASK_BYTES = 2 << 20
"""A topic plan's task reads the queue units of one scan piece, or of consecutive pieces until their
selected records reach this many bytes: the plan runs on as many cores as the scan would, without a
task per piece for a rare topic. Measured with tests/bench/test_bench_pushdown.py (local[2]): a Spark
task costs some tens of milliseconds, a row about 10 µs (decode, Arrow to the JVM, the query), so
2 MiB of ~400-byte records (5,000 rows, ~50 ms) is where a task pays for itself."""


def _topic_plan(index: int, store: Store, b: _Bounds, bounds: tuple[int, int], settings: PlanSettings,
                notes: list[str]) -> tuple[str, list[ReadTask]]:
    """Consume-queue slices cut along the scan's pieces, except pieces where the selection is dense
    (`DENSE_SHARE`): those are scanned (the reader confirms every row), and so are the bytes no queue
    covers."""
    lo, hi = bounds
    slices = _queue_slices(store, b)
    units = [store.consume_queue(s.topic, s.queue_id).units(s.start, s.end, tags=b.tags) for s in slices]
    units = [u[(u["phy"] >= lo) & (u["phy"] < hi)] for u in units]
    pieces = _pieces(store, [(lo, hi)], settings)
    selected = _selected_bytes(pieces, units)
    dense = [p for p, n in zip(pieces, selected, strict=True) if n >= DENSE_SHARE * (p[1] - p[0])]
    uncovered = _within(store.uncovered_ranges(), lo, hi)
    if dense:
        notes.append(f"store {store.path}: the selection fills >= {DENSE_SHARE:.0%} of the bytes of "
                     f"{len(dense)} commit-log range(s), {sum(z - a for a, z in dense)} bytes: scanned "
                     f"instead of read by offset: {dense[:3]}")
    groups = _piece_groups(pieces, selected, set(dense))
    queue_tasks: list[ReadTask] = [
        QueueSliceTask(index, _slices_within(slices, units, a, z), None if b.tags is None else
                       tuple(sorted(b.tags)), a, z, _within(uncovered, a, z)) for a, z in groups]
    dense = merge_ranges(dense)
    tasks = (_range_tasks(index, store, dense, settings) + queue_tasks
             + _scan_tasks(index, store, subtract_ranges(uncovered, dense), settings, notes, UNCOVERED))
    if queue_tasks or not dense:
        return "queues", tasks
    return ("range" if dense != [(store.min_offset, store.max_offset)] else "scan"), tasks


def _selected_bytes(pieces: Sequence[tuple[int, int]], units: Sequence[np.ndarray]) -> list[float]:
    """Per piece, the bytes of the records the units point to."""
    starts = np.asarray([a for a, _ in pieces], dtype=np.int64)
    ends = np.asarray([z for _, z in pieces], dtype=np.int64)
    total = np.zeros(len(pieces))
    for u in units:
        phy = u["phy"].astype(np.int64)
        owner = np.searchsorted(starts, phy, side="right") - 1
        inside = (owner >= 0) & (phy < ends[np.maximum(owner, 0)])
        total += np.bincount(owner[inside], weights=u["size"][inside], minlength=len(pieces))
    return total.tolist()


def _piece_groups(pieces: Sequence[tuple[int, int]], selected: Sequence[float],
                  dense: set[tuple[int, int]]) -> list[tuple[int, int]]:
    """Ranges of consecutive pieces with selected records, none dense, each closed once its selected
    bytes reach MIN_QUEUE_TASK_BYTES (or at a dense piece)."""
    groups: list[tuple[int, int]] = []
    start, end, held = None, None, 0.0
    for piece, chosen in zip(pieces, selected, strict=True):
        if piece in dense or (start is not None and held >= MIN_QUEUE_TASK_BYTES):
            if start is not None and held:
                groups.append((start, end))
            start, held = None, 0.0
        if piece in dense or not chosen:
            continue
        start = piece[0] if start is None else start
        end, held = piece[1], held + chosen
    if start is not None and held:
        groups.append((start, end))
    return groups


def _slices_within(slices: Sequence[QueueSlice], units: Sequence[np.ndarray], lo: int,
                   hi: int) -> tuple[QueueSlice, ...]:
    """The parts of the slices whose units point into [lo, hi): found by bisection where a queue's
    physical offsets ascend (as the broker writes them), else the whole slice (the task's bounds
    still keep only [lo, hi))."""
    out = []
    for s, u in zip(slices, units, strict=True):
        phy = u["phy"]
        if len(phy) and not np.all(phy[1:] > phy[:-1]):
            out.append(s)
            continue
        first, last = np.searchsorted(phy, [lo, hi])
        if first < last:
            offsets = u["queue_offset"]
            out.append(QueueSlice(s.topic, s.queue_id, int(offsets[first]), int(offsets[last - 1]) + 1))
    return tuple(out)


def _queue_slices(store: Store, b: _Bounds) -> list[QueueSlice]:
    """The queue slices a topic or queue-window plan reads, clipped to the queue-offset bounds."""
    known = set(store.topics())
    slices: list[QueueSlice] = []
    if b.windows is not None:
        slices = [s for s in queue_windows_slices(store, b.windows)
                  if (b.topics is None or s.topic in b.topics)
                  and (b.queue_ids is None or s.queue_id in b.queue_ids)]
    else:
        for topic in sorted(b.topics & known):
            for queue_id in store.queue_ids(topic):
                if b.queue_ids is None or queue_id in b.queue_ids:
                    cq = store.consume_queue(topic, queue_id)
                    slices.append(QueueSlice(topic, queue_id, cq.min_offset, cq.max_offset))
    clipped = []
    for s in slices:
        start = s.start if b.queue_lo is None else max(s.start, b.queue_lo)
        end = s.end if b.queue_hi is None else min(s.end, b.queue_hi)
        clipped += [QueueSlice(s.topic, s.queue_id, a, z)
                    for a, z in store.consume_queue(s.topic, s.queue_id).spans(start, end)]
    return clipped


def _queue_tasks(index: int, b: _Bounds, clipped: Sequence[QueueSlice], bounds: tuple[int, int],
                 exclude: Sequence[tuple[int, int]], settings: PlanSettings) -> list[ReadTask]:
    """`QueueSliceTask`s over the slices, at most `UNITS_PER_QUEUE_TASK` units each."""
    units_per_task = UNITS_PER_QUEUE_TASK
    total_units = sum(s.end - s.start for s in clipped)
    if settings.min_partitions and total_units:
        units_per_task = max(1, min(units_per_task, -(-total_units // settings.min_partitions)))
    tags = None if b.tags is None else tuple(sorted(b.tags))
    lo, hi = bounds
    tasks: list[ReadTask] = []
    group: list[QueueSlice] = []
    group_units = 0
    for s in clipped:
        start = s.start
        while start < s.end:
            take = min(s.end - start, units_per_task - group_units)
            group.append(QueueSlice(s.topic, s.queue_id, start, start + take))
            group_units += take
            start += take
            if group_units >= units_per_task:
                tasks.append(QueueSliceTask(index, tuple(group), tags, lo, hi, tuple(exclude)))
                group, group_units = [], 0
    if group:
        tasks.append(QueueSliceTask(index, tuple(group), tags, lo, hi, tuple(exclude)))
    return tasks
