"""Keys and values of RocketMQ's RocksDB consume queue (§4.7, `storeType=defaultRocksDB`).

Pure byte layouts, no RocksDB: the store layer (`rmqstore.store.rocksdb`) iterates the database.
Integers are big-endian; topic names UTF-8.
"""

from __future__ import annotations

import struct

import numpy as np

CTRL_1 = 0x01
"""Separator byte between key fields (`AbstractRocksDBStorage.CTRL_1`)."""
OFFSET_COLUMN_FAMILY = "offset"
"""Column family of the per-queue min/max table (§4.7); the units are in `default`."""
CHECKPOINT_TOPIC = "CHECKPOINT_TOPIC"
"""`RMQ_SYS_ROCKSDB_OFFSET_TOPIC`: its offset-table entry holds the dispatched max physical offset
(8 bytes)."""
MAX_TAG = b"max"
MIN_TAG = b"min"
CQ_VALUE_SIZE = 28
OFFSET_VALUE_SIZE = 16
ROCKS_UNIT_DTYPE = np.dtype([("phy", ">i8"), ("size", ">i4"), ("tags_code", ">i8"), ("store_time", ">i8")])
"""A unit value: physical offset, TOTALSIZE, tagsCode (§4.2), store timestamp."""


def queue_key_prefix(topic: str, queue_id: int) -> bytes:
    """The bytes every unit key of (topic, queueId) starts with: size, CTRL_1, topic, CTRL_1, queueId,
    CTRL_1."""
    name = topic.encode("utf-8")
    return struct.pack(">iB", len(name), CTRL_1) + name + struct.pack(">BiB", CTRL_1, queue_id, CTRL_1)


def unit_key(topic: str, queue_id: int, queue_offset: int) -> bytes:
    """The unit key of queue offset `queue_offset` (prefix + 8-byte offset): keys sort by queue offset."""
    return queue_key_prefix(topic, queue_id) + struct.pack(">q", queue_offset)


def parse_unit_values(values: list[bytes]) -> np.ndarray:
    """Unit values as `ROCKS_UNIT_DTYPE`; ValueError naming the first one that is not 28 bytes."""
    for i, value in enumerate(values):
        if len(value) != CQ_VALUE_SIZE:
            raise ValueError(f"unit value #{i} is {len(value)} bytes, not {CQ_VALUE_SIZE}")
    return np.frombuffer(b"".join(values), dtype=ROCKS_UNIT_DTYPE)


def parse_offset_entry(key: bytes, value: bytes) -> tuple[str, bytes, int, int, int] | None:
    """(topic, b"max"/b"min", queueId, phyOffset, queue offset) of an offset-table entry; None for the
    checkpoint entry (8-byte value) and keys that do not follow the layout, as RocketMQ skips them."""
    if len(key) < 14 or len(value) != OFFSET_VALUE_SIZE:
        return None
    (length,) = struct.unpack_from(">i", key, 0)
    if length < 0 or len(key) != 4 + 1 + length + 1 + 3 + 1 + 4:
        return None
    topic = key[5 : 5 + length].decode("utf-8", errors="replace")
    tag = key[6 + length : 9 + length]
    (queue_id,) = struct.unpack_from(">i", key, 10 + length)
    phy, queue_offset = struct.unpack(">qq", value)
    return topic, tag, queue_id, phy, queue_offset
