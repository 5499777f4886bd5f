"""Planning one micro-batch of a stream (design §4.4): the batch's offsets, given as the predicates a batch
read of the same offsets uses, become the batch planner's task kinds, cut by the one splitter.

A stream batch of one store is one of
- log mode, `commitLogOffset >= start AND commitLogOffset < end`: `RangeTask`s, the range cut at
  segment boundaries (records never span segments, spec §2.1) and each part into the fewest nearly
  equal pieces of at most `max_bytes_per_partition` bytes (`grid_spans`, `split_spans`);
- queue mode, `QueueWindows` (per queue, queue offsets [start, end)): `QueueSliceTask`s of whole
  windows, grouped in queue order into tasks of at most `max_bytes_per_partition` record bytes (a
  heavier window gets a task of its own; `group_items`), an `%LMQ%` queue's apart (§4.6).
Log mode is cut as the JVM engine cuts it. Offsets are taken as given, never clipped to what the store
still holds: data retention deleted is reported by the stream reader when a task runs (failOnDataLoss).
A unit of a window that points at no valid record is damage, as in a batch queue slice, and so are units
lost past the end of a queue a window reaches (damage.md §3).
"""

from __future__ import annotations

from collections.abc import Sequence

from rmqstore.plan.planner import PlanSettings, ReadPlan
from rmqstore.plan.predicates import Bounds, Predicate, QueueWindows, bounds, describe
from rmqstore.plan.queues import lost_at_ends, queue_windows_slices, reading_groups
from rmqstore.plan.tasks import (
    QueueSliceTask,
    RangeTask,
    ReadTask,
    grid_spans,
    group_items,
    split_spans,
)
from rmqstore.store import Store


def plan_stream_batch(stores: Sequence[Store], predicates: Sequence[Sequence[Predicate]],
                      settings: PlanSettings) -> ReadPlan:
    """The tasks reading, for each store, exactly the records of its stream batch (see the module);
    ValueError for predicates that are not a stream batch."""
    plan = ReadPlan()
    for index, (store, preds) in enumerate(zip(stores, predicates, strict=True)):
        b = bounds(preds)
        if b.windows is not None and b == Bounds(windows=b.windows):
            tasks = _window_tasks(index, store, b.windows, settings)
            plan.access.append("queues" if tasks else "empty")
        elif b.lo is not None and b.hi is not None and b == Bounds(lo=b.lo, hi=b.hi):
            tasks = _log_tasks(index, store, b.lo, b.hi, settings)
            plan.access.append("range" if tasks else "empty")
        else:
            raise ValueError(f"not a stream batch: {[describe(p) for p in preds]} (expected a commit-log "
                             "range [start, end) or queue windows)")
        plan.tasks.extend(tasks)
    return plan


def _log_tasks(index: int, store: Store, start: int, end: int, settings: PlanSettings) -> list[ReadTask]:
    if start >= end:
        return []
    spans = grid_spans(start, end, store.segment_size or end - start)
    return [RangeTask(index, a, z) for a, z in split_spans(spans, settings.max_bytes_per_partition)]


def _window_tasks(index: int, store: Store, windows: QueueWindows, settings: PlanSettings) -> list[ReadTask]:
    """Whole windows grouped by record bytes, an LMQ queue's in tasks of its own (`reading_groups`); the
    units lost past a queue's end go with the window reaching it (damage.md §3)."""
    tasks: list[ReadTask] = []
    for slices in reading_groups([s for s in queue_windows_slices(store, windows) if s.start < s.end]):
        sizes = [int(store.consume_queue(s.topic, s.queue_id).units(s.start, s.end)["size"].sum())
                 for s in slices]
        for group in group_items(sizes, at_most=settings.max_bytes_per_partition):
            together = tuple(slices[i] for i in group)
            lost = lost_at_ends(store, together)
            tasks.append(QueueSliceTask(index, together, None, None, None, lost=lost))
    return tasks
