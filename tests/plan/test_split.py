"""The pure splitter of work into tasks: exact outputs for given ranges / offsets and task sizes."""

from __future__ import annotations

import pytest

from rmqstore.plan.tasks import (
    clip_ranges,
    even_cuts,
    grid_spans,
    group_items,
    pack_ranges,
    split_offsets,
    split_spans,
    task_count,
    task_size,
)


def test_split_spans_cuts_each_span_into_the_fewest_nearly_equal_pieces() -> None:
    assert split_spans([], 10) == []
    assert split_spans([(5, 5), (7, 3)], 10) == []  # empty spans give no piece
    assert split_spans([(0, 1)], 10) == [(0, 1)]  # one byte
    assert split_spans([(0, 10)], 10) == [(0, 10)]  # exactly the task size
    assert split_spans([(0, 11)], 10) == [(0, 5), (5, 11)]  # one byte more: two halves, not 10 + 1
    assert split_spans([(0, 25)], 10) == [(0, 8), (8, 16), (16, 25)]
    assert split_spans([(0, 4), (4, 30)], 10) == [(0, 4), (4, 12), (12, 21), (21, 30)]  # never across spans
    assert split_spans([(100, 103)], 1) == [(100, 101), (101, 102), (102, 103)]
    with pytest.raises(ValueError, match="max_size must be positive, got 0"):
        split_spans([(0, 10)], 0)


def test_even_cuts_and_grid_spans() -> None:
    assert even_cuts(0, 10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert even_cuts(5, 6, 1) == [(5, 6)]
    assert grid_spans(0, 0, 8) == []
    assert grid_spans(3, 4, 8) == [(3, 4)]  # one byte
    assert grid_spans(0, 8, 8) == [(0, 8)]  # exactly one segment
    assert grid_spans(5, 20, 8) == [(5, 8), (8, 16), (16, 20)]
    assert grid_spans(8, 24, 8) == [(8, 16), (16, 24)]


def test_clip_ranges() -> None:
    assert clip_ranges([(0, 5), (8, 12), (20, 30)], 3, 21) == ((3, 5), (8, 12), (20, 21))
    assert clip_ranges([(0, 5)], 5, 9) == ()


def test_task_count_and_size_honour_min_tasks() -> None:
    assert task_count(0, 10) == 1
    assert task_count(10, 10) == 1
    assert task_count(11, 10) == 2
    assert task_count(11, 10, min_tasks=5) == 5
    assert task_size(100, 30) == 30
    assert task_size(100, 30, min_tasks=8) == 13  # ceil(100 / 8)
    assert task_size(100, 30, min_tasks=2) == 30  # the cap wins
    assert task_size(3, 30, min_tasks=8) == 1  # at least one
    assert task_size(0, 30, min_tasks=8) == 30  # nothing to split


def test_split_offsets_into_consecutive_chunks() -> None:
    assert split_offsets([], 3) == []
    assert split_offsets([7], 3) == [(7,)]
    assert split_offsets([1, 2, 3], 3) == [(1, 2, 3)]  # exactly the task size
    assert split_offsets([1, 2, 3, 4], 3) == [(1, 2), (3, 4)]
    assert split_offsets(list(range(10)), 3) == [(0, 1), (2, 3, 4), (5, 6), (7, 8, 9)]
    assert split_offsets([1, 2, 3], 100, min_tasks=2) == [(1,), (2, 3)]
    assert split_offsets([1, 2, 3], 100, min_tasks=8) == [(1,), (2,), (3,)]  # never an empty task


def test_pack_ranges_fills_tasks_and_cuts_where_one_is_full() -> None:
    assert pack_ranges([], 10) == []
    assert pack_ranges([(0, 1)], 10) == [[(0, 0, 1)]]  # one byte
    assert pack_ranges([(0, 10)], 10) == [[(0, 0, 10)]]  # exactly the task size
    assert pack_ranges([(0, 25)], 10) == [[(0, 0, 10)], [(0, 10, 20)], [(0, 20, 25)]]
    tiny = [(i * 10, i * 10 + 2) for i in range(7)]  # many tiny ranges are coalesced
    assert pack_ranges(tiny, 6) == [[(0, 0, 2), (1, 10, 12), (2, 20, 22)],
                                    [(3, 30, 32), (4, 40, 42), (5, 50, 52)],
                                    [(6, 60, 62)]]
    assert pack_ranges(tiny, 100, max_ranges=3) == [[(0, 0, 2), (1, 10, 12), (2, 20, 22)],
                                                    [(3, 30, 32), (4, 40, 42), (5, 50, 52)],
                                                    [(6, 60, 62)]]  # the cap on ranges per task
    assert pack_ranges([(0, 4), (10, 18)], 6) == [[(0, 0, 4), (1, 10, 12)], [(1, 12, 18)]]
    assert pack_ranges([(5, 5), (0, 3)], 6) == [[(1, 0, 3)]]


def test_group_items_at_least_and_at_most() -> None:
    assert group_items([]) == []
    assert group_items([1, 2, 3]) == [[0, 1, 2]]
    assert group_items([1, 2, 3, 4], at_least=3) == [[0, 1], [2], [3]]  # closed once it reaches 3
    assert group_items([1, 2, 3, 4], at_most=5) == [[0, 1], [2], [3]]  # closed before it would pass 5
    assert group_items([9, 1, 1], at_most=5) == [[0], [1, 2]]  # a heavier item still gets a group
    assert group_items([0, 0, 5, 0], at_least=5) == [[0, 1, 2], [3]]
