"""Java `String.hashCode` and the two hashes RocketMQ derives from it (spec §7, §5.3, §4.2)."""

from __future__ import annotations

import struct

_INT_MIN = -(1 << 31)


def java_string_hashcode(s: str) -> int:
    """Java `String.hashCode`: h = 31*h + c over UTF-16 code units, signed 32-bit (§7).

    A non-BMP character contributes its two surrogate units.
    """
    data = s.encode("utf-16-be", errors="surrogatepass")
    h = 0
    for unit in struct.unpack(f">{len(data) // 2}H", data):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def index_key_hash(key: str) -> int:
    """IndexFile key hash: `Math.abs(key.hashCode())`, and 0 for Integer.MIN_VALUE (§5.3)."""
    h = java_string_hashcode(key)
    return 0 if h == _INT_MIN else abs(h)


def tags_code(tags: str | None) -> int:
    """ConsumeQueue tagsCode of a TAGS string: the sign-extended Java hash, 0 if absent or empty (§4.2)."""
    if not tags:
        return 0
    return java_string_hashcode(tags)
