"""ConsumeQueue units: 20 bytes (phyOffset long, TOTALSIZE int, tagsCode long) (spec §4.1-§4.4), and the
46-byte units of a BatchConsumeQueue (§4.5)."""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from rmqstore.format.contract_layout import CQ_UNIT_SIZE, UNIT_DAMAGE_LOOKAHEAD
from rmqstore.format.javahash import tags_code
from rmqstore.format.record import PROPERTY_DELAY, PROPERTY_TAGS, SCHEDULE_TOPIC, parse_java_int

CQ_DTYPE = np.dtype([("phy", ">i8"), ("size", ">i4"), ("tags_code", ">i8")])
BCQ_UNIT_SIZE = 46
BCQ_DTYPE = np.dtype([("phy", ">i8"), ("size", ">i4"), ("tags_code", ">i8"), ("store_time", ">i8"),
                      ("base", ">i8"), ("batch", ">i2"), ("compacted", ">i4"), ("reserved", ">i4")])
"""A BatchConsumeQueue unit (§4.5): the record's position, size and tagsCode, its store time, the queue
offset of its first message (msgBaseOffset) and how many messages it holds (batchSize)."""
FILLER_SIZE = 0x7FFFFFFF
"""Size field of a pre-blank filler unit `(0, Integer.MAX_VALUE, 0)` (§4.3)."""
EXT_ADDRESS_MAX = -(1 << 31) - 1
"""tagsCode values <= Integer.MIN_VALUE - 1 are ConsumeQueueExt addresses (§4.2, §4.4)."""
DEFAULT_SEGMENT_SIZE = 300_000 * CQ_UNIT_SIZE
DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
"""`messageDelayLevel` broker default (§1.3)."""
UNKNOWN_DELAY_LEVEL_MS = 1000
"""`computeDeliverTimestamp` adds 1 s for a level missing from the table (§4.2)."""

_UNIT = struct.Struct(">qiq")
_DELAY_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DELAY_TOKEN = re.compile(r"(\d+)([smhd])")


def parse_delay_levels(spec: str) -> dict[int, int]:
    """`messageDelayLevel` text -> {level (1-based): delay ms}, like `parseDelayLevel` (§1.3)."""
    table: dict[int, int] = {}
    for level, token in enumerate(spec.split(), start=1):
        match = _DELAY_TOKEN.fullmatch(token)
        if match is None:
            raise ValueError(f"bad messageDelayLevel token {token!r} (level {level})")
        table[level] = int(match.group(1)) * _DELAY_UNIT_MS[match.group(2)]
    return table


DEFAULT_DELAY_LEVEL_TABLE: dict[int, int] = parse_delay_levels(DEFAULT_MESSAGE_DELAY_LEVEL)


def parse_units(data: Any) -> np.ndarray:
    """View bytes as an array of `CQ_DTYPE` units (zero copy). The length must be a multiple of 20."""
    if len(data) % CQ_UNIT_SIZE:
        raise ValueError(f"consume-queue data of {len(data)} bytes is not a whole number of 20-byte units")
    return np.frombuffer(data, dtype=CQ_DTYPE)


def parse_batch_units(data: Any) -> np.ndarray:
    """The whole `BCQ_DTYPE` units of `data` (a trailing partial unit is left out), zero copy."""
    whole = len(data) - len(data) % BCQ_UNIT_SIZE
    return np.frombuffer(data, dtype=BCQ_DTYPE, count=whole // BCQ_UNIT_SIZE)


def valid_batch_unit_count(units: np.ndarray) -> int:
    """Leading BatchConsumeQueue units recovery keeps: phyOffset >= 0, size > 0, msgBaseOffset >= 0 and
    batchSize > 0 (`BatchConsumeQueue.recover`, §4.5)."""
    bad = np.flatnonzero((units["phy"] < 0) | (units["size"] <= 0) | (units["base"] < 0)
                         | (units["batch"] <= 0))
    return int(bad[0]) if bad.size else len(units)


EXT_UNIT_HEADER = struct.Struct(">hqqh")
"""A ConsumeQueueExt unit's head (§4.4): size, tagsCode, storeTime, bitMapSize; the bitmap follows."""


def parse_ext_unit(data: Any, position: int) -> tuple[int, int] | None:
    """(tagsCode, storeTime) of the ConsumeQueueExt unit at `position` of an ext file's bytes (§4.4),
    None where there is no whole unit (its size field below the head's size, or the file ends)."""
    if position < 0 or position + EXT_UNIT_HEADER.size > len(data):
        return None
    size, code, store_time, bitmap = EXT_UNIT_HEADER.unpack_from(data, position)
    if size < EXT_UNIT_HEADER.size or size != EXT_UNIT_HEADER.size + bitmap or position + size > len(data):
        return None
    return code, store_time


def encode_unit(phy: int, size: int, tags_code: int) -> bytes:
    """One 20-byte unit (§4.1)."""
    return _UNIT.pack(phy, size, tags_code)


def valid_unit_count(units: np.ndarray) -> int:
    """Number of leading units with phyOffset >= 0 and size > 0: recovery's end of the queue (§4.3).

    Filler units pass this test; skip them with `is_filler`. Looks at growing chunks and stops at the
    first bad unit, so the zero tail of a pre-allocated file (a view of a map) is never touched.
    """
    at, chunk = 0, 4096
    while at < len(units):
        part = units[at : at + chunk]
        bad = np.flatnonzero((part["phy"] < 0) | (part["size"] <= 0))
        if bad.size:
            return at + int(bad[0])
        at, chunk = at + len(part), min(chunk * 4, 1 << 20)
    return len(units)



def valid_units_mask(units: np.ndarray) -> np.ndarray:
    """Boolean mask of the units recovery's test passes: phyOffset >= 0 and size > 0 (§4.3)."""
    return (units["phy"] >= 0) & (units["size"] > 0)


def extend_queue_end(units: np.ndarray, first: int, last: int) -> tuple[int, bool]:
    """Continue the search for the end of a queue file over `units`, its units from index `first`, given
    the index `last` of the last valid unit before them (-1: none). The end is the last valid unit that
    `UNIT_DAMAGE_LOOKAHEAD` invalid units follow (damage.md §2). Returns (the last valid unit's index so
    far, whether the end is found). Looks at growing chunks, so at most about 4x the lookahead of a
    pre-allocated file's zero tail (a view of a map) is touched."""
    at, chunk = 0, 4096
    while at < len(units):
        part = units[at : at + chunk]
        ok = np.flatnonzero(valid_units_mask(part)) + (first + at)
        gaps = np.flatnonzero(np.diff(ok, prepend=last) > UNIT_DAMAGE_LOOKAHEAD)
        if gaps.size:
            return (int(ok[gaps[0] - 1]) if gaps[0] else last), True
        last = int(ok[-1]) if ok.size else last
        at, chunk = at + len(part), min(chunk * 4, 1 << 20)
        if first + at - last > UNIT_DAMAGE_LOOKAHEAD:
            return last, True
    return last, False


def is_filler(units: np.ndarray) -> np.ndarray:
    """Boolean mask of pre-blank filler units `(0, 0x7FFFFFFF, 0)` (§4.3)."""
    return (units["size"] == FILLER_SIZE) & (units["phy"] == 0) & (units["tags_code"] == 0)


def is_ext_address(tags_code: int) -> bool:
    """True when tagsCode is a ConsumeQueueExt address, i.e. <= -2147483649 (§4.2)."""
    return tags_code <= EXT_ADDRESS_MAX


def ext_address_offset(address: int) -> int:
    """Byte offset in the ext log of an ext address: `address - Long.MIN_VALUE` (§4.4)."""
    if not is_ext_address(address):
        raise ValueError(f"tagsCode {address} is not a ConsumeQueueExt address")
    return address + (1 << 63)


def delivery_time_tags_code(
    store_ts: int, delay_level: int, delay_levels: Mapping[int, int] = DEFAULT_DELAY_LEVEL_TABLE
) -> int:
    """Schedule-topic tagsCode: store time + the level's delay, level clamped to the max level (§4.2).

    A level missing from the table (e.g. 0 or negative) gives store time + 1000 ms, like
    `computeDeliverTimestamp`.
    """
    level = min(delay_level, max(delay_levels))
    return store_ts + delay_levels.get(level, UNKNOWN_DELAY_LEVEL_MS)


def record_tags_code(
    topic: str,
    properties: Mapping[str, str],
    store_ts: int,
    delay_levels: Mapping[int, int] = DEFAULT_DELAY_LEVEL_TABLE,
) -> int:
    """tagsCode the dispatcher computes for a record (`checkMessageAndReturnSize`, §2.12 step 6, §4.2).

    The Java hash of TAGS; for `SCHEDULE_TOPIC_XXXX` with a DELAY level > 0 (after clamping to the max
    level) the delivery time instead. Raises ValueError for a non-integer DELAY on the schedule topic.
    """
    code = tags_code(properties.get(PROPERTY_TAGS))
    delay = properties.get(PROPERTY_DELAY)
    if topic != SCHEDULE_TOPIC or delay is None:
        return code
    level = parse_java_int(delay)
    if level is None:
        raise ValueError(f"{SCHEDULE_TOPIC} record has a non-integer DELAY {delay!r}")
    level = min(level, max(delay_levels))
    return delivery_time_tags_code(store_ts, level, delay_levels) if level > 0 else code


def queue_offset_location(queue_offset: int, segment_size: int = DEFAULT_SEGMENT_SIZE) -> tuple[int, int]:
    """(segment start byte offset = file name number, position in it) of a queue offset (§4.3)."""
    if segment_size <= 0 or segment_size % CQ_UNIT_SIZE:
        raise ValueError(f"consume-queue segment size {segment_size} is not a positive multiple of 20")
    byte = queue_offset * CQ_UNIT_SIZE
    return byte - byte % segment_size, byte % segment_size
