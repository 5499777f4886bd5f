"""Sorted, disjoint commit-log byte ranges [start, end): union, subtraction, clipping (the JVM's
`store/Ranges.scala`). The one range algebra of the planner, coverage and the side index."""

from __future__ import annotations

from collections.abc import Sequence

Range = tuple[int, int]


def merge_ranges(ranges: Sequence[Range]) -> list[Range]:
    """The union of byte ranges [start, end) (any order, may overlap or touch) as sorted, disjoint,
    non-adjacent ranges (`Ranges.union`)."""
    merged: list[Range] = []
    for start, end in sorted(r for r in ranges if r[0] < r[1]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def subtract_ranges(ranges: Sequence[Range], removed: Sequence[Range]) -> tuple[Range, ...]:
    """The parts of `ranges` outside every `removed` range (both sorted and disjoint), in order, in one
    pass over both (`Ranges.subtract`)."""
    out: list[Range] = []
    i = 0
    for start, end in ranges:
        while i < len(removed) and removed[i][1] <= start:
            i += 1
        j = i
        while j < len(removed) and removed[j][0] < end:
            if removed[j][0] > start:
                out.append((start, removed[j][0]))
            start = max(start, removed[j][1])
            j += 1
        if start < end:
            out.append((start, end))
    return tuple(out)


def clip_ranges(ranges: Sequence[Range], lo: int, hi: int) -> tuple[Range, ...]:
    """`ranges` clipped to [lo, hi), empty pieces dropped (`Ranges.within`)."""
    return tuple((max(a, lo), min(b, hi)) for a, b in ranges if max(a, lo) < min(b, hi))
