"""Both engines answer the same: rows and schema against the Store API, count(), pushed filters in
explain(), option and schema errors, several stores in one table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from chispa import assert_df_equality
from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException, IllegalArgumentException, PythonException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from spark_expected import ROW_COLUMNS, expected_offsets, store_rows
from spark_stores import explain_text, read_stats, write_store
from test_options import INVALID_OPTIONS

from rmqstore.spark.options import OptionError, parse_options
from rmqstore.spark.schema import TABLE_COLUMNS, table_schema

pytestmark = pytest.mark.spark

ERRORS = (AnalysisException, PythonException, IllegalArgumentException, Py4JJavaError)


def test_full_table_matches_the_store_api(
    spark: SparkSession, engine_format: str, contract_store: Path
) -> None:
    df = spark.read.format(engine_format).load(str(contract_store))
    assert df.schema == table_schema()
    assert tuple(df.columns) == TABLE_COLUMNS
    got = df.select(*ROW_COLUMNS).orderBy("commitLogOffset").toArrow().to_pylist()
    assert got == store_rows(contract_store)
    assert {r.broker for r in df.select("broker").distinct().collect()} == {str(contract_store)}


def test_engines_give_identical_rows(spark: SparkSession, contract_store: Path) -> None:
    """Every column, bodies and properties included, the same on the JVM and the Python engine."""
    from rmqstore.spark.jar import PROVIDER_CLASS

    jvm = spark.read.format(PROVIDER_CLASS).load(str(contract_store))
    python = spark.read.format("rmqstore_python").load(str(contract_store))
    assert_df_equality(jvm.drop("properties"), python.drop("properties"), ignore_row_order=True)
    props = {r.commitLogOffset: r.properties for r in jvm.select("commitLogOffset", "properties").collect()}
    assert props == {r.commitLogOffset: r.properties
                     for r in python.select("commitLogOffset", "properties").collect()}


def test_count_and_schema_subset(spark: SparkSession, engine_format: str, contract_store: Path) -> None:
    rows = store_rows(contract_store)
    assert spark.read.format(engine_format).load(str(contract_store)).count() == len(rows)
    df = spark.read.format(engine_format).schema("key string, commitLogOffset long, keys array<string>") \
        .load(str(contract_store))
    assert df.columns == ["key", "commitLogOffset", "keys"]
    got = sorted((r.commitLogOffset, r.key, r["keys"]) for r in df.collect())
    assert got == sorted((r["commitLogOffset"], r["key"], r["keys"]) for r in rows)


def test_pushed_filters_in_explain_and_confirmed_when_pruned(
    spark: SparkSession, engine_format: str, contract_store: Path
) -> None:
    """`key = 'k2'` is consumed (PushedFilters, as the Python engine prints them) while only
    commitLogOffset is selected: the reader confirms on a column Spark pruned."""
    query = spark.read.format(engine_format).load(str(contract_store)) \
        .where(F.col("key") == "k2").select("commitLogOffset")
    assert "PushedFilters: [IsNotNull(key), EqualTo(key,k2)]" in explain_text(query)
    assert sorted(r.commitLogOffset for r in query.collect()) == \
        expected_offsets(store_rows(contract_store), lambda r: r["key"] == "k2")


def test_or_of_pushable_predicates(spark: SparkSession, engine: str, engine_format: str,
                                   contract_store: Path) -> None:
    """Spark pushes OR to DSv2 sources only: the JVM engine consumes it (and confirms it)."""
    rows = store_rows(contract_store)
    msg_id = rows[len(rows) // 2]["msgId"]
    condition = (F.col("key") == "k3") | ((F.col("msgId") == msg_id) & (F.col("topic") == "TopicA"))
    df = spark.read.format(engine_format).load(str(contract_store))
    query = df.where(condition).select("commitLogOffset")
    if engine == "jvm":
        assert f"PushedFilters: [Or(EqualTo(key,k3),And(EqualTo(msgId,{msg_id}),EqualTo(topic,TopicA)))]" \
            in explain_text(query)
    got = sorted(r.commitLogOffset for r in query.collect())
    assert got == expected_offsets(rows, lambda r: r["key"] == "k3" or (r["msgId"] == msg_id
                                                                         and r["topic"] == "TopicA"))


@pytest.mark.parametrize(("options", "named"), INVALID_OPTIONS)
def test_every_option_error_has_the_python_wording(spark: SparkSession, engine_format: str,
                                                   options: dict[str, str], named: str) -> None:
    """The Python options table (rmqstore.spark.options) is the reference; JSON parser details differ.
    Spark hands option names over lower-cased."""
    with pytest.raises(OptionError) as python_error:
        parse_options({name.lower(): value for name, value in options.items()})
    expected = str(python_error.value)
    if "invalid JSON" in expected:
        expected = expected[:expected.index("invalid JSON") + len("invalid JSON")]
    with pytest.raises(ERRORS, match=re.escape(expected)):
        spark.read.format(engine_format).options(**options).load().collect()


@pytest.mark.parametrize(("options", "message"), [
    ({"minPartitions": "-1"}, "rmqstore option 'minPartitions': -1 is less than 1"),
    ({"mode": "LENIENT"}, "rmqstore option 'mode': 'LENIENT' is not one of FAILFAST, PERMISSIVE"),
    ({"startingoffset": "earliest"}, "rmqstore option 'startingoffset': unknown option; did you mean "
                                     "'startingOffsets'?"),
    ({"maxBytesPerPartition": "12parsecs"}, "rmqstore option 'maxBytesPerPartition': '12parsecs' is not a "
                                            "byte size"),
    ({"indexHashSlots": "64"}, "rmqstore option 'indexEntries': must be given together with"),
    ({"startingOffsets": "latest"}, "rmqstore option 'startingOffsets': 'latest' is not allowed for batch"),
])
def test_option_errors_are_the_same(spark: SparkSession, engine_format: str, contract_store: Path,
                                    options: dict[str, str], message: str) -> None:
    reader = spark.read.format(engine_format)
    for name, value in options.items():
        reader = reader.option(name, value)
    with pytest.raises(ERRORS, match=re.escape(message)):
        reader.load(str(contract_store)).collect()


def test_unknown_column_is_named(spark: SparkSession, engine_format: str, contract_store: Path) -> None:
    df = spark.read.format(engine_format).schema("key string, bogusColumn int")
    with pytest.raises(ERRORS, match="rmqstore: unknown column 'bogusColumn'; the table has: topic, "):
        df.load(str(contract_store)).collect()


def test_several_stores_in_one_table(spark: SparkSession, engine_format: str, contract_store: Path,
                                     tmp_path: Path) -> None:
    other = tmp_path / "broker-b"
    write_store(other, 30, seed=99)
    df = spark.read.format(engine_format).option("brokerNames", "a,b").load([str(contract_store), str(other)])
    counts = {r["broker"]: r["count"] for r in df.groupBy("broker").count().collect()}
    assert counts == {"a": len(store_rows(contract_store)), "b": len(store_rows(other))}
    got = {(r.broker, r.commitLogOffset) for r in df.where("key = 'k5'").collect()}
    want = {("a", r["commitLogOffset"]) for r in store_rows(contract_store) if r["key"] == "k5"}
    want |= {("b", r["commitLogOffset"]) for r in store_rows(other) if r["key"] == "k5"}
    assert got == want


@pytest.mark.parametrize("options", [
    {"topics": "TopicA,TopicC"},
    {"keys": "k1,k7"},
    {"startingOffsets": "group:cg1", "topics": "TopicA"},
    {"startingOffsets": '{"TopicB":{"0":3}}', "endingOffsets": '{"TopicB":{"0":9,"1":-1}}'},
    {"startingOffsets": "4096", "endingOffsets": "20000"},
    {"startingTimestamp": "1700000100000", "minPartitions": "3"},
    {"maxBytesPerPartition": "4k", "verifyCrc": "true"},
], ids=lambda o: ",".join(o))
def test_row_options_select_the_same_rows(spark: SparkSession, contract_store: Path,
                                          options: dict[str, str]) -> None:
    """Options that restrict rows (topics, keys, queue / physical / time windows) and shape the plan."""
    from rmqstore.spark.jar import PROVIDER_CLASS

    def read(fmt: str) -> list[int]:
        df = spark.read.format(fmt).options(**options).load(str(contract_store))
        return sorted(r.commitLogOffset for r in df.select("commitLogOffset").collect())

    python = read("rmqstore_python")
    assert 0 < len(python) < len(store_rows(contract_store)) or "verifyCrc" in options
    assert read(PROVIDER_CLASS) == python


def test_point_and_window_reads_decode_only_what_they_select(
    spark: SparkSession, engine_format: str, contract_store: Path, tmp_path: Path
) -> None:
    """Proven by the statsDir lines: `msgId =` decodes its record alone (offsets access), a time window
    a slice of the log (range access)."""
    rows = store_rows(contract_store)
    times = sorted(r["storeTimestamp"] for r in rows)
    lo, hi = times[len(times) // 2], times[len(times) // 2 + 20]
    cases = [("msgId", F.col("msgId") == rows[100]["msgId"], "offsets", 1, 1),
             ("time", F.col("storeTimestamp").between(lo, hi), "range", 21, len(rows) // 2)]
    for name, condition, access, selected, most in cases:
        stats = tmp_path / name
        df = spark.read.format(engine_format).option("statsDir", str(stats)).load(str(contract_store))
        assert df.where(condition).count() >= selected
        events = read_stats(stats)
        assert [e["access"] for e in events if e["event"] == "plan"] == [[access]]
        decoded = sum(e["records_decoded"] for e in events if e["event"] == "read")
        assert selected <= decoded <= most, (name, decoded)


@pytest.mark.parametrize("options", [{"minPartitions": "3"}, {"maxBytesPerPartition": "4k"}],
                         ids=lambda o: ",".join(o))
def test_scans_split_into_the_same_partitions(spark: SparkSession, contract_store: Path,
                                              options: dict[str, str]) -> None:
    from rmqstore.spark.jar import PROVIDER_CLASS

    def partitions(fmt: str) -> int:
        return spark.read.format(fmt).options(**options).load(str(contract_store)).rdd.getNumPartitions()

    python = partitions("rmqstore_python")
    assert python > 1
    assert partitions(PROVIDER_CLASS) == python
