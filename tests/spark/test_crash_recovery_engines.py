"""A crash copy ends where RocketMQ's abnormal recovery ends on both engines (docs/format.md §6.3,
python/rmqstore/store/commitlog.py, connector store/CommitLog.scala): a page of one record never
written, three whole records after it that the index and the consume queues still point at. Every
access path (scan, consume queues, key index, offsets) returns the records before the damaged one
only, in FAILFAST, and says which path it took (`statsDir` plan diagnostics)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from helpers.crash_store import lost_page_crash_copy

pytestmark = pytest.mark.spark


def _read(spark, fmt: str, root: str, stats: Path, where) -> tuple[list[int], list[str]]:
    """commitLogOffsets of the rows matching `where` and the access paths the plan used."""
    df = spark.read.format(fmt).option("statsDir", str(stats)).load(root).where(where)
    offsets = sorted(r.commitLogOffset for r in df.select("commitLogOffset").collect())
    events = [json.loads(line) for path in stats.glob("*.jsonl") for line in path.open()]
    return offsets, [a for e in events if e["event"] == "plan" for a in e["access"]]


def test_every_path_ends_at_the_recovered_end(spark, engine_format: str, tmp_path: Path) -> None:
    lost = lost_page_crash_copy(tmp_path / "s")
    kept, after = lost.kept, lost.after
    cases = [
        (F.col("commitLogOffset") >= 0, [r.physical_offset for r in kept], "scan"),
        (F.col("topic") == "U", [r.physical_offset for r in kept if r.topic == "U"], "queues"),
        (F.col("key").isin("k1", "k8", "k9", "k11"), [kept[1].physical_offset], "key-index"),
        (F.col("uniqKey").isin(kept[2].uniq_key, after[0].uniq_key), [kept[2].physical_offset], "key-index"),
        (F.col("msgId").isin(kept[3].msg_id, after[1].msg_id), [kept[3].physical_offset], "offsets"),
    ]
    for i, (where, expected, access) in enumerate(cases):
        got = _read(spark, engine_format, lost.root, tmp_path / f"stats{i}", where)
        assert got == (expected, [access]), where
