"""Keys and values of the consumer-offset table of RocketMQ's v2 config storage (§4.8, `config/rdb/`,
`ConfigStorage` + `ConsumerOffsetManagerV2`, configManagerVersion=v2).

Pure byte layouts, no RocksDB: the store layer iterates the database. Integers are big-endian, names UTF-8.
"""

from __future__ import annotations

import struct

TABLE_PREFIX = 1
"""`TablePrefix.TABLE`: the first byte of every table's key."""
CONSUMER_OFFSET_TABLE = 1
"""`TableId.CONSUMER_OFFSET` (2 bytes); pull offsets (2), topics (3), subscription groups (4) are other
tables."""
DATA_RECORD = 2
"""`RecordPrefix.DATA`; `DATA_VERSION` (1) keys the table's data version."""
CTRL_1 = 0x01
"""Separator byte between key fields (`AbstractRocksDBStorage.CTRL_1`)."""
OFFSET_VALUE_SIZE = 8

_TABLE_HEAD = struct.pack(">BH", TABLE_PREFIX, CONSUMER_OFFSET_TABLE)
CONSUMER_OFFSETS_LOWER = _TABLE_HEAD + bytes([DATA_RECORD])
CONSUMER_OFFSETS_UPPER = _TABLE_HEAD + bytes([DATA_RECORD + 1])
"""The key range `ConsumerOffsetManagerV2.loadConsumerOffsets` iterates: every consumer-offset record."""


def parse_consumer_offset(key: bytes, value: bytes) -> tuple[str, str, int, int]:
    """(group, topic, queueId, offset) of one consumer-offset record: key `[1][0001][2][group length (2)]
    [group][01][topic length (2)][topic][01][queueId (4)]`, value the offset (8).

    ValueError saying what does not fit the layout.
    """
    if len(value) != OFFSET_VALUE_SIZE:
        raise ValueError(f"value is {len(value)} bytes, not an {OFFSET_VALUE_SIZE}-byte offset")
    if not key.startswith(CONSUMER_OFFSETS_LOWER):
        raise ValueError("not a consumer-offset record key")
    at = len(CONSUMER_OFFSETS_LOWER)
    group, at = _name(key, at, "group")
    topic, at = _name(key, at, "topic")
    if len(key) != at + 4:
        raise ValueError(f"{len(key) - at} bytes after the topic's separator, not a 4-byte queue id")
    return group, topic, struct.unpack_from(">i", key, at)[0], struct.unpack(">q", value)[0]


def _name(key: bytes, at: int, what: str) -> tuple[str, int]:
    """The length-prefixed UTF-8 name at `at` and the offset after the CTRL_1 that ends it."""
    if len(key) < at + 2:
        raise ValueError(f"ends before the {what} length")
    (length,) = struct.unpack_from(">H", key, at)
    end = at + 2 + length
    if len(key) <= end or key[end] != CTRL_1:
        raise ValueError(f"{what} length {length} does not end at a CTRL_1 separator")
    try:
        return key[at + 2:end].decode("utf-8"), end + 1
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} is not UTF-8: {exc}") from None
