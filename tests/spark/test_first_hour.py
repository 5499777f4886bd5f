"""What a new user meets first: paths, credentials, errors at load(), notes, the session (issue 10)."""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException, IllegalArgumentException
from pyspark.sql import SparkSession

from helpers.spark_stores import SMALL_STORE_MESSAGES
from rmqstore.notes import note_once
from rmqstore.plan.tasks import RangeTask
from rmqstore.spark.options import OptionError, parse_options
from rmqstore.spark.reader import StoreReader
from rmqstore.spark.schema import table_schema
from rmqstore.spark.source import PUSHDOWN_OFF_NOTE
from rmqstore.spark.stores import open_store
from rmqstore.spark.stream import StreamPartition
from rmqstore.store import Store
from rmqstore.store.errors import StoreCorruptionError, StoreLayoutError

ACCESS_KEY = "AKIAFIRSTHOURTEST01"
SECRET_KEY = "s3cr3t-first-hour-do-not-print"


def _read_all(reader: StoreReader, partitions: list) -> int:
    return sum(batch.num_rows for part in partitions for batch in reader.read(part))


# ---- paths -----------------------------------------------------------------------------------------


def test_relative_paths_are_made_absolute_where_options_are_parsed(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    opts = parse_options({"paths": '["store", "s3://bucket/broker-a"]'})
    assert opts.paths == (str(tmp_path / "store"), "s3://bucket/broker-a")
    assert opts.broker_names == ("store", "s3://bucket/broker-a")  # the broker column shows what was typed
    monkeypatch.setenv("HOME", str(tmp_path))
    assert parse_options({"path": "~/s"}).paths == (str(tmp_path / "s"),)
    with pytest.raises(OptionError, match="paths"):
        parse_options({"paths": f'["store", "{tmp_path}/store"]'})


def test_a_relative_store_planned_here_is_read_from_another_working_directory(
        small_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(small_store.parent)
    reader = StoreReader(parse_options({"path": small_store.name}), table_schema())
    shipped = pickle.dumps((reader, reader.partitions()))  # what Spark sends to executors
    monkeypatch.chdir(tmp_path)  # an executor's working directory
    executor_reader, partitions = pickle.loads(shipped)
    assert _read_all(executor_reader, partitions) == SMALL_STORE_MESSAGES


# ---- credentials -----------------------------------------------------------------------------------


def test_s3_options_become_storage_options_and_are_never_shown() -> None:
    opts = parse_options({"path": "s3://bucket/store", "s3.accessKey": ACCESS_KEY, "S3.SECRETKEY": SECRET_KEY,
                          "s3.endpoint": "127.0.0.1:9000", "s3.scheme": "http", "s3.region": "eu-west-1"})
    assert opts.storage_options == {"access_key": ACCESS_KEY, "secret_key": SECRET_KEY,
                                    "endpoint_override": "127.0.0.1:9000", "scheme": "http",
                                    "region": "eu-west-1"}
    assert opts.storage_options_for("/local/store") is None
    partition = StreamPartition(location="s3://bucket/store", broker="b", columns=(), output_schema=None,
                                task=RangeTask(0, 0, 0), storage_options=opts.storage_options)
    for shown in (repr(opts), repr(partition)):
        assert ACCESS_KEY not in shown and SECRET_KEY not in shown
    with pytest.raises(OptionError, match=r"'s3\.accessKey': applies to s3:// store paths only") as local:
        parse_options({"path": "/local/store", "s3.accessKey": ACCESS_KEY, "s3.secretKey": SECRET_KEY})
    with pytest.raises(OptionError, match=r"'s3\.secretKey': must be given together") as half:
        parse_options({"path": "s3://bucket/store", "s3.accessKey": ACCESS_KEY})
    assert ACCESS_KEY not in str(local.value) + str(half.value)


@pytest.fixture(scope="module")
def s3_store(s3_server, small_store: Path) -> tuple[str, str]:
    """(s3:// URI of the small store without endpoint settings, moto endpoint)."""
    endpoint, _, upload = s3_server
    upload(str(small_store), "firsthour/store")
    return "s3://firsthour/store", endpoint


def test_driver_environment_credentials_travel_to_executors(s3_store: tuple[str, str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    uri, endpoint = s3_store
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    opts = parse_options({"path": uri, "s3.endpoint": endpoint, "s3.scheme": "http",
                          "s3.region": "us-east-1"})
    reader = StoreReader(opts, table_schema())
    shipped = pickle.dumps((reader, reader.partitions()))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):  # an executor without them
        monkeypatch.delenv(name)
    executor_reader, partitions = pickle.loads(shipped)
    stores = {id(p.store): p.store for p in partitions}.values()
    assert {s.fs.filesystem.__reduce__()[1][0]["access_key"] for s in stores} == {ACCESS_KEY}
    assert _read_all(executor_reader, partitions) == SMALL_STORE_MESSAGES


# ---- errors at load() ------------------------------------------------------------------------------
# PySpark shows both engines' load errors by their message: the Python engine's as an AnalysisException
# (PYTHON_DATA_SOURCE_ERROR), the JVM engine's as an IllegalArgumentException.
LOAD_ERRORS = (AnalysisException, IllegalArgumentException)


def test_a_missing_store_fails_at_load_with_the_cause_first(spark: SparkSession, engine_format: str,
                                                            tmp_path: Path) -> None:
    missing = tmp_path / "no-store-here"
    with pytest.raises(LOAD_ERRORS) as error:
        spark.read.format(engine_format).load(str(missing))  # no action: load() itself fails
    first_line = str(error.value).splitlines()[0]
    assert f"rmqstore: no RocketMQ store at '{missing}': no such store directory" in first_line
    assert "commitlog/" in first_line and "Traceback" not in str(error.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(LOAD_ERRORS, match=r"no RocketMQ store at '.*empty'.*commitlog"):
        spark.read.format(engine_format).load(str(tmp_path / "empty"))


def test_a_bad_option_fails_at_load_with_the_option_first(spark: SparkSession, engine_format: str,
                                                          small_store: Path) -> None:
    with pytest.raises(LOAD_ERRORS) as error:
        spark.read.format(engine_format).option("mode", "LENIENT").load(str(small_store))
    assert "rmqstore option 'mode': 'LENIENT' is not one of" in str(error.value).splitlines()[0]


def test_open_store_names_the_path_and_what_a_store_holds(tmp_path: Path) -> None:
    with pytest.raises(StoreLayoutError) as error:
        open_store(parse_options({"path": str(tmp_path / "x")}), str(tmp_path / "x"))
    assert str(error.value).startswith(f"rmqstore: no RocketMQ store at '{tmp_path / 'x'}': ")
    assert "commitlog/" in str(error.value)


# ---- notes -----------------------------------------------------------------------------------------


def test_a_note_prints_once_per_application_and_once_per_process_outside_spark(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RMQSTORE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("SPARK_LOCAL_DIRS", "/tmp/blockmgr-app-1")
    note_once("first-hour note")
    note_once("first-hour note")  # another planning worker of the same application
    monkeypatch.setenv("SPARK_LOCAL_DIRS", "/tmp/blockmgr-app-2")
    note_once("first-hour note")
    monkeypatch.delenv("SPARK_LOCAL_DIRS")
    note_once("first-hour note outside spark")
    note_once("first-hour note outside spark")
    assert capsys.readouterr().err.splitlines() == ["rmqstore: first-hour note"] * 2 + [
        "rmqstore: first-hour note outside spark"]


def test_notes_go_through_logging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Silenced by the `rmqstore` logger's level (a filtered note is not counted as shown), routed
    elsewhere by a handler change."""
    monkeypatch.delenv("SPARK_LOCAL_DIRS", raising=False)
    logger, shown = logging.getLogger("rmqstore"), []
    logger.setLevel(logging.ERROR)
    try:
        note_once("first-hour silenced note")
    finally:
        logger.setLevel(logging.NOTSET)
    assert capsys.readouterr().err == ""
    note_once("first-hour silenced note")
    assert capsys.readouterr().err == "rmqstore: first-hour silenced note\n"
    handler = logging.Handler()
    handler.emit = lambda record: shown.append((record.name, record.levelname, record.getMessage()))
    monkeypatch.setattr(logging.getLogger("rmqstore.notes"), "handlers", [handler])
    note_once("first-hour routed note")
    assert shown == [("rmqstore.notes", "WARNING", "first-hour routed note")]
    assert capsys.readouterr().err == ""


# ---- a user's own session, end to end --------------------------------------------------------------
# The pushdown-off note is the Python engine's (Spark's conf for Python sources): the script asks for
# that engine and names it.

USER_SCRIPT = textwrap.dedent("""
    import json, sys
    from rmqstore.spark import session
    spark = session(engine="python")  # under PYSPARK_SUBMIT_ARGS="--master local[1] pyspark-shell"
    spark.sparkContext.setLogLevel("ERROR")
    result = {"master": spark.sparkContext.master,
              "progress": spark.sparkContext.getConf().get("spark.ui.showConsoleProgress", "unset")}
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")  # as in a plain session
    key = sys.argv[1]
    result["counts"] = [spark.read.format("rmqstore_python").load("store").where(f"key = '{key}'").count(),
                        spark.read.format("rmqstore_python").load("store").where(f"key = '{key}'").count(),
                        spark.read.format("rmqstore_python").load("store").count()]
    print("RESULT " + json.dumps(result))
""")


def test_a_users_session_keeps_its_master_and_says_once_that_pushdown_is_off(
        spark: SparkSession, small_store: Path, tmp_path: Path) -> None:
    key_rows = spark.read.format("rmqstore_python").load(str(small_store)).where("key = 'k1'").count()
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT)
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": "--master local[1] pyspark-shell",
           "RMQSTORE_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(script), "k1"], cwd=small_store.parent, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert result["master"] == "local[1]" and result["progress"] != "false"
    assert result["counts"] == [key_rows, key_rows, SMALL_STORE_MESSAGES]
    assert done.stderr.count(PUSHDOWN_OFF_NOTE) == 1


# ---- verifyCrc -------------------------------------------------------------------------------------


def test_a_corrupt_body_fails_the_default_read_and_verify_crc_false_returns_it(small_store: Path,
                                                                              tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(small_store, store)
    with Store.open(str(store)) as opened:
        record = next(r for b in opened.scan(columns=["commitLogOffset", "bodyCrc", "body"])
                      for r in b.to_pylist() if r["body"])
        size = opened.segment_size
    body_at = record["commitLogOffset"] + 88  # IPv4 hosts: the body starts at byte 88 of the record
    segment_file = store / "commitlog" / f"{body_at - body_at % size:020d}"
    data = bytearray(segment_file.read_bytes())
    data[body_at % size] ^= 0xFF
    segment_file.write_bytes(bytes(data))

    def read(options: dict[str, str]) -> int:
        reader = StoreReader(parse_options({"path": str(store), **options}), table_schema())
        return _read_all(reader, reader.partitions())

    with pytest.raises(StoreCorruptionError, match=str(record["commitLogOffset"])):
        read({})
    assert read({"verifyCrc": "false"}) == SMALL_STORE_MESSAGES
