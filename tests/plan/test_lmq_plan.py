"""Reading `%LMQ%` queues by name (docs/format.md §4.6) in the plan layer, on the LMQ conformance fixture:
an LMQ window keeps a record by its multi-dispatch properties, and every plan, stream or batch, whatever
else bounds it, reads an LMQ queue's units in tasks of their own: one row per queue unit read."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from plan_helpers import run_plan

from rmqstore.format.table import arrow_schema
from rmqstore.plan.execute import ReadSettings, run_task
from rmqstore.plan.planner import PlanSettings, ReadPlan
from rmqstore.plan.predicates import Compare, QueueWindow, QueueWindows, mask, predicate_columns
from rmqstore.plan.stream import plan_stream_batch
from rmqstore.store import Store

LMQ_STORE = Path(__file__).parents[1] / "conformance" / "fixtures" / "rmq-5.4.0-lmq" / "store"
BOTH = QueueWindows((QueueWindow("%LMQ%q1", 0, 0, 10), QueueWindow("TopicLmq", 0, 0, 7)))
"""Record 1055 (TopicLmq/0 offset 2) is also %LMQ%q1 offset 3."""
COLUMNS = ["commitLogOffset", "topic", "queueId", "queueOffset", "sysFlag", "properties"]


def _task_queues(plan: ReadPlan) -> list[list[str]]:
    """The queues each task reads, sorted."""
    return sorted(sorted({s.topic for s in task.slices}) for task in plan.tasks)


def test_an_lmq_window_keeps_records_by_their_multi_dispatch_properties() -> None:
    window = QueueWindows((QueueWindow("%LMQ%q1", 0, 3, 5),))
    dispatched = [("INNER_MULTI_DISPATCH", "%LMQ%q1,%LMQ%q2"), ("INNER_MULTI_QUEUE_OFFSET", "3,2")]
    rows = [("TopicLmq", dispatched), ("%RETRY%g", dispatched),  # never multi-dispatched
            ("TopicLmq", [("INNER_MULTI_DISPATCH", "%LMQ%q1"), ("INNER_MULTI_QUEUE_OFFSET", "5")]),
            ("TopicLmq", [("INNER_MULTI_DISPATCH", "%LMQ%q1,%LMQ%q2"), ("INNER_MULTI_QUEUE_OFFSET", "4")]),
            ("TopicLmq", [])]
    schema = arrow_schema(["topic", "queueId", "queueOffset", "sysFlag", "properties"])
    batch = pa.RecordBatch.from_pylist([{"topic": t, "queueId": 1, "queueOffset": 3, "sysFlag": 0,
                                         "properties": p} for t, p in rows], schema=schema)
    assert mask(batch, [window]).to_pylist() == [True, False, False, False, False]
    assert "properties" in predicate_columns([window])
    assert "properties" not in predicate_columns([QueueWindows((QueueWindow("TopicLmq", 0, 0, 1),))])


def test_a_batch_plan_reads_each_queue_unit_whatever_else_bounds_it() -> None:
    found, plan = run_plan(LMQ_STORE, [BOTH, Compare("commitLogOffset", "=", 1055)], COLUMNS)
    assert plan.access == ["queues"] and found == [1055, 1055]
    assert _task_queues(plan) == [["%LMQ%q1"], ["TopicLmq"]]
    # queueOffset compares the stored offset: an LMQ queue's slices are not clipped by it
    found, _ = run_plan(LMQ_STORE, [QueueWindows(BOTH.windows[:1]), Compare("queueOffset", ">=", 5)], COLUMNS)
    assert found == [2719, 3159, 3559]  # stored queueOffset 5, 6, 6 (q1 offsets 7, 8, 9)


def test_a_stream_batch_reads_an_lmq_queue_in_tasks_of_its_own() -> None:
    with Store.open(str(LMQ_STORE)) as store:
        plan = plan_stream_batch([store], [(BOTH,)], PlanSettings())
        found = sorted(o for task in plan.tasks for b in run_task(task, store, COLUMNS, ReadSettings())
                       for o in b.column("commitLogOffset").to_pylist())
    assert _task_queues(plan) == [["%LMQ%q1"], ["TopicLmq"]]
    assert found.count(1055) == 2 and len(found) == 17
