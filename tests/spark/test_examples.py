"""The examples the README points to run on a demo store and show its retries, dead letters and system
topics; the demo's per-topic counts are the same from both engines (metadata on the JVM, a scan on Python)."""

from __future__ import annotations

import collections
import re
import runpy
import sys
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession

from helpers.spark_stores import explain_text
from rmqstore.format.brokerconfig import consumer_offsets, parse_fastjson
from rmqstore.writer.demo import LONG_RETRY_TOPIC, create_demo_store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "writer"))  # the scalar reference walker
from scalar_log import walk_log  # noqa: E402


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("examples") / "demo"
    create_demo_store(path, target_bytes=2 << 20, seed=1, segment_size=1 << 20)
    return path


def _run(name: str, store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> str:
    """What examples/<name> prints for `store`, run in the suite's Spark session (its stop() kept out)."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.setattr(sys, "argv", [name, str(store)])
    monkeypatch.setattr(SparkSession, "stop", lambda self: None)
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    return capsys.readouterr().out


def test_topic_counts_are_pushed_and_list_the_system_topics(spark, demo, monkeypatch, capsys) -> None:
    out = _run("topic_counts.py", demo, monkeypatch, capsys)
    assert "PushedAggregation: [COUNT(*), GROUP BY topic]" in out
    shown = {name: int(count) for name, count in re.findall(r"^\|(\S+)\s*\|(\d+)\s*\|$", out, re.MULTILINE)}
    assert shown == collections.Counter(record.topic for record in walk_log(demo)[0])
    assert {"%DLQ%cg-payments", "SCHEDULE_TOPIC_XXXX", "rmq_sys_wheel_timer"} <= shown.keys()


def test_consumer_lag_shows_the_retry_topics_and_dead_letters(spark, demo, monkeypatch, capsys) -> None:
    out = _run("consumer_lag.py", demo, monkeypatch, capsys)
    per_group, dead_letters = out.split("per group and topic", 1)[1].split("dead letters per group:", 1)
    records = walk_log(demo)[0]
    offsets = consumer_offsets(parse_fastjson((demo / "config" / "consumerOffset.json").read_text()))
    retry = "%RETRY%cg-payments"
    waiting = sum(r.topic == retry for r in records) - offsets[retry, "cg-payments"][0]
    assert re.search(rf"^\|\s*cg-payments\|\s*{retry}\|\s*{waiting}\|\s*0\|", per_group, re.MULTILINE)
    assert f"|{LONG_RETRY_TOPIC[:37]}...|" in per_group  # shown truncated
    dead = sum(record.topic == "%DLQ%cg-payments" for record in records)
    assert dead > 0 and re.search(rf"^\|cg-payments\s*\|{dead}\s*\|", dead_letters, re.MULTILINE)


def test_catalog_lists_retry_and_dead_letter_tables(spark, demo, monkeypatch, capsys) -> None:
    try:
        out = _run("catalog_sql.py", demo, monkeypatch, capsys)
    finally:
        for key in ("spark.sql.catalog.rmq", "spark.sql.catalog.rmq.store.broker_a"):
            spark.conf.unset(key)
    tables = out.split("== Physical Plan ==", 1)[0]
    for table in ("%DLQ%cg-payments", "%RETRY%cg-orders", "rmq_sys_wheel_timer", "SCHEDULE_TOPIC_XXXX"):
        assert f"|broker_a |{table} " in tables
    dead = out.split("|from_topic", 1)[1].replace(" ", "")
    assert re.findall(r"^\|[^|]+\|[^|]+\|4\|PaymentTopic\|[0-9A-F]{32}\|$", dead, re.MULTILINE)


def test_quickstart_shows_a_dead_letters_life(spark, demo, monkeypatch, capsys) -> None:
    out = _run("quickstart.py", demo, monkeypatch, capsys)
    life = out.split("|delayLevel|", 1)[1].replace(" ", "")
    rows = [line.split("|") for line in life.splitlines() if line.startswith("|")]
    # cg-payments fails 4 times (maxReconsumeTimes 3): 3 send-backs at levels 3, 4, 5, then the DLQ
    assert [row[2] for row in rows] == (
        ["PaymentTopic"] + ["SCHEDULE_TOPIC_XXXX", "%RETRY%cg-payments"] * 3 + ["%DLQ%cg-payments"])
    assert [(row[4], row[6]) for row in rows] == [
        ("0", "NULL"), ("1", "3"), ("1", "3"), ("2", "4"), ("2", "4"), ("3", "5"), ("3", "5"), ("4", "0")]


def test_demo_topic_counts_equal_on_both_engines(spark, demo, engine_format) -> None:
    """GROUP BY topic over every kind of record the demo writes: pushed to metadata on the JVM engine."""
    counts = (spark.read.format(engine_format).option("verifyCrc", "false").load(str(demo))
              .groupBy("topic").count())
    if engine_format != "rmqstore_python":
        assert "PushedAggregation" in explain_text(counts)
    expected = collections.Counter(record.topic for record in walk_log(demo)[0])
    assert_df_equality(counts, spark.createDataFrame(sorted(expected.items()), counts.schema),
                       ignore_row_order=True)
