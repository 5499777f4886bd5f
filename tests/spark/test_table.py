"""Registration, schema subsets, several brokers, SQL views."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.errors import AnalysisException, PythonException
from pyspark.sql import SparkSession
from spark_expected import store_rows
from spark_stores import explain_text, write_store

from rmqstore.spark.schema import TABLE_COLUMNS, table_schema


def test_auto_registered_full_schema(spark: SparkSession, small_store: Path) -> None:
    df = spark.read.format("rmqstore").load(str(small_store))  # no register() call anywhere
    assert tuple(df.columns) == TABLE_COLUMNS
    assert df.schema == table_schema()
    rows = df.orderBy("commitLogOffset").collect()
    assert len(rows) == len(store_rows(small_store))
    assert {r.broker for r in rows} == {str(small_store)}


def test_schema_subset_in_any_order(spark: SparkSession, small_store: Path) -> None:
    df = spark.read.format("rmqstore").schema("key string, commitLogOffset long, body binary") \
        .load(str(small_store))
    got = sorted((r.commitLogOffset, r.key) for r in df.collect())
    assert got == sorted((r["commitLogOffset"], r["key"]) for r in store_rows(small_store))


def test_unknown_column_is_named(spark: SparkSession, small_store: Path) -> None:
    df = spark.read.format("rmqstore").schema("key string, bogusColumn int").load(str(small_store))
    with pytest.raises((AnalysisException, PythonException), match="bogusColumn"):
        df.collect()


def test_invalid_option_error_names_the_option(spark: SparkSession, small_store: Path) -> None:
    with pytest.raises((AnalysisException, PythonException), match="minPartitions"):
        spark.read.format("rmqstore").option("minPartitions", "-1").load(str(small_store)).collect()


def test_several_brokers_in_one_table(spark: SparkSession, small_store: Path, tmp_path: Path) -> None:
    other = tmp_path / "broker-b"
    write_store(other, 30, seed=99)
    df = spark.read.format("rmqstore").option("brokerNames", "a,b").load([str(small_store), str(other)])
    counts = {r["broker"]: r["count"] for r in df.groupBy("broker").count().collect()}
    assert counts == {"a": len(store_rows(small_store)), "b": len(store_rows(other))}
    keyed = spark.read.format("rmqstore").option("brokerNames", "a,b").load([str(small_store), str(other)])
    got = {(r.broker, r.commitLogOffset) for r in keyed.where("key = 'k5'").collect()}
    want = {("a", r["commitLogOffset"]) for r in store_rows(small_store) if r["key"] == "k5"}
    want |= {("b", r["commitLogOffset"]) for r in store_rows(other) if r["key"] == "k5"}
    assert got == want


def test_sql_view_pushes_down(spark: SparkSession, small_store: Path) -> None:
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW msgs USING rmqstore OPTIONS (path '{small_store}')")
    query = spark.sql("SELECT commitLogOffset FROM msgs WHERE key = 'k2'")
    assert "PushedFilters: [IsNotNull(key), EqualTo(key,k2)]" in explain_text(query)
    expected = sorted(r["commitLogOffset"] for r in store_rows(small_store) if r["key"] == "k2")
    assert sorted(r.commitLogOffset for r in query.collect()) == expected
