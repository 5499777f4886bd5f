"""Small stores for the Spark suite (the shared session fixture is in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.spark_stores import SMALL_STORE_MESSAGES, write_store


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
