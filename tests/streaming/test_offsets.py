"""Stream offsets without Spark: their JSON form and the admission of queue units."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rmqstore.spark.offsets import StoreOffset, admit_queue_units, offsets_from_json, offsets_to_json
from rmqstore.store.tail import NO_LIMITS, Limits


def test_offsets_json_has_a_fixed_key_order_and_round_trips():
    offsets = {"b": StoreOffset(queues={("T2", 10): 4, ("T1", 2): 7, ("T1", 10): 1}),
               "a": StoreOffset(position=4096)}
    doc = offsets_to_json(offsets)
    assert json.dumps(doc) == ('{"b": {"queueOffsets": {"T1": {"2": 7, "10": 1}, "T2": {"10": 4}}}, '
                               '"a": {"commitLogOffset": 4096}}')
    assert offsets_from_json(json.loads(json.dumps(doc)), ["b", "a"]) == offsets
    with pytest.raises(ValueError, match="no entry for store"):
        offsets_from_json(doc, ["a", "c"])


def test_admit_queue_units_takes_oldest_messages_first():
    units = {("T", 0): np.array([(0, 100), (300, 100), (500, 100)], dtype=[("phy", "<i8"), ("size", "<i4")]),
             ("T", 1): np.array([(100, 200), (400, 100)], dtype=[("phy", "<i8"), ("size", "<i4")])}
    starts = {("T", 0): 0, ("T", 1): 0}
    ends = {("T", 0): 3, ("T", 1): 2}

    def units_of(queue, start, end):
        return units[queue][start:end]

    assert admit_queue_units(starts, ends, units_of, NO_LIMITS) == ends
    assert admit_queue_units(starts, ends, units_of, Limits(records=3)) == {("T", 0): 2, ("T", 1): 1}
    assert admit_queue_units(starts, ends, units_of, Limits(bytes=350)) == {("T", 0): 1, ("T", 1): 1}
    assert admit_queue_units(starts, ends, units_of, Limits(bytes=1)) == {("T", 0): 1, ("T", 1): 0}
