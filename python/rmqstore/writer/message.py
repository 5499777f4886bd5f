"""What a producer hands to the writer, and what the writer hands back.

`MessageSpec` carries the producer-side fields of one message; the writer turns it into the
record(s) a broker would store (topic rewrites, properties, sysFlag bits). `UniqKeyGenerator`
makes client message ids in the `MessageClientIDSetter` format (spec §3.2).
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rmqstore.format.hosts import encode_host
from rmqstore.format.layout import TRANSACTION_NOT_TYPE

DEFAULT_BORN_HOST = "127.0.0.1:53010"


@dataclass(frozen=True)
class MessageSpec:
    """One message as a producer sends it.

    `queue_id` None = the writer picks queues of the topic round-robin. `keys` is a string (stored
    as given, may hold several space-separated keys) or a list of keys (joined with one space).
    `uniq_key` None = generated like a producer does (§3.2) when `auto_uniq_key`, else absent.
    `store_timestamp` None = the writer's clock (non-decreasing). `compression` is a compression
    type (§2.3: 0 legacy zlib, 1 LZ4, 2 zstd, 3 zlib) or None for an uncompressed body.
    `delay_level` > 0 sends the message through `SCHEDULE_TOPIC_XXXX` (§2.10). `transaction` is the
    raw transaction type written to sysFlag (§2.3); PREPARED/ROLLBACK records get no queue offset.
    """

    topic: str
    body: bytes = b""
    queue_id: int | None = None
    tags: str | None = None
    keys: str | Sequence[str] | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    flag: int = 0
    born_timestamp: int | None = None
    store_timestamp: int | None = None
    born_host: str = DEFAULT_BORN_HOST
    compression: int | None = None
    delay_level: int = 0
    transaction: int = TRANSACTION_NOT_TYPE
    uniq_key: str | None = None
    auto_uniq_key: bool = True
    reconsume_times: int = 0
    wait_store_msg_ok: bool = True

    def keys_property(self) -> str | None:
        """The KEYS property value: a string as given, a list joined with single spaces."""
        if self.keys is None:
            return None
        if isinstance(self.keys, str):
            return self.keys
        return " ".join(self.keys)


@dataclass(frozen=True)
class AppendResult:
    """Where a record landed: physical offset, queue offset (0 when it has none), offsetMsgId."""

    physical_offset: int
    queue_offset: int
    msg_id: str
    topic: str
    queue_id: int
    store_size: int
    uniq_key: str | None


class UniqKeyGenerator:
    """Client message ids of one producer process (`MessageClientIDSetter`, §3.2).

    Bytes: client IP (4 or 16) + (short) pid + (int) class-loader hash + (int) ms since the start of
    the current month in local time + (short) counter; uppercase hex (32 or 56 chars).
    """

    def __init__(self, client_host: str, pid: int, class_loader_hash: int) -> None:
        address = encode_host(client_host)[:-4]
        self._prefix = address + struct.pack(">hi", _to_short(pid), _to_int(class_loader_hash))
        self._counter = 0
        self._month = (0, 0)

    def next(self, now_ms: int) -> str:
        """The next id at producer time `now_ms`."""
        start, end = self._month
        if not start <= now_ms < end:  # like `setStartTime`: recompute only when the month changes
            start, end = self._month = _local_month_bounds_ms(now_ms)
        since_month = now_ms - start
        body = struct.pack(">ih", _to_int(since_month), _to_short(self._counter))
        self._counter += 1
        return (self._prefix + body).hex().upper()


def _local_month_bounds_ms(now_ms: int) -> tuple[int, int]:
    """[start of this month, start of the next month) in local time, epoch ms."""
    local = datetime.datetime.fromtimestamp(now_ms / 1000)
    year, month = (local.year + 1, 1) if local.month == 12 else (local.year, local.month + 1)
    start = datetime.datetime(local.year, local.month, 1).timestamp()
    return int(start * 1000), int(datetime.datetime(year, month, 1).timestamp() * 1000)


def _to_short(value: int) -> int:
    """Java `(short)` cast."""
    value &= 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def _to_int(value: int) -> int:
    """Java `(int)` cast."""
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value
