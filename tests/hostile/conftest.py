"""Fixtures of the hostile-input tests: one small demo store per session and cheap clones of it to damage."""

from __future__ import annotations

from pathlib import Path

import pytest
from campaign import build_base, clone


@pytest.fixture(scope="session")
def base_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "base"
    build_base(str(path))
    return path


@pytest.fixture
def damaged(base_store: Path, tmp_path: Path) -> Path:
    """A clone of the base store (hard links: replace a file before changing it, never write in place)."""
    path = tmp_path / "store"
    clone(str(base_store), str(path))
    return path
