"""The checkpoint file (§6.1)."""

from __future__ import annotations

import pytest

from rmqstore.format.checkpoint import CHECKPOINT_SIZE, Checkpoint, encode_checkpoint, parse_checkpoint


def test_round_trip_and_layout() -> None:
    cp = Checkpoint(1_700_000_005_000, 1_700_000_004_000, 1_699_999_000_000, 4096, 178, 356)
    data = encode_checkpoint(cp)
    assert len(data) == CHECKPOINT_SIZE
    assert data[0:8] == (1_700_000_005_000).to_bytes(8, "big")
    assert data[32:40] == (178).to_bytes(8, "big")
    assert data[40:48] == (356).to_bytes(8, "big")
    assert data[48:] == bytes(CHECKPOINT_SIZE - 48)
    assert parse_checkpoint(data) == cp


def test_4x_checkpoint_has_zero_5x_fields() -> None:
    data = (1).to_bytes(8, "big") + (2).to_bytes(8, "big") + (3).to_bytes(8, "big") + bytes(4096 - 24)
    assert parse_checkpoint(data) == Checkpoint(1, 2, 3, 0, 0, 0)


def test_min_timestamps() -> None:
    cp = Checkpoint(physic_msg_timestamp=10_000, logics_msg_timestamp=9_000, index_msg_timestamp=5_000)
    assert cp.min_timestamp() == 6_000
    assert cp.min_timestamp_index() == 5_000
    assert Checkpoint(1000, 2000, 0).min_timestamp() == 0


def test_short_file_is_rejected() -> None:
    with pytest.raises(ValueError, match="checkpoint of 16 bytes"):
        parse_checkpoint(bytes(16))
