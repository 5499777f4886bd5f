"""Read tasks: the picklable units of work a plan is made of (one per Spark partition).

`lo`/`hi` bound the commit-log offsets every task may return ([lo, hi)); `None` means unbounded.
`exclude` lists commit-log byte ranges [start, end) a queue task leaves out because the plan scans
them in `RangesTask`s (bytes consume queues do not cover, `Store.uncovered_ranges`): each record is
read by one task only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import mmh3
import numpy as np

ProbeKind = Literal["key", "uniqKey", "keysContain"]


@dataclass(frozen=True)
class RangeTask:
    """Scan the commit log over the byte range [start, end) (start is resynced to a record)."""

    store: int
    start: int
    end: int


@dataclass(frozen=True)
class RangesTask:
    """Scan several commit-log byte ranges [start, end), ascending, each starting at a record start."""

    store: int
    ranges: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class OffsetsTask:
    """Read the records at these physical offsets (ascending)."""

    store: int
    offsets: tuple[int, ...]
    user_points: bool = False
    """True when the offsets come from the query (msgId / commitLogOffset values) and may not be
    record starts: such offsets give no row instead of an error."""


@dataclass(frozen=True)
class KeyProbeTask:
    """Probe the index for these values on the executor, then read the candidates (confirmed by the reader).

    The probe values of a read are spread over `buckets` tasks by a stable hash (`probe_bucket`). A
    record matching values of several buckets is returned only by its owner, the bucket of its
    smallest matching token, so no row is read twice.
    """

    store: int
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


def merge_ranges(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of byte ranges [start, end) as sorted, disjoint, non-adjacent ranges."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(r for r in ranges if r[0] < r[1]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def subtract_ranges(ranges: Sequence[tuple[int, int]],
                    removed: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """The parts of `ranges` outside every `removed` range (both sorted and disjoint), in order."""
    out: list[tuple[int, int]] = []
    for start, end in ranges:
        for cut_start, cut_end in removed:
            if cut_end <= start or cut_start >= end:
                continue
            if cut_start > start:
                out.append((start, cut_start))
            start = max(start, cut_end)
        if start < end:
            out.append((start, end))
    return tuple(out)


@dataclass(frozen=True)
class QueueSlice:
    """Units [start, end) of one consume queue."""

    topic: str
    queue_id: int
    start: int
    end: int


@dataclass(frozen=True)
class QueueSliceTask:
    """Read the records that these consume-queue slices point to (tagsCode-prefiltered)."""

    store: int
    slices: tuple[QueueSlice, ...]
    tags: tuple[str, ...] | None
    lo: int | None
    hi: int | None
    exclude: tuple[tuple[int, int], ...] = ()


ReadTask = RangeTask | RangesTask | OffsetsTask | KeyProbeTask | QueueSliceTask
