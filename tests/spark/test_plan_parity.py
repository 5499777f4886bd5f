"""Both engines plan the same tasks for the same store and query (issue #18 item 4): `topic = T` on a
store of 1 MiB segments where T's records are a quarter of the log planned 2 tasks on the Python
engine and 1 on the JVM engine, which packed up to a million queue units per task. Both now cut work
with the one splitter (python/rmqstore/plan/tasks.py, connector plan/Split.scala) along the scan's
pieces."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from helpers.spark_stores import read_stats
from rmqstore.plan.planner import PlanSettings, plan_read
from rmqstore.plan.predicates import InSet
from rmqstore.plan.tasks import QueueSliceTask
from rmqstore.store import Store
from rmqstore.writer.store_writer import MessageSpec, StoreWriter

MESSAGES = 10_000
SEGMENT = 1 << 20


@pytest.fixture(scope="module")
def quarter_topic_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10,000 messages of ~1 KB over 11 segments of 1 MiB; every fourth is topic T (~2.5 MB, 25% of each
    segment: sparse, so read through its consume queues)."""
    path = tmp_path_factory.mktemp("parity") / "store"
    with StoreWriter(path, segment_size=SEGMENT, cq_segment_size=20 * 4096, index_hash_slots=1024,
                     index_entries=MESSAGES) as writer:
        for topic in ("Bulk", "T"):
            writer.declare_topic(topic, 2)
        for i in range(MESSAGES):
            writer.append(MessageSpec(topic="T" if i % 4 == 0 else "Bulk", body=b"x" * 900))
    return path


def test_python_planner_cuts_the_topic_along_scan_pieces(quarter_topic_store: Path) -> None:
    with Store(str(quarter_topic_store)) as store:
        plan = plan_read([store], [(InSet("topic", frozenset({"T"})),)], PlanSettings())
        pieces = [(task.lo, task.hi) for task in plan.tasks if isinstance(task, QueueSliceTask)]
        assert plan.access == ["queues"] and len(plan.tasks) == len(pieces) == 2
        assert pieces[0][0] == 0 and pieces[-1][1] == store.max_offset and pieces[0][1] == pieces[1][0]
        assert pieces[0][1] % SEGMENT == 0  # cut at a segment boundary, once 2 MiB of T's records are in


def test_topic_query_plans_the_same_tasks_on_both_engines(spark: SparkSession, engine_format: str,
                                                          quarter_topic_store: Path, stats_dir: Path) -> None:
    df = (spark.read.format(engine_format).option("statsDir", str(stats_dir)).load(str(quarter_topic_store))
          .where(F.col("topic") == "T"))
    assert df.count() == MESSAGES // 4
    plans = [s for s in read_stats(stats_dir) if s["event"] == "plan"]
    assert [(p["access"], p["tasks"]) for p in plans] == [(["queues"], 2)], plans
