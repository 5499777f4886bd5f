"""Read tasks: the picklable units of work a plan is made of (one per Spark partition), and the one
pure splitter that cuts work into them (ranges, sorted offset lists, weighted items; no I/O).

`lo`/`hi` bound the commit-log offsets every task may return ([lo, hi)); `None` means unbounded.
`exclude` lists commit-log byte ranges [start, end) a queue task leaves out because the plan scans
them in `RangesTask`s (bytes consume queues do not cover, `Store.uncovered_ranges`): each record is
read by one task only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import mmh3
import numpy as np

from rmqstore.plan.predicates import ProbeKind
from rmqstore.store.consumequeue import UnitDamage


@dataclass(frozen=True)
class RangeTask:
    """Scan the commit log over the byte range [start, end) (start is resynced to a record)."""

    store_index: int
    start: int
    end: int
    summarize: bool = False
    """Also cache the store-time summary of the records read (`rmqstore.store.timeline.summarizing`):
    a piece of a remote segment whose summary a time-window plan lacked."""


@dataclass(frozen=True)
class RangesTask:
    """Scan several commit-log byte ranges [start, end), ascending, each starting at a record start."""

    store_index: int
    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class OffsetsTask:
    """Read the records at these physical offsets (ascending)."""

    store_index: int
    offsets: tuple[int, ...]
    user_points: bool = False
    """True when the offsets come from the query (msgId / commitLogOffset values) and may not be
    record starts: such offsets give no row instead of an error."""


@dataclass(frozen=True)
class KeyProbeTask:
    """Probe the index for these values on the executor, then read the candidates once (the reader
    confirms the rows against the predicates, store times included).

    The probe values of a read are spread over `buckets` tasks by a stable hash (`probe_bucket`). A
    record matching values of several buckets is returned only by its owner, the bucket of its
    smallest matching token, so no row is read twice.
    """

    store_index: int
    kind: ProbeKind
    values: tuple[str, ...]
    bucket: int
    buckets: int
    all_values: tuple[str, ...]
    topics: tuple[str, ...] | None
    lo: int | None
    hi: int | None


def probe_bucket(value: str, buckets: int) -> int:
    """The stable (mmh3, process-independent) bucket of a probe value."""
    return mmh3.hash(value, signed=False) % buckets


def within(offsets: np.ndarray, lo: int | None, hi: int | None,
           exclude: Sequence[tuple[int, int]] = ()) -> np.ndarray:
    """The offsets in [lo, hi) (None: unbounded) and outside every `exclude` range (sorted, disjoint)."""
    keep = np.ones(len(offsets), dtype=bool)
    if lo is not None:
        keep &= offsets >= lo
    if hi is not None:
        keep &= offsets < hi
    if exclude:
        starts = np.array([start for start, _ in exclude], dtype=np.int64)
        ends = np.array([end for _, end in exclude], dtype=np.int64)
        at = np.searchsorted(starts, offsets, side="right") - 1  # the last range starting at or before
        keep &= (at < 0) | (offsets >= ends[np.maximum(at, 0)])
    return offsets[keep]


# ---- the splitter: work -> task-sized pieces (pure) ---------------------------------------------


def task_count(total: int, per_task: int, min_tasks: int | None = None) -> int:
    """Tasks for `total` units at most `per_task` each, and at least `min_tasks` (at least 1)."""
    return max(min_tasks or 1, -(-total // per_task))


def task_size(total: int, max_size: int, min_tasks: int | None = None) -> int:
    """The size of a task: at most `max_size`, small enough that `total` makes `min_tasks` tasks, >= 1."""
    if min_tasks and total:
        return max(1, min(max_size, -(-total // min_tasks)))
    return max_size


def even_cuts(lo: int, hi: int, pieces: int) -> list[tuple[int, int]]:
    """[lo, hi) cut into `pieces` consecutive ranges whose lengths differ by at most one."""
    return list(pairwise([lo + (hi - lo) * i // pieces for i in range(pieces)] + [hi]))


def split_spans(spans: Sequence[tuple[int, int]], max_size: int) -> list[tuple[int, int]]:
    """Each span [start, end) (a piece never crosses spans, e.g. segments) cut into the fewest
    nearly equal pieces of at most `max_size`; empty spans give none."""
    if max_size <= 0:
        raise ValueError(f"max_size must be positive, got {max_size}")
    return [piece for lo, hi in spans if lo < hi for piece in even_cuts(lo, hi, -(-(hi - lo) // max_size))]


def grid_spans(lo: int, hi: int, step: int) -> list[tuple[int, int]]:
    """[lo, hi) cut at the multiples of `step` (e.g. segment boundaries of a log of `step`-byte segments)."""
    cuts = range(lo - lo % step + step, hi, step)
    return list(pairwise([lo, *cuts, hi])) if lo < hi else []


def split_offsets(offsets: Sequence[int], per_task: int,
                  min_tasks: int | None = None) -> list[tuple[int, ...]]:
    """Sorted offsets cut into consecutive chunks (hence grouped by segment): `task_count` of them, at
    most one per offset, sizes differing by at most one."""
    if not offsets:
        return []
    pieces = min(task_count(len(offsets), per_task, min_tasks), len(offsets))
    return [tuple(offsets[a:b]) for a, b in even_cuts(0, len(offsets), pieces)]


def pack_ranges(ranges: Sequence[tuple[int, int]], capacity: int,
                max_ranges: int | None = None) -> list[list[tuple[int, int, int]]]:
    """Ranges [start, end) packed in order into tasks of `capacity` total length and at most
    `max_ranges` pieces: a range is cut where a task fills up. Per task, its pieces as
    (index into `ranges`, start, end)."""
    tasks: list[list[tuple[int, int, int]]] = []
    group: list[tuple[int, int, int]] = []
    held = 0
    for index, (start, end) in enumerate(ranges):
        while start < end:
            piece = min(end, start + capacity - held)
            group.append((index, start, piece))
            held += piece - start
            start = piece
            if held >= capacity or (max_ranges is not None and len(group) >= max_ranges):
                tasks.append(group)
                group, held = [], 0
    if group:
        tasks.append(group)
    return tasks


def group_items(weights: Sequence[float], *, at_least: float | None = None,
                at_most: float | None = None) -> list[list[int]]:
    """Indexes of whole items grouped in order: a group is closed once its weight reaches `at_least`,
    or before an item that would take it past `at_most` (a heavier item still gets a group)."""
    groups: list[list[int]] = []
    group: list[int] = []
    held = 0.0
    for index, weight in enumerate(weights):
        if group and at_most is not None and held + weight > at_most:
            groups.append(group)
            group, held = [], 0.0
        group.append(index)
        held += weight
        if at_least is not None and held >= at_least:
            groups.append(group)
            group, held = [], 0.0
    if group:
        groups.append(group)
    return groups


@dataclass(frozen=True)
class QueueSlice:
    """Units [start, end) of one consume queue."""

    topic: str
    queue_id: int
    start: int
    end: int


@dataclass(frozen=True)
class QueueSliceTask:
    """Read the records that these consume-queue slices point to (tagsCode-prefiltered); a unit that
    points at no valid record is damage (docs/damage.md §3), and so is a damaged unit, unless
    `coverage`: the plan scans the bytes no unit covers, its record among them (a batch topic plan)."""

    store_index: int
    slices: tuple[QueueSlice, ...]
    tags: tuple[str, ...] | None
    lo: int | None
    hi: int | None
    exclude: tuple[tuple[int, int], ...] = ()
    coverage: bool = False
    lost: tuple[UnitDamage, ...] = ()
    """Units lost past the end of queues whose last slice is this task's (damage.md §3, found while planning:
    `rmqstore.plan.queues.lost_at_ends`): damage the task reports as it reports a damaged unit."""


ReadTask = RangeTask | RangesTask | OffsetsTask | KeyProbeTask | QueueSliceTask
