"""One local Spark session for the whole suite (Spark is slow to start) and small stores."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from spark_stores import SMALL_STORE_MESSAGES, write_store

from rmqstore.spark import session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    spark = session("local[2]", "rmqstore-tests", **{
        "spark__ui__enabled": "false",
        "spark__sql__shuffle__partitions": "2",
        "spark__python__worker__reuse": "true",
    })
    yield spark
    spark.stop()


@pytest.fixture(scope="session")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of a few hundred messages over several segments and two index files."""
    path = tmp_path_factory.mktemp("spark-store") / "store"
    write_store(path, SMALL_STORE_MESSAGES, seed=7)
    return path


@pytest.fixture
def stats_dir(tmp_path: Path) -> Path:
    """A directory outside every store for the reader's statsDir JSON lines."""
    return tmp_path / "stats"
