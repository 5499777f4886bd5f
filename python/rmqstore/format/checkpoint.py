"""The `checkpoint` file: 4096 bytes, big-endian longs at the start, rest zero (spec §6.1)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

CHECKPOINT_SIZE = 4096
"""One OS page (`StoreCheckpoint` maps `OS_PAGE_SIZE`)."""
MIN_TIMESTAMP_MARGIN_MS = 3000
"""`getMinTimestamp` steps back 3 s from the smaller of the physic/logics timestamps (§6.1)."""

_FIELDS = struct.Struct(">qqqqqq")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """`StoreCheckpoint` fields (§6.1).

    `master_flushed_offset` is 5.0.0+, `confirm_phy_offset` 5.1.1+ (older files hold zeros there).
    `logics_physical_offset` (offset 40) is written by RocketMQ 5.5.0's own `StoreCheckpoint` (seen in
    the conformance fixtures).
    """

    physic_msg_timestamp: int = 0
    logics_msg_timestamp: int = 0
    index_msg_timestamp: int = 0
    master_flushed_offset: int = 0
    confirm_phy_offset: int = 0
    logics_physical_offset: int = 0

    def min_timestamp(self) -> int:
        """`getMinTimestamp`: max(0, min(physic, logics) - 3000) (§6.1)."""
        return max(0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - MIN_TIMESTAMP_MARGIN_MS)

    def min_timestamp_index(self) -> int:
        """`getMinTimestampIndex`: min(getMinTimestamp(), indexMsgTimestamp) (§6.1)."""
        return min(self.min_timestamp(), self.index_msg_timestamp)


def parse_checkpoint(data: Any) -> Checkpoint:
    """Read the six longs at offsets 0, 8, ..., 40 (§6.1, plus 5.5's `logicsPhysicalOffset`)."""
    if len(data) < _FIELDS.size:
        raise ValueError(f"checkpoint of {len(data)} bytes is shorter than its {_FIELDS.size}-byte fields")
    return Checkpoint(*_FIELDS.unpack_from(data, 0))


def encode_checkpoint(cp: Checkpoint) -> bytes:
    """The 4096-byte file for `cp` (§6.1)."""
    fields = _FIELDS.pack(
        cp.physic_msg_timestamp,
        cp.logics_msg_timestamp,
        cp.index_msg_timestamp,
        cp.master_flushed_offset,
        cp.confirm_phy_offset,
        cp.logics_physical_offset,
    )
    return fields + bytes(CHECKPOINT_SIZE - len(fields))
