"""offsetMsgId: the broker message id, store host + physical offset in uppercase hex (spec §3.1)."""

from __future__ import annotations

import struct

from rmqstore.format.hosts import decode_host
from rmqstore.format.layout import IPV4_HOST_LEN, IPV6_HOST_LEN

_OFFSET_LEN = 8
_IPV4_ID_CHARS = 2 * (IPV4_HOST_LEN + _OFFSET_LEN)
_IPV6_ID_CHARS = 2 * (IPV6_HOST_LEN + _OFFSET_LEN)
_MAX_PORT = 0xFFFF


def offset_msg_id(store_host: bytes, physical_offset: int) -> str:
    """Hex of store-host bytes (address + int port) + long physical offset: 32 chars (IPv4) / 56 (IPv6)."""
    return (bytes(store_host) + struct.pack(">q", physical_offset)).hex().upper()


def message_id_problem(text: str) -> str | None:
    """Why `text` can be neither an offsetMsgId (§3.1) nor a UNIQ_KEY (§3.2), None when it can be one.

    Both are 32 (IPv4) or 56 (IPv6) hexadecimal characters.
    """
    if len(text) not in (_IPV4_ID_CHARS, _IPV6_ID_CHARS):
        return f"{len(text)} characters, a message id has {_IPV4_ID_CHARS} or {_IPV6_ID_CHARS}"
    if any(c not in "0123456789abcdefABCDEF" for c in text):
        return "not hexadecimal"
    return None


def decode_offset_msg_id(msg_id: str) -> tuple[str, int]:
    """(store host `ip:port`, physical offset) of an offsetMsgId, like `MessageDecoder.decodeMessageId`.

    IPv4 iff 32 chars, IPv6 iff 56; hex is case-insensitive. Raises ValueError for anything else,
    including a port outside 0..65535 (which is how a UNIQ_KEY is usually rejected, §3.3).
    """
    if len(msg_id) not in (_IPV4_ID_CHARS, _IPV6_ID_CHARS):
        raise ValueError(
            f"offsetMsgId must be {_IPV4_ID_CHARS} or {_IPV6_ID_CHARS} hex chars, got {len(msg_id)}"
        )
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        raise ValueError(f"offsetMsgId {msg_id!r} is not hexadecimal") from None
    host_len = len(raw) - _OFFSET_LEN
    port = struct.unpack_from(">i", raw, host_len - 4)[0]
    if not 0 <= port <= _MAX_PORT:
        raise ValueError(f"{msg_id!r} is not an offsetMsgId: port {port} out of range")
    return decode_host(raw[:host_len]), struct.unpack_from(">q", raw, host_len)[0]
