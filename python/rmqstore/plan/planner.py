"""Predicates -> read tasks, per store (design §3.1).

Access paths, most selective first (design §3.1): `commitLogOffset` / `msgId` points; `key` / `uniqKey`
index probes (few on the driver, many in tasks partitioned by a stable hash, plus the side index for
what the broker's index lacks); `topic` queue slices plus a scan of the bytes no queue covers
(`Store.uncovered_ranges`), kept out of the queue tasks (`exclude`); commit-log and `storeTimestamp`
ranges; else the whole log in pieces of its segments (`rmqstore.plan.tasks.split_spans`). The first
path that applies is used, the others only bound it, and the reader confirms every row against all
predicates; queue windows naming an `%LMQ%` queue always take the queue path (one row per queue unit
read, §4.6). A fallback (missing or damaged index) is said in `notes`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rmqstore.cachedir import CACHE_DIR_ENV
from rmqstore.format.consumequeue import CQ_UNIT_SIZE
from rmqstore.format.record import LMQ_PREFIX
from rmqstore.plan.contract_plan import DENSE_SHARE, MIN_QUEUE_TASK_BYTES
from rmqstore.plan.predicates import Bounds, Predicate, ProbeKind, bounds
from rmqstore.plan.queues import lost_at_ends, queue_windows_slices, reading_groups
from rmqstore.plan.tasks import (
    KeyProbeTask,
    OffsetsTask,
    QueueSlice,
    QueueSliceTask,
    RangesTask,
    RangeTask,
    ReadTask,
    group_items,
    pack_ranges,
    probe_bucket,
    split_offsets,
    split_spans,
    task_count,
    task_size,
    within,
)
from rmqstore.store import IndexUnavailableError, Store
from rmqstore.store.names import topic_dir_problem
from rmqstore.store.points import READ_RUN_GAP
from rmqstore.store.ranges import clip_ranges, merge_ranges, subtract_ranges

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


def plan_read(stores: Sequence[Store], predicates: Sequence[Sequence[Predicate]],
              settings: PlanSettings) -> ReadPlan:
    """Tasks reading, for each store, a superset of the rows satisfying that store's predicates."""
    plan = ReadPlan()
    for index, (store, preds) in enumerate(zip(stores, predicates, strict=True)):
        access, tasks = _plan_store(index, store, bounds(preds), settings, plan.notes)
        built = (store.coverage.note, store.timeline.note)  # the one-time builds this plan paid for
        plan.notes += [f"store {store.path}: {note}" for note in built if note]
        plan.access.append(access)
        plan.tasks.extend(tasks)
    for note in plan.notes:
        log.info(note)  # callers show plan.notes to the user (the Spark reader: once per application)
    return plan


def _plan_store(index: int, store: Store, b: Bounds, settings: PlanSettings,
                notes: list[str]) -> tuple[str, list[ReadTask]]:
    ranges = _log_ranges(store, b)
    lo, hi = (ranges[0][0], ranges[-1][1]) if ranges else (0, 0)
    if b.empty or lo >= hi:
        return "empty", []
    if b.windows is not None and b.windows.lmq:  # one row per queue unit read, in every plan (§4.6)
        return "queues", _queue_tasks(index, store, b, (lo, hi), settings)
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
        return "queues", _queue_tasks(index, store, b, (lo, hi), settings)
    if b.topics is not None:
        return _topic_plan(index, store, b, (lo, hi), settings, notes)
    access = "range" if ranges != [(store.min_offset, store.max_offset)] else "scan"
    return access, _range_tasks(index, store, ranges, settings, _unsummarized(store, b, ranges, notes))


def _unsummarized(store: Store, b: Bounds, ranges: Sequence[tuple[int, int]],
                  notes: list[str]) -> list[tuple[int, int]]:
    """The segments a time-window plan takes whole because their store times are not summarized yet
    (`Store.unsummarized_spans`): their scan summarizes them, which the store notes for those `ranges`
    read (`Store.ask_summaries`: a later plan that still lacks their summaries walks them)."""
    if b.begin_ms is None and b.end_ms is None:
        return []
    if walked := store.walked_spans():
        notes.append(_times_note(store, walked, "were walked by the driver: the tasks of an earlier time "
                                 "window summarized them where the driver does not read (give the "
                                 "executors the driver's cache directory, "
                                 f"spark.executorEnv.{CACHE_DIR_ENV}) or failed"))
    spans = [(a, z) for a, z in store.unsummarized_spans() if any(lo < z and a < hi for lo, hi in ranges)]
    if spans:
        notes.append(_times_note(store, spans, "are not summarized yet: scanned whole, which summarizes "
                                 "them for the next time window"))
        store.ask_summaries(spans)
    return spans


def _times_note(store: Store, spans: Sequence[tuple[int, int]], what: str) -> str:
    """A plan note about the store times of the segments holding `spans`."""
    return (f"store {store.path}: the store times of {len(spans)} segment(s), "
            f"{sum(z - a for a, z in spans)} bytes, {what}")


def _log_ranges(store: Store, b: Bounds) -> list[tuple[int, int]]:
    """Commit-log byte ranges, in log order, allowed by offset and time bounds (`Store.time_ranges`:
    one range unless the broker clock stepped back); the other paths are bounded by the first and last."""
    lo = max(store.min_offset, b.lo if b.lo is not None else 0)
    hi = min(store.max_offset, b.hi if b.hi is not None else store.max_offset)
    if lo >= hi:
        return []
    if b.begin_ms is None and b.end_ms is None:
        return [(lo, hi)]
    return list(clip_ranges(store.time_ranges(b.begin_ms, b.end_ms), lo, hi))


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
    groups = pack_ranges(ranges, settings.max_bytes_per_partition, RANGES_PER_TASK)
    return [RangesTask(index, tuple((start, end) for _, start, end in group)) for group in groups]


def _probe_tasks(index: int, store: Store, kind: ProbeKind, probe: tuple[str, ...], b: Bounds,
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
        buckets = task_count(len(probe), settings.key_probe_partition_threshold, settings.min_partitions)
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
    return [OffsetsTask(index, chunk, user_points)
            for chunk in split_offsets(offsets, OFFSETS_PER_TASK, settings.min_partitions)]


def _range_tasks(index: int, store: Store, ranges: Sequence[tuple[int, int]], settings: PlanSettings,
                 summarize: Sequence[tuple[int, int]] = ()) -> list[ReadTask]:
    """A task per piece of `_pieces` (sorted, disjoint `ranges`); those inside a `summarize` span
    summarize what they read."""
    return [RangeTask(index, start, end, any(a <= start and end <= z for a, z in summarize))
            for start, end in _pieces(store, ranges, settings)]


def _pieces(store: Store, ranges: Sequence[tuple[int, int]], settings: PlanSettings) -> list[tuple[int, int]]:
    """`ranges` cut like a scan's tasks: the store's segment spans split into pieces (never across
    segments, at most `max_bytes_per_partition`, at least `min_partitions` of them), clipped to `ranges`."""
    total = sum(hi - lo for lo, hi in ranges)
    max_bytes = task_size(total, settings.max_bytes_per_partition, settings.min_partitions)
    pieces = split_spans(store.segment_spans(), max_bytes)
    return [part for piece in pieces for part in clip_ranges(ranges, *piece)]


def _topic_plan(index: int, store: Store, b: Bounds, bounds: tuple[int, int], settings: PlanSettings,
                notes: list[str]) -> tuple[str, list[ReadTask]]:
    """Consume-queue slices cut along the scan's pieces, except pieces where the selection is dense
    (`DENSE_SHARE`): those are scanned (the reader confirms every row), and so are the bytes no queue
    covers that may hold a record of the topics (`Store.uncovered_ranges_of`). On a remote store, the
    whole range is scanned when the point reads could download most of it (`REMOTE_POINT_BYTES`), decided
    before any queue unit is read."""
    lo, hi = bounds
    dense_units = -(-int(DENSE_SHARE * (hi - lo)) // REMOTE_POINT_BYTES)
    if store.is_remote and _units_bound(store, b, dense_units) >= dense_units:
        notes.append(f"store {store.path}: remote point reads of the topic's records could download "
                     f">= {DENSE_SHARE:.0%} of commit-log range [{lo}, {hi}): scanned instead")
        return ("scan" if (lo, hi) == (store.min_offset, store.max_offset) else "range"), _range_tasks(
            index, store, [(lo, hi)], settings)
    slices = _queue_slices(store, b)
    units = [store.consume_queue(s.topic, s.queue_id).units(s.start, s.end, tags=b.tags) for s in slices]
    units = [u[(u["phy"] >= lo) & (u["phy"] < hi)] for u in units]
    pieces = _pieces(store, [(lo, hi)], settings)
    selected = _selected_bytes(pieces, units)
    dense = [p for p, n in zip(pieces, selected, strict=True) if n >= DENSE_SHARE * (p[1] - p[0])]
    uncovered = clip_ranges(store.uncovered_ranges(), lo, hi)
    holding = clip_ranges(store.uncovered_ranges_of(b.topics), lo, hi)
    if dense:
        notes.append(f"store {store.path}: the selection fills >= {DENSE_SHARE:.0%} of the bytes of "
                     f"{len(dense)} commit-log range(s), {sum(z - a for a, z in dense)} bytes: scanned "
                     f"instead of read by offset: {dense[:3]}")
    groups = _piece_groups(pieces, selected, set(dense))
    queue_tasks: list[ReadTask] = [
        QueueSliceTask(index, _slices_within(slices, units, a, z), None if b.tags is None else
                       tuple(sorted(b.tags)), a, z, clip_ranges(uncovered, a, z), coverage=True)
        for a, z in groups]
    dense = merge_ranges(dense)
    tasks = (_range_tasks(index, store, dense, settings) + queue_tasks
             + _scan_tasks(index, store, subtract_ranges(holding, dense), settings, notes, UNCOVERED))
    if queue_tasks or not dense:
        return "queues", tasks
    return ("range" if dense != [(store.min_offset, store.max_offset)] else "scan"), tasks


REMOTE_POINT_BYTES = READ_RUN_GAP + 2 * CQ_UNIT_SIZE
"""At most what a remote topic plan downloads per selected record, wherever the records lie: its
consume-queue unit (read in windows growing x2) and, in the commit log, the gap after the record
before it when that is below `READ_RUN_GAP` (the two share a ranged read, `store.points`), else a
read of `PROBE_BYTES` < `READ_RUN_GAP` (a longer record is read again: its own bytes). A remote
topic plan whose selected units, counted without reading them (`_units_bound`), could so download
`DENSE_SHARE` of its range scans the range instead: a topic whose records are on average closer than
this downloads about every byte by point reads (a 25% topic ~1 KB apart, an 8% one ~5 KB apart), and
the scan plan reads no queue unit and needs no coverage (every byte is read), so it downloads what the
unpushed scan does plus the bisection reads of `_units_bound`."""


def _units_bound(store: Store, b: Bounds, enough: int) -> int:
    """At most how many queue units a topic plan selects, without reading the units, or at least
    `enough` when there may be that many: per queue of the topics (`queueId` bounds applied), its
    files' first unit to `ConsumeQueue.end_bound`, clipped to the `queueOffset` bounds. Counts
    retention's deleted units, fillers and other tags too (the safe side: a scan)."""
    total = 0
    queues = ((topic, queue_id) for topic in sorted(t for t in b.topics if topic_dir_problem(t) is None)
              for queue_id in store.queue_ids(topic) if b.queue_ids is None or queue_id in b.queue_ids)
    for topic, queue_id in queues:
        if total >= enough:
            break
        cq = store.consume_queue(topic, queue_id)
        first, stored_end = cq.unit_span()
        if first >= stored_end:
            continue
        start = max(first, b.queue_lo or 0)
        limit = min(start + enough - total, stored_end)
        if b.queue_hi is not None:
            limit = min(limit, b.queue_hi)
        if start < limit:
            total += min(cq.end_bound(limit), limit) - start
    return total


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
    run: list[int] = []  # the pieces with selected records since the last dense piece
    for number, piece in enumerate([*pieces, None]):
        if piece is None or piece in dense:
            weights = [selected[i] for i in run]
            groups += [(pieces[run[g[0]]][0], pieces[run[g[-1]]][1])
                       for g in group_items(weights, at_least=MIN_QUEUE_TASK_BYTES)]
            run = []
        elif selected[number]:
            run.append(number)
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


def _queue_slices(store: Store, b: Bounds) -> list[QueueSlice]:
    """The queue slices a topic or queue-window plan reads, clipped to the queue-offset bounds."""
    known = set(store.topics())
    slices: list[QueueSlice] = []
    if b.windows is not None:  # an LMQ queue's rows show their own topic and queue (§4.6)
        slices = [s for s in queue_windows_slices(store, b.windows)
                  if _is_lmq(s) or ((b.topics is None or s.topic in b.topics)
                                    and (b.queue_ids is None or s.queue_id in b.queue_ids))]
    else:
        for topic in sorted(b.topics & known):
            for queue_id in store.queue_ids(topic):
                if b.queue_ids is None or queue_id in b.queue_ids:
                    cq = store.consume_queue(topic, queue_id)
                    slices.append(QueueSlice(topic, queue_id, cq.min_offset, cq.max_offset))
    clipped = []
    for s in slices:
        start = s.start if b.queue_lo is None or _is_lmq(s) else max(s.start, b.queue_lo)
        end = s.end if b.queue_hi is None or _is_lmq(s) else min(s.end, b.queue_hi)
        clipped += [QueueSlice(s.topic, s.queue_id, a, z)
                    for a, z in store.consume_queue(s.topic, s.queue_id).spans(start, end)]
    return clipped


def _is_lmq(s: QueueSlice) -> bool:
    return s.topic.startswith(LMQ_PREFIX)


def _queue_tasks(index: int, store: Store, b: Bounds, bounds: tuple[int, int],
                 settings: PlanSettings) -> list[ReadTask]:
    """`QueueSliceTask`s over the slices of a queue-window plan, at most `UNITS_PER_QUEUE_TASK` units
    each, an LMQ queue's slices in tasks of their own (`reading_groups`); the units lost past a queue's
    end go with the task reading up to it (damage.md §3)."""
    clipped = _queue_slices(store, b)
    total_units = sum(s.end - s.start for s in clipped)
    units_per_task = task_size(total_units, UNITS_PER_QUEUE_TASK, settings.min_partitions)
    tags = None if b.tags is None else tuple(sorted(b.tags))
    lo, hi = bounds
    tasks: list[ReadTask] = []
    for group in reading_groups(clipped):
        for packed in pack_ranges([(s.start, s.end) for s in group], units_per_task):
            slices = tuple(QueueSlice(group[i].topic, group[i].queue_id, a, z) for i, a, z in packed)
            tasks.append(QueueSliceTask(index, slices, tags, lo, hi, lost=lost_at_ends(store, slices)))
    return tasks
