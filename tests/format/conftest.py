"""Shared vectors of the format tests: the record of spec §8.2 (tests/vectors/format_vectors.json)."""

from __future__ import annotations

from typing import Any

import pytest
from format_vectors import RECORD


@pytest.fixture(scope="session")
def golden_record() -> bytes:
    """The 178-byte record of §8.2."""
    return bytes.fromhex(RECORD["hex"])


@pytest.fixture
def golden_fields() -> dict[str, Any]:
    """`encode_record` arguments reproducing §8.2 (HashMap order KEYS, UNIQ_KEY, WAIT, TAGS)."""
    fields = dict(RECORD["fields"])
    return {**fields, "body": fields["body"].encode(), "properties": dict(fields["properties"])}
