"""One commit-log record: scalar decode, validity check and encode (spec §2.2-§2.12).

`check_record` mirrors `CommitLog.checkMessageAndReturnSize` (§2.12); `decode_record` turns a record
into a `MessageRecord` (one table row); `encode_record` writes the bytes a broker would write.
The columnar decoder (`columnar.py`) is the fast path; this module is the reference.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rmqstore.format.compression import MAX_MESSAGE_SIZE, BodyDecompressionError, decompress_body
from rmqstore.format.hosts import decode_host, encode_host, is_ipv6_host
from rmqstore.format.layout import (
    BLANK_MAGIC,
    CRC32_PROPERTY_NAME,
    CRC32_RESERVED_LEN,
    END_FILE_MIN_BLANK_LENGTH,
    MAGIC_V1,
    MAGIC_V2,
    OFF_MAGIC,
    PROPERTY_SEPARATOR,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    born_host_len,
    record_length,
    store_host_len,
    topic_length_width,
)
from rmqstore.format.msgid import offset_msg_id
from rmqstore.format.properties import (
    encode_crc_property,
    encode_properties,
    parse_properties,
)

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
"""`TopicValidator.RMQ_SYS_SCHEDULE_TOPIC`: delay-level messages wait here (§2.10)."""
PROPERTY_KEYS = "KEYS"
PROPERTY_TAGS = "TAGS"
PROPERTY_UNIQ_KEY = "UNIQ_KEY"
PROPERTY_DELAY = "DELAY"
PROPERTY_INNER_MULTI_DISPATCH = "INNER_MULTI_DISPATCH"
"""Multi-dispatch (§4.6): the queues, `,`-separated, the record is also dispatched to."""
PROPERTY_INNER_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET"
"""Multi-dispatch (§4.6): the record's queue offset in each of those queues, in the same order."""
LMQ_PREFIX = "%LMQ%"
"""Light message queues (`enableLmq`, §4.6): dispatched to queue id 0 whatever the record's queue."""
RETRY_PREFIX = "%RETRY%"
"""`MixAll.RETRY_GROUP_TOPIC_PREFIX`: a group's retry topic is `%RETRY%<group>` (§2.10)."""
DLQ_PREFIX = "%DLQ%"
"""`MixAll.DLQ_GROUP_TOPIC_PREFIX`: a group's dead-letter topic is `%DLQ%<group>` (§2.10)."""
TIMER_TOPIC = "rmq_sys_wheel_timer"
"""`TimerMessageStore.TIMER_TOPIC`: 5.x timer messages wait here (§2.10)."""
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
PROPERTY_REAL_TOPIC = "REAL_TOPIC"
PROPERTY_REAL_QID = "REAL_QID"
PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
PROPERTY_TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
PROPERTY_TIMER_OUT_MS = "TIMER_OUT_MS"
MULTI_DISPATCH_SKIPPED = (RETRY_PREFIX, "rmq_sys_", SCHEDULE_TOPIC)
"""Topic prefixes `MultiDispatchUtils.isNeedHandleMultiDispatch` never multi-dispatches (§4.6)."""
KEY_SEPARATOR = " "

MAX_V1_TOPIC_LENGTH = 127
"""v1 TOPICLENGTH is a signed byte; the broker switches to v2 above 127 Java chars (§2.5)."""
MAX_V2_TOPIC_LENGTH = 0x7FFF
MAX_PROPERTIES_LENGTH = 0x7FFF
"""PROPERTIESLENGTH is a signed short (§2.2)."""

_HEAD = struct.Struct(">iIiiiqqiq")
"""TOTALSIZE, MAGIC, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET, PHYSICALOFFSET, SYSFLAG, BORNTIMESTAMP."""
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_SHORT = struct.Struct(">h")
_BYTE = struct.Struct(">b")
_UINT = struct.Struct(">I")
_INT_MAX = 0x7FFFFFFF


def body_crc(body: bytes) -> int:
    """BODYCRC / record CRC: `java.util.zip.CRC32` masked with 0x7FFFFFFF (§2.7)."""
    return zlib.crc32(body) & 0x7FFFFFFF


def split_keys(keys: str | None) -> list[str] | None:
    """KEYS split on single spaces with empty tokens dropped (§2.8, §5.4); None when absent."""
    if keys is None:
        return None
    return [token for token in keys.split(KEY_SEPARATOR) if token]


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """One stored message, fields named after the table columns (design §2) plus the magic code.

    `commit_log_offset` and `msg_id` come from the record's PHYSICALOFFSET field; timestamps are
    epoch milliseconds; `keys` is None when there is no KEYS property. `properties` has every
    property (last duplicate wins), the 5.2+ `__CRC32#` record-CRC property included, as
    RocketMQ's `MessageDecoder` returns them.
    """

    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    store_size: int
    msg_id: str
    uniq_key: str | None
    key: str | None
    keys: list[str] | None
    tags: str | None
    body: bytes
    body_crc: int
    flag: int
    sys_flag: int
    born_timestamp: int
    store_timestamp: int
    born_host: str
    store_host: str
    reconsume_times: int
    prepared_transaction_offset: int
    properties: dict[str, str]
    magic: int

    def to_row(self) -> dict[str, Any]:
        """The row keyed by table column names (`table.COLUMN_NAMES` order); timestamps as ms ints."""
        return {
            "topic": self.topic,
            "queueId": self.queue_id,
            "queueOffset": self.queue_offset,
            "commitLogOffset": self.commit_log_offset,
            "storeSize": self.store_size,
            "msgId": self.msg_id,
            "uniqKey": self.uniq_key,
            "key": self.key,
            "keys": None if self.keys is None else list(self.keys),
            "tags": self.tags,
            "body": self.body,
            "bodyCrc": self.body_crc,
            "flag": self.flag,
            "sysFlag": self.sys_flag,
            "bornTimestamp": self.born_timestamp,
            "storeTimestamp": self.store_timestamp,
            "bornHost": self.born_host,
            "storeHost": self.store_host,
            "reconsumeTimes": self.reconsume_times,
            "preparedTransactionOffset": self.prepared_transaction_offset,
            "properties": dict(self.properties),
        }


RecordKind = Literal["record", "blank", "invalid"]


@dataclass(frozen=True, slots=True)
class RecordCheck:
    """Outcome of `check_record`.

    kind "record": a valid message of `size` = TOTALSIZE bytes. kind "blank": the end-of-segment
    BLANK, `size` = its TOTALSIZE (the bytes left in the segment). kind "invalid": `reason` says why;
    `size` is TOTALSIZE when only the recomputed length disagrees (RocketMQ's "[BUG]" case, §2.12
    step 8), else -1.
    """

    kind: RecordKind
    size: int
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class _Layout:
    """Positions and fixed fields of a record that passed the structural checks."""

    pos: int
    total_size: int
    magic: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    physical_offset: int
    sys_flag: int
    born_timestamp: int
    store_timestamp: int
    born_host: tuple[int, int]
    store_host: tuple[int, int]
    reconsume_times: int
    prepared_transaction_offset: int
    body: tuple[int, int]
    topic: tuple[int, int]
    properties: tuple[int, int]


class _Invalid(Exception):
    def __init__(self, reason: str, size: int = -1) -> None:
        super().__init__(reason)
        self.reason = reason
        self.size = size


class _Cursor:
    """Big-endian reads over a buffer that fail with `_Invalid` naming the field and position."""

    def __init__(self, view: memoryview, pos: int) -> None:
        self.view = view
        self.pos = pos

    def _take(self, n: int, field: str) -> int:
        start = self.pos
        if n < 0 or start + n > len(self.view):
            raise _Invalid(f"{field} at position {start} ({n} bytes) runs past the end of the buffer")
        self.pos = start + n
        return start

    def unpack(self, fmt: struct.Struct, field: str) -> int:
        return fmt.unpack_from(self.view, self._take(fmt.size, field))[0]

    def span(self, n: int, field: str) -> tuple[int, int]:
        start = self._take(n, field)
        return start, start + n


def _java_int(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def parse_java_int(text: str) -> int | None:
    """`Integer.parseInt` for plain decimal text (optional sign); None where Java would throw."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    value = int(text)
    return value if -(1 << 31) <= value <= _INT_MAX else None


def _expected_prop_crc(value: str | None) -> int:
    """The `__CRC32#` value read back the way recovery does (digits reversed, int overflow, -1 if absent)."""
    if value is None:
        return -1
    expected = 0
    for char in reversed(value):
        expected = _java_int(expected * 10 + ord(char) - ord("0"))
    return expected


def _scan(
    view: memoryview,
    pos: int,
    *,
    check_crc: bool,
    verify_prop_crc: bool,
    expected_physical_offset: int | None,
) -> _Layout | RecordCheck:
    """Walk the record at pos in the order of `checkMessageAndReturnSize` (§2.12).

    Returns the layout of a valid record, a blank RecordCheck, or raises `_Invalid`.
    """
    if pos < 0 or len(view) - pos <= 4:
        raise _Invalid(
            f"only {max(len(view) - pos, 0)} bytes left at position {pos}, a record needs more than 4"
        )
    cur = _Cursor(view, pos)
    total_size = cur.unpack(_INT, "TOTALSIZE")
    if len(view) - pos < total_size:
        raise _Invalid(
            f"TOTALSIZE {total_size} at position {pos} runs past the end of the buffer "
            f"({len(view) - pos} bytes left)"
        )
    magic = cur.unpack(_UINT, "MAGICCODE")
    if magic == BLANK_MAGIC:
        return RecordCheck("blank", total_size)
    if magic not in (MAGIC_V1, MAGIC_V2):
        raise _Invalid(f"bad magic code {magic:#010x} at position {pos + OFF_MAGIC}")
    if total_size < 0:
        raise _Invalid(f"negative TOTALSIZE {total_size} at position {pos}")
    crc = cur.unpack(_INT, "BODYCRC")
    queue_id = cur.unpack(_INT, "QUEUEID")
    flag = cur.unpack(_INT, "FLAG")
    queue_offset = cur.unpack(_LONG, "QUEUEOFFSET")
    physical_offset = cur.unpack(_LONG, "PHYSICALOFFSET")
    sys_flag = cur.unpack(_INT, "SYSFLAG")
    born_timestamp = cur.unpack(_LONG, "BORNTIMESTAMP")
    born_host = cur.span(born_host_len(sys_flag), "BORNHOST")
    store_timestamp = cur.unpack(_LONG, "STORETIMESTAMP")
    store_host = cur.span(store_host_len(sys_flag), "STOREHOSTADDRESS")
    reconsume_times = cur.unpack(_INT, "RECONSUMETIMES")
    prepared = cur.unpack(_LONG, "PREPAREDTRANSACTIONOFFSET")
    body_len_pos = cur.pos
    body_len = cur.unpack(_INT, "BODYLENGTH")
    body = (cur.pos, cur.pos)
    if body_len > 0:
        if body_len > total_size:
            raise _Invalid(f"BODYLENGTH {body_len} at position {body_len_pos} exceeds TOTALSIZE {total_size}")
        body = cur.span(body_len, "BODY")
        if check_crc and not verify_prop_crc:
            actual = body_crc(view[body[0] : body[1]])
            if actual != crc:
                raise _Invalid(f"BODYCRC mismatch at position {pos}: stored {crc}, body has {actual}")
    topic_len_pos = cur.pos
    topic_len = cur.unpack(_SHORT if topic_length_width(magic) == 2 else _BYTE, "TOPICLENGTH")
    if topic_len < 0 or topic_len > total_size:
        raise _Invalid(f"bad TOPICLENGTH {topic_len} at position {topic_len_pos}")
    topic = cur.span(topic_len, "TOPIC")
    props_len_pos = cur.pos
    props_len = cur.unpack(_SHORT, "PROPERTIESLENGTH")
    props = (cur.pos, cur.pos)
    if props_len > 0:
        if props_len > total_size:
            raise _Invalid(
                f"PROPERTIESLENGTH {props_len} at position {props_len_pos} exceeds TOTALSIZE {total_size}"
            )
        props = cur.span(props_len, "PROPERTIES")
        if verify_prop_crc or _topic_is(view, topic, SCHEDULE_TOPIC):
            _check_properties(view, props, topic, verify_prop_crc and check_crc, cur.pos, total_size)
    elif verify_prop_crc and check_crc:
        raise _Invalid(f"record at position {pos} has no {CRC32_PROPERTY_NAME} property")
    computed = record_length(sys_flag, magic, body_len, topic_len, props_len)
    if computed != total_size:
        raise _Invalid(
            f"TOTALSIZE {total_size} at position {pos} differs from its fields' total length {computed}",
            size=total_size,
        )
    if expected_physical_offset is not None and physical_offset != expected_physical_offset:
        raise _Invalid(
            f"PHYSICALOFFSET field {physical_offset} at position {pos} does not match the record's "
            f"physical offset {expected_physical_offset}"
        )
    return _Layout(
        pos=pos,
        total_size=total_size,
        magic=magic,
        body_crc=crc,
        queue_id=queue_id,
        flag=flag,
        queue_offset=queue_offset,
        physical_offset=physical_offset,
        sys_flag=sys_flag,
        born_timestamp=born_timestamp,
        store_timestamp=store_timestamp,
        born_host=born_host,
        store_host=store_host,
        reconsume_times=reconsume_times,
        prepared_transaction_offset=prepared,
        body=body,
        topic=topic,
        properties=props,
    )


def _topic_is(view: memoryview, topic: tuple[int, int], name: str) -> bool:
    return bytes(view[topic[0] : topic[1]]) == name.encode("ascii")


def _check_properties(
    view: memoryview,
    props: tuple[int, int],
    topic: tuple[int, int],
    verify_crc: bool,
    end: int,
    total_size: int,
) -> None:
    """Property checks of §2.12 steps 6-7: a schedule-topic DELAY must be an int; the `__CRC32#` CRC."""
    parsed = parse_properties(view[props[0] : props[1]])
    delay = parsed.get(PROPERTY_DELAY)
    if delay is not None and _topic_is(view, topic, SCHEDULE_TOPIC) and parse_java_int(delay) is None:
        raise _Invalid(f"{SCHEDULE_TOPIC} record with a non-integer DELAY {delay!r} at position {props[0]}")
    if not verify_crc:
        return
    expected = _expected_prop_crc(parsed.get(CRC32_PROPERTY_NAME))
    if expected <= 0:
        raise _Invalid(f"no usable {CRC32_PROPERTY_NAME} property at position {props[0]}")
    start = end - total_size
    if start < 0:
        raise _Invalid(f"TOTALSIZE {total_size} reaches before the buffer start")
    actual = body_crc(view[start : end - CRC32_RESERVED_LEN])
    if actual != expected:
        raise _Invalid(
            f"record CRC mismatch at position {start}: {CRC32_PROPERTY_NAME} says {expected}, got {actual}"
        )


def check_record(
    buf: Any,
    pos: int,
    *,
    check_crc: bool,
    verify_prop_crc: bool = False,
    expected_physical_offset: int | None = None,
) -> RecordCheck:
    """Validate the record at pos like `CommitLog.checkMessageAndReturnSize` (§2.12); never raises.

    `check_crc` checks BODYCRC (recovery's `checkCRCOnRecover`). `verify_prop_crc` is the broker's
    `forceVerifyPropCRC`: with `check_crc` the `__CRC32#` record CRC is checked instead of BODYCRC.
    `expected_physical_offset` adds the extra sanity check PHYSICALOFFSET == actual offset.
    """
    try:
        result = _scan(
            memoryview(buf).cast("B"),
            pos,
            check_crc=check_crc,
            verify_prop_crc=verify_prop_crc,
            expected_physical_offset=expected_physical_offset,
        )
    except _Invalid as exc:
        return RecordCheck("invalid", exc.size, exc.reason)
    if isinstance(result, RecordCheck):
        return result
    return RecordCheck("record", result.total_size)


def decode_record(buf: Any, pos: int, *, decompress: bool = True,
                  max_body_size: int = MAX_MESSAGE_SIZE) -> MessageRecord:
    """Decode the record at pos (no CRC check). Raises ValueError naming the position and cause.

    With `decompress`, a compressed body (sysFlag bit 0, §2.9) is returned decompressed (an empty
    stored body stays empty); one that cannot be, or inflates past `max_body_size` bytes, raises
    BodyDecompressionError.
    """
    view = memoryview(buf).cast("B")
    try:
        layout = _scan(view, pos, check_crc=False, verify_prop_crc=False, expected_physical_offset=None)
    except _Invalid as exc:
        raise ValueError(f"invalid record: {exc.reason}") from None
    if isinstance(layout, RecordCheck):
        raise ValueError(f"BLANK (end-of-segment) record at position {pos}, not a message")
    return _to_message(view, layout, max_body_size if decompress else None)


def _to_message(view: memoryview, layout: _Layout, max_body_size: int | None) -> MessageRecord:
    properties = parse_properties(view[layout.properties[0] : layout.properties[1]])
    body = bytes(view[layout.body[0] : layout.body[1]])
    if max_body_size is not None:
        try:
            body = decompress_body(body, layout.sys_flag, max_size=max_body_size)
        except BodyDecompressionError as exc:
            raise BodyDecompressionError(exc.cause, position=layout.pos,
                                         message=f"record at position {layout.pos}: {exc}") from None
    store_host = bytes(view[layout.store_host[0] : layout.store_host[1]])
    keys = properties.get(PROPERTY_KEYS)
    return MessageRecord(
        topic=bytes(view[layout.topic[0] : layout.topic[1]]).decode("utf-8", errors="replace"),
        queue_id=layout.queue_id,
        queue_offset=layout.queue_offset,
        commit_log_offset=layout.physical_offset,
        store_size=layout.total_size,
        msg_id=offset_msg_id(store_host, layout.physical_offset),
        uniq_key=properties.get(PROPERTY_UNIQ_KEY),
        key=keys,
        keys=split_keys(keys),
        tags=properties.get(PROPERTY_TAGS),
        body=body,
        body_crc=layout.body_crc,
        flag=layout.flag,
        sys_flag=layout.sys_flag,
        born_timestamp=layout.born_timestamp,
        store_timestamp=layout.store_timestamp,
        born_host=decode_host(view[layout.born_host[0] : layout.born_host[1]]),
        store_host=decode_host(store_host),
        reconsume_times=layout.reconsume_times,
        prepared_transaction_offset=layout.prepared_transaction_offset,
        properties=properties,
        magic=layout.magic,
    )


def _java_length(s: str) -> int:
    """`String.length()`: UTF-16 code units."""
    return len(s.encode("utf-16-le", errors="surrogatepass")) // 2


def _require_range(name: str, value: int, bits: int) -> None:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not low <= value <= high:
        raise ValueError(f"{name} {value} does not fit a signed {bits}-bit field")


def encode_record(
    *,
    topic: str,
    queue_id: int,
    body: bytes,
    properties: Mapping[str, str] | bytes,
    queue_offset: int,
    physical_offset: int,
    born_timestamp: int,
    store_timestamp: int,
    born_host: str,
    store_host: str,
    flag: int = 0,
    sys_flag: int = 0,
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
    magic: int | None = None,
    append_crc_property: bool = False,
) -> bytes:
    """The bytes a broker writes for one message (§2.2, `MessageExtEncoder.encode`).

    `properties` is a mapping (encoded in its iteration order, §2.8) or the raw PROPERTIES bytes.
    magic None -> v2 iff the topic is longer than 127 Java chars (§2.5). The IPv6 sysFlag bits are
    set from the host strings. BODYCRC is computed over `body` as given (compress it first and set
    the compression bits yourself). `append_crc_property` adds the 5.2+ `__CRC32#` property (§2.8).
    """
    if magic is None:
        magic = MAGIC_V2 if _java_length(topic) > MAX_V1_TOPIC_LENGTH else MAGIC_V1
    if magic not in (MAGIC_V1, MAGIC_V2):
        raise ValueError(f"magic must be MAGIC_V1 or MAGIC_V2, got {magic:#x}")
    topic_bytes = topic.encode("utf-8")
    max_topic = MAX_V2_TOPIC_LENGTH if magic == MAGIC_V2 else MAX_V1_TOPIC_LENGTH
    if len(topic_bytes) > max_topic:
        raise ValueError(f"topic is {len(topic_bytes)} UTF-8 bytes, magic {magic:#x} allows {max_topic}")
    if isinstance(properties, Mapping):
        if append_crc_property:
            properties = {k: v for k, v in properties.items() if k != CRC32_PROPERTY_NAME}
        props = encode_properties(properties)
    else:
        props = bytes(properties)
    if append_crc_property and props and props[-1] != PROPERTY_SEPARATOR:
        props += bytes([PROPERTY_SEPARATOR])
    props_len = len(props) + (CRC32_RESERVED_LEN if append_crc_property else 0)
    if props_len > MAX_PROPERTIES_LENGTH:
        raise ValueError(f"PROPERTIES would be {props_len} bytes, the limit is {MAX_PROPERTIES_LENGTH}")
    sys_flag &= ~(SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6)
    if is_ipv6_host(born_host):
        sys_flag |= SYSFLAG_BORNHOST_V6
    if is_ipv6_host(store_host):
        sys_flag |= SYSFLAG_STOREHOST_V6
    for name, value, bits in (
        ("queue_id", queue_id, 32),
        ("flag", flag, 32),
        ("sys_flag", sys_flag, 32),
        ("reconsume_times", reconsume_times, 32),
        ("queue_offset", queue_offset, 64),
        ("physical_offset", physical_offset, 64),
        ("born_timestamp", born_timestamp, 64),
        ("store_timestamp", store_timestamp, 64),
        ("prepared_transaction_offset", prepared_transaction_offset, 64),
    ):
        _require_range(name, value, bits)
    total = record_length(sys_flag, magic, len(body), len(topic_bytes), props_len)
    _require_range("TOTALSIZE", total, 32)
    out = bytearray(
        _HEAD.pack(
            total,
            magic,
            body_crc(body),
            queue_id,
            flag,
            queue_offset,
            physical_offset,
            sys_flag,
            born_timestamp,
        )
    )
    out += encode_host(born_host)
    out += _LONG.pack(store_timestamp)
    out += encode_host(store_host)
    out += struct.pack(">iqi", reconsume_times, prepared_transaction_offset, len(body))
    out += body
    out += (_SHORT if magic == MAGIC_V2 else _BYTE).pack(len(topic_bytes))
    out += topic_bytes
    out += _SHORT.pack(props_len)
    out += props
    if append_crc_property:
        out += encode_crc_property(body_crc(out))
    return bytes(out)


def encode_blank(size: int) -> bytes:
    """The 8-byte end-of-segment BLANK: int `size` (bytes left in the segment) + BLANK magic (§2.6)."""
    if not END_FILE_MIN_BLANK_LENGTH <= size <= _INT_MAX:
        raise ValueError(f"a BLANK covers at least {END_FILE_MIN_BLANK_LENGTH} bytes, got {size}")
    return struct.pack(">iI", size, BLANK_MAGIC)


def dispatched_queues(queues: str, offsets: str, queue_id: int) -> list[tuple[tuple[str, int], int]]:
    """((queue name, queue id), queue offset) of each queue a multi-dispatched record went to, from its
    INNER_MULTI_DISPATCH and INNER_MULTI_QUEUE_OFFSET: an `%LMQ%` queue's id is 0, another's the record's
    own `queue_id`; names with a path separator are skipped, and lists of different lengths dispatch
    nothing (`ConsumeQueue.multiDispatchLmqQueue`, §4.6); offsets that are not numbers (the broker writes
    them) are read as no dispatch."""
    names, numbers = queues.split(","), offsets.split(",")
    if not queues.strip() or not offsets.strip() or len(names) != len(numbers):
        return []
    try:
        return [((name, 0 if name.startswith(LMQ_PREFIX) else queue_id), int(number))
                for name, number in zip(names, numbers, strict=True) if "/" not in name and "\\" not in name]
    except ValueError:
        return []
