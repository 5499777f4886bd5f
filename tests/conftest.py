"""Settings, the Spark session (with both engines in it) and the moto S3 server every suite shares.

Spark's Python workers run `PYSPARK_PYTHON` (default: `python3` on PATH), not this interpreter;
point them at the interpreter that has rmqstore installed, so a plain `python -m pytest` works in a
virtualenv too.
"""

import os
import sys
import tempfile
from collections.abc import Iterator

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ.setdefault("TZ", "UTC")
# Caches (compiled kernels, consume-queue coverage of the many test stores) go to a directory of
# this run, not the user's ~/.cache/rmqstore.
os.environ.setdefault("RMQSTORE_CACHE_DIR", tempfile.mkdtemp(prefix="rmqstore-test-cache-"))


ENGINES = ("jvm", "python")


@pytest.fixture(scope="session")
def spark() -> Iterator:
    """One local Spark session for the whole run: starting one costs ~10 s, and getOrCreate would
    hand a second suite the first one's session anyway. It loads the JVM connector (built from this
    checkout when missing or stale) and registers the Python engine as "rmqstore_python", so tests
    parametrized by `engine` run both engines in one JVM."""
    from rmqstore.spark import session

    spark = session("local[2]", "rmqstore-tests", engine="jvm", **{
        "spark__ui__enabled": "false",
        "spark__sql__shuffle__partitions": "2",
        "spark__python__worker__reuse": "true",
    })
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.stop()


@pytest.fixture(scope="session")
def write_raw_log():
    """`write(store_root, [(stored body, sysFlag), ...]) -> physical offsets`: a commit log of one
    8 KiB segment holding exactly these records (bodies as stored: no compression is applied), for
    records RocketMQ writes but `StoreWriter` does not (e.g. a ROLLBACK with compression bits)."""
    from rmqstore.format.record import encode_record
    from rmqstore.writer.commitlog import CommitLogWriter

    def write(root, specs: list[tuple[bytes, int]]) -> list[int]:
        log = CommitLogWriter(root / "commitlog", 8192)
        offsets = [log.append(lambda at, i=i, body=body, flag=flag: [encode_record(
            topic="T", queue_id=0, body=body, properties={}, queue_offset=i, physical_offset=at,
            born_timestamp=1, store_timestamp=2, born_host="10.0.0.1:1", store_host="10.0.0.2:2",
            sys_flag=flag)])[0] for i, (body, flag) in enumerate(specs)]
        log.close(preallocate_next=False)
        return offsets

    return write


@pytest.fixture(scope="session")
def s3_server():
    """(endpoint "127.0.0.1:port", pyarrow S3FileSystem, upload) for a real moto S3 server on loopback.

    `upload(local_root, "bucket/prefix")` copies a directory tree into the server with boto3.
    """
    import boto3
    import pyarrow.fs as pafs
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"{host}:{port}"
        client = boto3.client("s3", endpoint_url=f"http://{endpoint}", aws_access_key_id="testing",
                              aws_secret_access_key="testing", region_name="us-east-1")

        def upload(local_root: str, remote_root: str) -> None:
            bucket, _, prefix = remote_root.partition("/")
            if bucket not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
                client.create_bucket(Bucket=bucket)
            for directory, _, files in os.walk(local_root):
                for name in files:
                    path = os.path.join(directory, name)
                    key = prefix + "/" + os.path.relpath(path, local_root).replace(os.sep, "/")
                    with open(path, "rb") as fh:
                        client.put_object(Bucket=bucket, Key=key, Body=fh.read())

        fs = pafs.S3FileSystem(access_key="testing", secret_key="testing", endpoint_override=endpoint,
                               scheme="http", region="us-east-1")
        yield endpoint, fs, upload
    finally:
        server.stop()


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, spark) -> str:
    """Each engine in turn, both loaded in the shared session."""
    from rmqstore.spark.engine import has_connector

    if request.param == "jvm":
        assert has_connector(spark), "the shared session did not load the JVM connector"
    return request.param


@pytest.fixture
def engine_format(engine: str) -> str:
    """The format name selecting the engine under test in the shared session (rmqstore.spark.engine):
    the Python source's alias, or the JVM connector's class name, which always means the JVM engine."""
    from rmqstore.spark.jar import PROVIDER_CLASS

    return PROVIDER_CLASS if engine == "jvm" else "rmqstore_python"
