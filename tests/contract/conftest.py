"""The contract suite: the same queries on both engines (`engine` / `engine_format`, tests/conftest.py)
must give the same rows, schema, errors and pushed filters. Stores and expectations come from the helpers
the Spark suite uses too (tests/helpers), not copies."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.spark_stores import SMALL_STORE_MESSAGES, write_store


@pytest.fixture(scope="session")
def contract_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Spark suite's small store (several segments and index files)."""
    path = tmp_path_factory.mktemp("contract-store") / "store"
    write_store(path, SMALL_STORE_MESSAGES, seed=7)
    return path
