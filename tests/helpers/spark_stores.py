"""Small random stores for the Spark tests, written with `rmqstore.writer.StoreWriter`."""

from __future__ import annotations

import json
import random
from pathlib import Path

from pyspark.sql import DataFrame

from rmqstore.writer import MessageSpec, StoreWriter

SMALL_STORE_MESSAGES = 400
TOPICS = ("TopicA", "TopicB", "TopicC")
TAGS = ("TagA", "TagB", None)
KEY_POOL = tuple(f"k{i}" for i in range(12))


def write_store(path: Path, messages: int, *, seed: int, segment_size: int = 16 * 1024,
                index_entries: int = 300) -> None:
    """`messages` messages with random topics, tags, 0-3 keys (some repeated), bodies and times.

    Small segments and index files make every read touch several segments and index files.
    """
    rng = random.Random(seed)
    with StoreWriter(path, segment_size=segment_size, cq_segment_size=20 * 64, index_hash_slots=64,
                     index_entries=index_entries, seed=seed) as writer:
        for topic in TOPICS:
            writer.declare_topic(topic, 2)
        for i in range(messages):
            keys = rng.sample(KEY_POOL, rng.choice((0, 1, 1, 2, 3)))
            writer.append(MessageSpec(topic=rng.choice(TOPICS), body=rng.randbytes(rng.randint(0, 200)),
                                      tags=rng.choice(TAGS), keys=keys or None,
                                      properties={"seq": str(i)}))
            writer.advance_clock(rng.choice((0, 10, 500, 1500)))
        writer.set_consumer_offset("TopicA", "cg1", 0, 5)
        writer.set_consumer_offset("TopicA", "cg1", 1, 7)


def explain_text(df: DataFrame) -> str:
    """What `df.explain("formatted")` prints: the scan node lists PushedFilters (simple mode does not)."""
    jvm = df.sparkSession._jvm
    mode = jvm.org.apache.spark.sql.execution.ExplainMode.fromString("formatted")
    return df._jdf.queryExecution().explainString(mode)


def read_stats(stats_dir: Path) -> list[dict]:
    """Every JSON line the reader wrote under `statsDir`."""
    if not stats_dir.is_dir():
        return []
    return [json.loads(line) for f in sorted(stats_dir.iterdir()) for line in f.read_text().splitlines()]


def scan_metrics(df: DataFrame) -> tuple[list, dict[str, int]]:
    """Collect `df` once: its rows and the SQL metrics of its one rmqstore scan node of the JVM engine
    (driver and tasks summed)."""
    rows = df.collect()
    plan = df._jdf.queryExecution().executedPlan()
    if plan.nodeName() == "AdaptiveSparkPlan":
        plan = plan.executedPlan()
    leaves = plan.collectLeaves()
    nodes = [leaves.apply(i) for i in range(leaves.size())]
    scans = [node for node in nodes if node.nodeName().startswith("BatchScan")]
    assert len(scans) == 1, plan.toString()
    metrics = scans[0].metrics()
    names = metrics.keys().toSeq()
    return rows, {names.apply(i): metrics.apply(names.apply(i)).value() for i in range(names.size())}
