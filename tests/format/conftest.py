"""Shared vectors of the format tests: the verified record of spec §8.2."""

from __future__ import annotations

from typing import Any

import pytest

GOLDEN_RECORD_HEX = (
    "000000B2DAA320A73610A686000000000000000000000000000000000000000000000000000000000000018BCFE568007F0000"
    "010000CF120000018BCFE5687B7F00000100002A9F0000000000000000000000000000000568656C6C6F09546F7069635465"
    "737400494B455953016B31206B3202554E49515F4B4559013746303030303031303444323142364433353836303532363543"
    "303030303030025741495401747275650254414753015461674102"
)


@pytest.fixture(scope="session")
def golden_record() -> bytes:
    """The 178-byte record of §8.2."""
    return bytes.fromhex(GOLDEN_RECORD_HEX)


@pytest.fixture
def golden_fields() -> dict[str, Any]:
    """`encode_record` arguments reproducing §8.2 (HashMap order KEYS, UNIQ_KEY, WAIT, TAGS)."""
    return {
        "topic": "TopicTest",
        "queue_id": 0,
        "body": b"hello",
        "properties": {
            "KEYS": "k1 k2",
            "UNIQ_KEY": "7F00000104D21B6D358605265C000000",
            "WAIT": "true",
            "TAGS": "TagA",
        },
        "queue_offset": 0,
        "physical_offset": 0,
        "born_timestamp": 1_700_000_000_000,
        "store_timestamp": 1_700_000_000_123,
        "born_host": "127.0.0.1:53010",
        "store_host": "127.0.0.1:10911",
    }
