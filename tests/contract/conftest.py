"""The contract suite: the same queries on both engines (`engine` / `engine_format`, tests/conftest.py)
must give the same rows, schema, errors and pushed filters. Stores and expectations come from the Spark
suite's helpers (tests/spark), not copies."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "spark"))

from spark_stores import SMALL_STORE_MESSAGES, write_store


@pytest.fixture(scope="session")
def contract_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Spark suite's small store (several segments and index files)."""
    path = tmp_path_factory.mktemp("contract-store") / "store"
    write_store(path, SMALL_STORE_MESSAGES, seed=7)
    return path
