"""Settings and the Spark session every suite shares.

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


@pytest.fixture(scope="session")
def spark() -> Iterator:
    """One local Spark session for the whole run: starting one costs ~10 s, and getOrCreate would
    hand a second suite the first one's session anyway."""
    from rmqstore.spark import session

    spark = session("local[2]", "rmqstore-tests", **{
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
