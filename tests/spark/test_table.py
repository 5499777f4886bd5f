"""The table on both engines (`engine_format`): schema, subsets, several brokers, SQL views (the
errors for unknown columns and bad options are the contract suite's, tests/contract).
`format("rmqstore")` in a session without the jar (the auto-registered Python source) is tested by
the quickstart's fallback in test_delivery.py."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from helpers.spark_expected import store_rows
from helpers.spark_stores import explain_text, write_store
from rmqstore.spark.schema import TABLE_COLUMNS, table_schema


def test_full_schema(spark: SparkSession, engine_format: str, small_store: Path) -> None:
    df = spark.read.format(engine_format).load(str(small_store))
    assert tuple(df.columns) == TABLE_COLUMNS
    assert df.schema == table_schema()
    rows = df.orderBy("commitLogOffset").collect()
    assert len(rows) == len(store_rows(small_store))
    assert {r.broker for r in rows} == {str(small_store)}


def test_schema_subset_in_any_order(spark: SparkSession, engine_format: str, small_store: Path) -> None:
    df = spark.read.format(engine_format).schema("key string, commitLogOffset long, body binary") \
        .load(str(small_store))
    got = sorted((r.commitLogOffset, r.key) for r in df.collect())
    assert got == sorted((r["commitLogOffset"], r["key"]) for r in store_rows(small_store))


def test_several_brokers_in_one_table(spark: SparkSession, engine_format: str, small_store: Path,
                                     tmp_path: Path) -> None:
    other = tmp_path / "broker-b"
    write_store(other, 30, seed=99)
    df = spark.read.format(engine_format).option("brokerNames", "a,b").load([str(small_store), str(other)])
    counts = {r["broker"]: r["count"] for r in df.groupBy("broker").count().collect()}
    assert counts == {"a": len(store_rows(small_store)), "b": len(store_rows(other))}
    keyed = spark.read.format(engine_format).option("brokerNames", "a,b").load([str(small_store), str(other)])
    got = {(r.broker, r.commitLogOffset) for r in keyed.where("key = 'k5'").collect()}
    want = {("a", r["commitLogOffset"]) for r in store_rows(small_store) if r["key"] == "k5"}
    want |= {("b", r["commitLogOffset"]) for r in store_rows(other) if r["key"] == "k5"}
    assert got == want


def test_sql_view_pushes_down(spark: SparkSession, engine_format: str, small_store: Path) -> None:
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW msgs USING {engine_format} OPTIONS (path '{small_store}')")
    query = spark.sql("SELECT commitLogOffset FROM msgs WHERE key = 'k2'")
    assert "PushedFilters: [IsNotNull(key), EqualTo(key,k2)]" in explain_text(query)
    expected = sorted(r["commitLogOffset"] for r in store_rows(small_store) if r["key"] == "k2")
    assert sorted(r.commitLogOffset for r in query.collect()) == expected
