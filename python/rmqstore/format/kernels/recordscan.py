"""One record in compiled code: its structure (`scan_record`, the order of `checkMessageAndReturnSize`,
§2.12) and the DELAY rule of schedule-topic records (§2.12 step 6).
"""

from __future__ import annotations

import numpy as np

from rmqstore.format.contract_layout import (
    BLANK_MAGIC,
    MAGIC_V1,
    MAGIC_V2,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
)
from rmqstore.format.kernels.primitives import equal, load_i16, load_i32, load_u32
from rmqstore.format.kernels.properties import (
    VALUE_AT,
    VALUE_LEN,
    find_property,
    name_constant,
    split_properties,
)
from rmqstore.jit import compiled

# record kinds returned by scan_record / walk.walk
RECORD = 0
BLANK = 1
INVALID = 2
END = 3
"""walk only: reached the end position."""

_INT_MAX = (1 << 31) - 1
_SCHEDULE_TOPIC = np.frombuffer(b"SCHEDULE_TOPIC_XXXX", dtype=np.uint8)
_DELAY, _DELAY_PRINT = name_constant(b"DELAY")


@compiled
def scan_record(buf, pos):
    """Structure of the record at pos, in the order of `checkMessageAndReturnSize` (§2.12).

    Returns (kind, TOTALSIZE, sysFlag, body_at, body_len, topic_at, topic_len, props_at, props_len):
    kind RECORD when every field lies inside the buffer, BODYLENGTH / TOPICLENGTH /
    PROPERTIESLENGTH are in range and the recomputed length equals TOTALSIZE; BLANK for the
    end-of-segment filler; else INVALID. Lengths are those of the byte ranges (a negative BODYLENGTH
    or PROPERTIESLENGTH is an empty range, but counts negative in the recomputed length, as in Java).
    No CRC, DELAY, PHYSICALOFFSET or minimum-size check.
    """
    n = len(buf)
    if pos < 0 or n - pos <= 4:
        return INVALID, -1, 0, 0, 0, 0, 0, 0, 0
    size = load_i32(buf, pos)
    if n - pos < size or n - pos < 8:
        return INVALID, size, 0, 0, 0, 0, 0, 0, 0
    magic = load_u32(buf, pos + 4)
    if magic == BLANK_MAGIC:
        return BLANK, size, 0, 0, 0, 0, 0, 0, 0
    if (magic != MAGIC_V1 and magic != MAGIC_V2) or size < 0 or n - pos < 40:
        return INVALID, size, 0, 0, 0, 0, 0, 0, 0
    sys_flag = load_i32(buf, pos + 36)
    body_len_at = (pos + 68 + (20 if sys_flag & SYSFLAG_BORNHOST_V6 else 8)
                   + (20 if sys_flag & SYSFLAG_STOREHOST_V6 else 8))
    if body_len_at + 4 > n:
        return INVALID, size, 0, 0, 0, 0, 0, 0, 0
    body_len = load_i32(buf, body_len_at)
    body_at = body_len_at + 4
    at = body_at
    if body_len > 0:
        if body_len > size or at + body_len > n:
            return INVALID, size, 0, 0, 0, 0, 0, 0, 0
        at += body_len
    topic_width = 2 if magic == MAGIC_V2 else 1
    if at + topic_width > n:
        return INVALID, size, 0, 0, 0, 0, 0, 0, 0
    topic_len = load_i16(buf, at) if topic_width == 2 else np.int64(np.int8(buf[at]))
    topic_at = at + topic_width
    if topic_len < 0 or topic_len > size or topic_at + topic_len + 2 > n:
        return INVALID, size, 0, 0, 0, 0, 0, 0, 0
    props_len = load_i16(buf, topic_at + topic_len)
    props_at = topic_at + topic_len + 2
    if props_len > 0 and (props_len > size or props_at + props_len > n):
        return INVALID, size, 0, 0, 0, 0, 0, 0, 0
    computed = body_at - pos + body_len + topic_width + topic_len + 2 + props_len
    if computed != size:
        return INVALID, size, 0, 0, 0, 0, 0, 0, 0
    return (
        RECORD,
        size,
        sys_flag,
        body_at,
        max(body_len, 0),
        topic_at,
        topic_len,
        props_at,
        max(props_len, 0),
    )


@compiled
def java_int_text(buf, at, length):
    """`Integer.parseInt` succeeds on these bytes: optional sign, ASCII digits, inside int range."""
    if length > 0 and (buf[at] == 0x2B or buf[at] == 0x2D):
        negative = buf[at] == 0x2D
        at += 1
        length -= 1
    else:
        negative = False
    if length == 0:
        return False
    value = 0
    for k in range(length):
        digit = np.int64(buf[at + k]) - 0x30
        if digit < 0 or digit > 9:
            return False
        if value <= _INT_MAX + 1:
            value = value * 10 + digit
    return value <= _INT_MAX + (1 if negative else 0)


@compiled
def delay_ok(buf, topic_at, topic_len, props_at, props_len, props):
    """§2.12 step 6: a SCHEDULE_TOPIC_XXXX record's DELAY property, if any, must be a Java int."""
    if props_len <= 0 or not equal(buf, topic_at, topic_len, _SCHEDULE_TOPIC):
        return True
    count, _ = split_properties(buf, props_at, props_len, props)
    e = find_property(buf, _DELAY, _DELAY_PRINT, count, props)
    return e < 0 or java_int_text(buf, props[VALUE_AT, e], props[VALUE_LEN, e])
