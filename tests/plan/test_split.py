"""The pure splitter of work into tasks: exact outputs for given ranges / offsets and task sizes. The
vectors live in split_vectors.json, which the connector's SplitSuite checks against its Split.scala,
so both engines cut work alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rmqstore.plan import tasks
from rmqstore.plan.tasks import split_spans
from rmqstore.store.ranges import clip_ranges

VECTORS = json.loads((Path(__file__).parent / "split_vectors.json").read_text())
CASES = [(name, case) for name, cases in VECTORS.items() if name != "comment" for case in cases]


@pytest.mark.parametrize(("name", "case"), CASES, ids=[f"{name}-{i}" for i, (name, _) in enumerate(CASES)])
def test_splitter_gives_the_shared_vectors_exact_output(name: str, case: dict) -> None:
    result = getattr(tasks, name)(**case["args"])
    assert json.loads(json.dumps(result)) == case["out"]


def test_vectors_cover_every_splitter_function() -> None:
    assert set(VECTORS) - {"comment"} == {"task_count", "task_size", "even_cuts", "split_spans", "grid_spans",
                                          "split_offsets", "pack_ranges", "group_items"}
    assert all(len(VECTORS[name]) >= 2 for name in VECTORS if name != "comment")


def test_split_spans_refuses_a_non_positive_size() -> None:
    with pytest.raises(ValueError, match="max_size must be positive, got 0"):
        split_spans([(0, 10)], 0)


def test_clip_ranges() -> None:
    assert clip_ranges([(0, 5), (8, 12), (20, 30)], 3, 21) == ((3, 5), (8, 12), (20, 21))
    assert clip_ranges([(0, 5)], 5, 9) == ()
