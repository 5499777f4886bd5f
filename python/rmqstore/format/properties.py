"""The PROPERTIES field of a commit-log record (spec §2.8).

`name 0x01 value 0x02` pairs in UTF-8. Parsing mirrors `MessageDecoder.string2messageProperties`;
the optional 5.2+ trailing `__CRC32#` property carries a record CRC with its digits reversed.
"""

from __future__ import annotations

from collections.abc import Mapping

from rmqstore.format.layout import (
    CRC32_PROPERTY_NAME,
    CRC32_RESERVED_LEN,
    PROPERTY_NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
)

NAME_VALUE_SEPARATOR = chr(PROPERTY_NAME_VALUE_SEPARATOR)
SEPARATOR = chr(PROPERTY_SEPARATOR)
_CRC_PREFIX = (CRC32_PROPERTY_NAME + NAME_VALUE_SEPARATOR).encode("ascii")
_CRC_DIGITS = CRC32_RESERVED_LEN - len(_CRC_PREFIX) - 1


def parse_properties(data: bytes) -> dict[str, str]:
    """Decode PROPERTIES like `string2messageProperties` (§2.8).

    The field is decoded as UTF-8 (malformed bytes -> U+FFFD) and split at each 0x02 (the last
    segment may lack it). A segment is used only when its first 0x01 leaves a non-empty name and a
    non-empty value; the value keeps any further 0x01. Later duplicates overwrite earlier ones.
    """
    text = bytes(data).decode("utf-8", errors="replace")
    props: dict[str, str] = {}
    for segment in text.split(SEPARATOR):
        sep = segment.find(NAME_VALUE_SEPARATOR)
        if 0 < sep < len(segment) - 1:
            props[segment[:sep]] = segment[sep + 1 :]
    return props


def encode_properties(props: Mapping[str, str]) -> bytes:
    """Encode like `messageProperties2String`: `name 0x01 value 0x02` per entry, in mapping order (§2.8)."""
    return "".join(f"{name}{NAME_VALUE_SEPARATOR}{value}{SEPARATOR}" for name, value in props.items()).encode(
        "utf-8"
    )


def encode_crc_property(crc: int) -> bytes:
    """The 20-byte `__CRC32#` property: name, 0x01, 10 digits least significant first, 0x02 (§2.8).

    Mirrors `MessageDecoder.createCrc32`; e.g. 1144057678 -> `__CRC32#\\x018767504411\\x02`.
    """
    if not 0 <= crc <= 0x7FFFFFFF:
        raise ValueError(f"record CRC must be a masked 31-bit value, got {crc}")
    return _CRC_PREFIX + str(crc).zfill(_CRC_DIGITS)[::-1].encode("ascii") + bytes([PROPERTY_SEPARATOR])
