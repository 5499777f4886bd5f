"""Pushdown on == pushdown off == Store API, row for row, for random predicate combinations (AND, and
an OR, which Spark pushes to the JVM engine only), on both engines (the `engine_format` fixture)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from chispa import assert_df_equality
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from helpers.spark_expected import expected_offsets, store_rows
from helpers.spark_stores import KEY_POOL, TAGS, TOPICS

SQL_COLUMNS = "commitLogOffset, topic, queueId, queueOffset, key, tags, msgId, storeTimestamp"


@pytest.fixture(scope="module")
def rows(small_store: Path) -> list[dict]:
    return store_rows(small_store)


def _read(spark: SparkSession, fmt: str, store: Path, pushdown: bool) -> DataFrame:
    return spark.read.format(fmt).option("pushdown", str(pushdown).lower()).load(str(store))


def _predicates(rows: list[dict]) -> st.SearchStrategy:
    """(Spark column expression, Python row predicate) pairs; combined with AND by the test."""
    times = sorted({r["storeTimestamp"] for r in rows})
    offsets = sorted(r["commitLogOffset"] for r in rows)
    key_strings = sorted({r["key"] for r in rows if r["key"]})
    msg_ids = [r["msgId"] for r in rows]

    def key_eq(k: str):
        return F.col("key") == k, lambda r: r["key"] == k

    def key_in(ks: list[str]):
        return F.col("key").isin(ks), lambda r: r["key"] in ks

    def topic_eq(t: str):
        return F.col("topic") == t, lambda r: r["topic"] == t

    def queue(t: str, q: int, lo: int):
        return ((F.col("topic") == t) & (F.col("queueId") == q) & (F.col("queueOffset") >= lo),
                lambda r: r["topic"] == t and r["queueId"] == q and r["queueOffset"] >= lo)

    def tags_eq(t: str):
        return F.col("tags") == t, lambda r: r["tags"] == t

    def time_window(a: dt.datetime, b: dt.datetime):
        lo, hi = min(a, b), max(a, b)
        return (F.col("storeTimestamp").between(lo, hi), lambda r: lo <= r["storeTimestamp"] <= hi)

    def offset_range(a: int, b: int):
        lo, hi = min(a, b), max(a, b)
        return ((F.col("commitLogOffset") > lo) & (F.col("commitLogOffset") <= hi),
                lambda r: lo < r["commitLogOffset"] <= hi)

    def msg_id_eq(m: str):
        return F.col("msgId") == m, lambda r: r["msgId"] == m

    return st.one_of(
        st.sampled_from(key_strings + list(KEY_POOL) + ["nope", "k1 k2"]).map(key_eq),
        st.lists(st.sampled_from([*key_strings, "nope"]), min_size=1, max_size=4).map(key_in),
        st.sampled_from(TOPICS).map(topic_eq),
        st.builds(queue, st.sampled_from(TOPICS), st.integers(0, 1), st.integers(0, 40)),
        st.sampled_from([t for t in TAGS if t]).map(tags_eq),
        st.builds(time_window, st.sampled_from(times), st.sampled_from(times)),
        st.builds(offset_range, st.sampled_from(offsets), st.sampled_from(offsets)),
        st.sampled_from(msg_ids).map(msg_id_eq),
    )


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_pushdown_matches_full_scan_and_store_api(spark: SparkSession, engine_format: str, small_store: Path,
                                                  rows: list[dict], data: st.DataObject) -> None:
    chosen = data.draw(st.lists(_predicates(rows), min_size=1, max_size=3))
    if len(chosen) > 1 and data.draw(st.booleans(), label="first two ORed"):
        (first, p1), (second, p2) = chosen[:2]
        chosen = [(first | second, lambda r, p1=p1, p2=p2: p1(r) or p2(r)), *chosen[2:]]
    condition = chosen[0][0]
    for expression, _ in chosen[1:]:
        condition = condition & expression
    columns = SQL_COLUMNS.split(", ")
    pushed = _read(spark, engine_format, small_store, True).filter(condition).selectExpr(*columns)
    full = _read(spark, engine_format, small_store, False).filter(condition).selectExpr(*columns)
    assert_df_equality(pushed, full, ignore_row_order=True)
    got = sorted(r.commitLogOffset for r in _read(spark, engine_format, small_store, True).filter(condition)
                 .select("commitLogOffset").collect())
    assert got == expected_offsets(rows, lambda r: all(p(r) for _, p in chosen))
