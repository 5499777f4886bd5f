"""Settings and the Spark session every suite shares, with both engines in it.

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
