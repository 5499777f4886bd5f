"""Both engines answer the same: rows and schema against the Store API, count(), pushed filters in
explain(), option and schema errors, several stores in one table."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard
from chispa import assert_df_equality
from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException, IllegalArgumentException, PythonException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from helpers.option_cases import INVALID_OPTIONS
from helpers.spark_expected import ROW_COLUMNS, expected_offsets, store_rows
from helpers.spark_stores import explain_text, read_stats, write_store
from rmqstore.format.compression import compressed_sys_flag
from rmqstore.format.layout import COMPRESSION_ZSTD
from rmqstore.spark.offsets import check_group_known
from rmqstore.spark.options import OptionError, parse_offsets, parse_options
from rmqstore.spark.schema import TABLE_COLUMNS, table_schema
from rmqstore.store import Store

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


# ---- options and behaviour the Python engine gained while the JVM was written ------------------------

ACCESS_KEY = "AKIACONTRACTTEST01"
SECRET_KEY = "s3cr3t-contract-do-not-print"


@pytest.mark.parametrize("options", [
    {"path": "/s", "maxMessageSize": "huge"},
    {"path": "/s", "maxMessageSize": "0"},
    {"path": "/local/store", "s3.secretKey": SECRET_KEY},
    {"path": "s3://bucket/store", "s3.accessKey": ACCESS_KEY},
    {"path": "s3://bucket/store", "s3.sessionToken": SECRET_KEY, "s3.secretKey": SECRET_KEY},
], ids=lambda o: ",".join(o))
def test_new_option_errors_have_the_python_wording_and_hide_secrets(
    spark: SparkSession, engine_format: str, options: dict[str, str]
) -> None:
    with pytest.raises(OptionError) as python_error:
        parse_options({name.lower(): value for name, value in options.items()})
    with pytest.raises(ERRORS, match=re.escape(str(python_error.value))) as error:
        spark.read.format(engine_format).options(**options).load()
    assert SECRET_KEY not in str(error.value) and ACCESS_KEY not in str(error.value)


def test_s3_secrets_are_never_shown(spark: SparkSession, engine: str, engine_format: str, s3_server,
                                    contract_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Explain output and errors of an s3:// read with credentials as options. The JVM engine reads
    s3:// through Hadoop's S3A (org.apache.hadoop:hadoop-aws); without that jar on the classpath
    load() says to add it."""
    endpoint, _, upload = s3_server
    upload(str(contract_store), "contract/store")

    def read(path: str):
        return (spark.read.format(engine_format).option("s3.accessKey", ACCESS_KEY)
                .option("s3.secretKey", SECRET_KEY).option("s3.endpoint", endpoint)
                .option("s3.scheme", "http").option("s3.region", "us-east-1").load(path))

    try:  # the session JVM's classpath
        spark._jvm.java.lang.Class.forName("org.apache.hadoop.fs.s3a.S3AFileSystem")
        has_s3a = True
    except Py4JJavaError:
        has_s3a = False
    if engine == "jvm" and not has_s3a:
        with pytest.raises(ERRORS) as error:
            read("s3://contract/store")
        text = str(error.value)
        assert "rmqstore: cannot read the store at 's3://contract/store': " in text
        assert "add org.apache.hadoop:hadoop-aws" in text
        assert ACCESS_KEY not in text and SECRET_KEY not in text
        return
    df = read("s3://contract/store")
    assert df.count() == len(store_rows(contract_store))
    df.where("key = 'k1'").explain("extended")
    df.explain("formatted")
    plans = capsys.readouterr().out
    assert "rmqstore" in plans and ACCESS_KEY not in plans and SECRET_KEY not in plans
    with pytest.raises(ERRORS) as missing:
        read("s3://contract/nosuch")
    assert "no RocketMQ store at 's3://contract/nosuch'" in str(missing.value)
    assert ACCESS_KEY not in str(missing.value) and SECRET_KEY not in str(missing.value)


def test_relative_paths_are_absolute_on_the_driver(spark: SparkSession, engine_format: str,
                                                   contract_store: Path) -> None:
    """A path relative to the driver's working directory reads that store (executors may run
    elsewhere); the broker column shows it as typed; the same store twice is an error."""
    relative = os.path.relpath(contract_store)
    df = spark.read.format(engine_format).load(relative)
    assert {r.broker for r in df.select("broker").distinct().collect()} == {relative}
    assert df.count() == len(store_rows(contract_store))
    twice = {"paths": json.dumps([str(contract_store), relative])}
    with pytest.raises(OptionError) as python_error:
        parse_options(twice)
    assert "listed twice" in str(python_error.value)
    with pytest.raises(ERRORS, match=re.escape(str(python_error.value))):
        spark.read.format(engine_format).options(**twice).load()


def test_a_missing_store_fails_at_load(spark: SparkSession, engine_format: str, tmp_path: Path) -> None:
    missing = tmp_path / "no-store-here"
    with pytest.raises(ERRORS) as error:
        spark.read.format(engine_format).load(str(missing))  # no action: load() itself fails
    assert (f"rmqstore: no RocketMQ store at '{missing}': no such store directory (a broker store directory "
            "holds commitlog/, and usually consumequeue/, index/ and config/)") in str(error.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ERRORS, match=r"rmqstore: no RocketMQ store at '.*empty': .*commitlog/"):
        spark.read.format(engine_format).load(str(tmp_path / "empty"))


def test_verify_crc_is_on_by_default(spark: SparkSession, engine_format: str, tmp_path: Path,
                                     contract_store: Path) -> None:
    """A body that does not match its BODYCRC in a sealed segment fails the read unless verifyCrc=false
    (in the active segment past the last indexed record it would end the log, like the broker's
    recovery)."""
    root = tmp_path / "store"
    shutil.copytree(contract_store, root)
    with Store.open(str(root)) as store:  # a record with a stored body in the first (sealed) segment
        victim = [r for b in store.scan(columns=["commitLogOffset", "body"], decompress=False)
                  for r in b.to_pylist() if r["body"]][5]
    segment = sorted((root / "commitlog").iterdir())[0]
    data = bytearray(segment.read_bytes())
    data[data.index(victim["body"], victim["commitLogOffset"])] ^= 0xFF
    segment.write_bytes(bytes(data))
    with pytest.raises(ERRORS, match=f"at physical offset {victim['commitLogOffset']}: .*BODYCRC mismatch"):
        spark.read.format(engine_format).load(str(root)).collect()
    off = spark.read.format(engine_format).option("verifyCrc", "false").load(str(root))
    assert off.count() == len(store_rows(contract_store))


PERMISSIVE_SCRIPT = """
import sys
from rmqstore.spark import session
spark = session("local[1]", "permissive-stderr", engine="jvm", spark__ui__enabled="false")
df = spark.read.format(sys.argv[1]).options(maxMessageSize="99999", mode="PERMISSIVE").load(sys.argv[2])
print("ROWS", len(df.select("body").collect()))
spark.stop()
"""


def test_max_message_size_and_permissive_reporting(spark: SparkSession, engine_format: str, tmp_path: Path,
                                                   write_raw_log) -> None:
    """A zstd body inflating past maxMessageSize fails FAILFAST naming file and offset; PERMISSIVE skips
    it, counts it in statsDir (records and bytes) and prints one line per task on stderr."""
    big = bytes(100_000)
    root = tmp_path / "store"
    zstd = compressed_sys_flag(COMPRESSION_ZSTD)
    offsets = write_raw_log(root, [(b"plain", 0), (zstandard.ZstdCompressor().compress(big), zstd),
                                   (b"last", 0)])
    segment = root / "commitlog" / f"{0:020d}"
    full = spark.read.format(engine_format).load(str(root))
    assert [len(r.body) for r in full.orderBy("commitLogOffset").collect()] == [5, len(big), 4]
    named = f"{0:020d}: at physical offset {offsets[1]}: .*inflates past 99999 bytes"
    with pytest.raises(ERRORS, match=named):
        spark.read.format(engine_format).option("maxMessageSize", "99999").load(str(root)).collect()
    stats = tmp_path / "stats"
    df = spark.read.format(engine_format).options(maxMessageSize="99999", mode="PERMISSIVE",
                                                  statsDir=str(stats)).load(str(root))
    assert sorted(r.commitLogOffset for r in df.collect()) == [offsets[0], offsets[2]]
    reads = [e for e in read_stats(stats) if e["event"] == "read"]
    assert sum(e["invalid_records_skipped"] for e in reads) == 1
    assert sum(e["bytes_skipped"] for e in reads) == offsets[2] - offsets[1]
    # Executors' stderr is the session JVM's, which pytest cannot capture per test: a session of its own
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": "--master local[1] pyspark-shell"}
    done = subprocess.run([sys.executable, "-c", PERMISSIVE_SCRIPT, engine_format, str(root)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "ROWS 2" in done.stdout, done.stderr[-3000:]
    err = done.stderr
    lines = [line for line in err.splitlines() if "PERMISSIVE skipped" in line]
    assert len(lines) == 1, lines
    assert re.fullmatch(
        rf"rmqstore: PERMISSIVE skipped 1 damaged record\(s\), {offsets[2] - offsets[1]} bytes; first at "
        rf"{re.escape(str(segment))} physical offset {offsets[1]}: .*inflates past 99999 bytes.* "
        rf"\(task \d+\)",
        lines[0]), lines[0]


@pytest.mark.parametrize("option", ["startingOffsets", "endingOffsets"])
def test_an_unknown_consumer_group_is_an_error_naming_it(spark: SparkSession, engine_format: str,
                                                         contract_store: Path, option: str) -> None:
    """`group:<typo>` fails (did you mean, known groups) instead of reading nothing."""
    with Store.open(str(contract_store)) as store:
        known = sorted({group for _, group in store.consumer_offsets()})
        typo = known[0][:-1] + "X"
        with pytest.raises(OptionError) as python_error:
            check_group_known([store], parse_offsets(option, f"group:{typo}"), option)
    expected = str(python_error.value)
    assert f"did you mean '{known[0]}'" in expected and "Known consumer groups: " in expected
    reader = spark.read.format(engine_format).option(option, f"group:{typo}")
    with pytest.raises(ERRORS, match=re.escape(expected)):
        reader.load(str(contract_store)).collect()
    def known_group_rows(fmt: str) -> int:
        return spark.read.format(fmt).option(option, f"group:{known[0]}").load(str(contract_store)).count()

    assert known_group_rows(engine_format) == known_group_rows("rmqstore_python")


def test_queue_windows_never_select_transaction_records(spark: SparkSession, engine_format: str,
                                                        tmp_path: Path) -> None:
    """PREPARED / ROLLBACK records (queueOffset 0, in no queue, §4.1) reach a key query through the
    index: `startingOffsets` must still leave them out, as it selects queue positions."""
    from rmqstore.format.layout import TRANSACTION_PREPARED, TRANSACTION_ROLLBACK
    from rmqstore.writer import MessageSpec, StoreWriter

    path = tmp_path / "store"
    transactions = [0, TRANSACTION_PREPARED, 0, TRANSACTION_ROLLBACK]
    with StoreWriter(path, seed=3) as writer:
        writer.declare_topic("T", 1)
        for i in range(40):
            writer.append(MessageSpec(topic="T", body=b"x", keys="k", transaction=transactions[i % 4]))
    df = (spark.read.format(engine_format).option("keys", "k")
          .option("startingOffsets", json.dumps({"T": {"0": 0}})).load(str(path)))
    got = sorted((r.sysFlag & 0xC, r.queueOffset) for r in df.select("sysFlag", "queueOffset").collect())
    assert got == [(0, q) for q in range(20)]
