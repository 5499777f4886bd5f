"""Fixtures of the store tests: the unchanged-store guard and a builder (S3 server: tests/conftest.py)."""

from __future__ import annotations

import pytest

from helpers.store_builder import _GUARDED, StoreBuilder, tree_digest


@pytest.fixture(autouse=True)
def unchanged_stores():
    """After every test, each store built during it has exactly the bytes (and files) it was built with."""
    _GUARDED.clear()
    yield
    for root, digest in _GUARDED:
        assert tree_digest(root) == digest, f"store {root} was modified by reading it"
    _GUARDED.clear()


@pytest.fixture
def builder(tmp_path):
    return StoreBuilder(str(tmp_path / "store"))
