"""Constants of the commit-log record layout (spec §2.2-§2.6) shared by every decoder and encoder.

All integers in a store are big-endian. The fixed header of a record depends on two sysFlag bits
(IPv6 born host, IPv6 store host); everything after the store host moves with them.
"""

from __future__ import annotations

MAGIC_V1 = 0xDAA320A7
"""MESSAGE_MAGIC_CODE: 1-byte topic length (§2.5)."""
MAGIC_V2 = 0xDAA320AB
"""MESSAGE_MAGIC_CODE_V2 (5.1.0+): 2-byte topic length, used for topics longer than 127 chars."""
BLANK_MAGIC = 0xCBD43194
"""BLANK_MAGIC_CODE: end-of-segment filler; its TOTALSIZE covers the rest of the segment (§2.6)."""
END_FILE_MIN_BLANK_LENGTH = 8
"""A record is written only if at least this many bytes remain after it in the segment (§2.6)."""

# sysFlag bits (§2.3)
SYSFLAG_COMPRESSED = 0x001
SYSFLAG_MULTI_TAGS = 0x002
SYSFLAG_TRANSACTION_MASK = 0x00C
TRANSACTION_NOT_TYPE = 0x000
TRANSACTION_PREPARED = 0x004
TRANSACTION_COMMIT = 0x008
TRANSACTION_ROLLBACK = 0x00C
QUEUED_TRANSACTION_TYPES = (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT)
"""Only these transaction types get a consume-queue unit (§4.1): PREPARED and ROLLBACK records keep
queueOffset 0 and are in no queue, so a queue position never selects them."""
SYSFLAG_BORNHOST_V6 = 0x010
SYSFLAG_STOREHOST_V6 = 0x020
SYSFLAG_NEED_UNWRAP = 0x040
SYSFLAG_INNER_BATCH = 0x080
SYSFLAG_COMPRESSION_TYPE_MASK = 0x700
COMPRESSION_TYPE_SHIFT = 8

# compression types: (sysFlag & 0x700) >> 8 (§2.3, §2.9); 0 is legacy zlib.
COMPRESSION_LEGACY_ZLIB = 0
COMPRESSION_LZ4 = 1
COMPRESSION_ZSTD = 2
COMPRESSION_ZLIB = 3

# Fixed-position fields, the same for every record (§2.2).
OFF_TOTALSIZE = 0
OFF_MAGIC = 4
OFF_BODYCRC = 8
OFF_QUEUEID = 12
OFF_FLAG = 16
OFF_QUEUEOFFSET = 20
OFF_PHYSICALOFFSET = 28
OFF_SYSFLAG = 36
OFF_BORNTIMESTAMP = 40
OFF_BORNHOST = 48

IPV4_HOST_LEN = 8
"""4 address bytes + 4-byte port."""
IPV6_HOST_LEN = 20
"""16 address bytes + 4-byte port."""

FIXED_HEADER_V4 = 84
"""Bytes before BODY for an IPv4 born host and IPv4 store host (BODYLENGTH at 84, BODY at 88 - 4)."""
MIN_RECORD_SIZE = 91
"""Smallest legal record: v4/v4 hosts, empty body, empty topic, empty properties (§2.2)."""

CRC32_PROPERTY_NAME = "__CRC32#"
CRC32_RESERVED_LEN = 20
"""Length of the 5.2+ trailing `__CRC32#` property: name 8 + 0x01 + 10 digits + 0x02 (§2.8)."""

PROPERTY_NAME_VALUE_SEPARATOR = 0x01
PROPERTY_SEPARATOR = 0x02


def born_host_len(sys_flag: int) -> int:
    """Width of BORNHOST: 20 bytes when sysFlag bit 4 is set, else 8 (§2.3)."""
    return IPV6_HOST_LEN if sys_flag & SYSFLAG_BORNHOST_V6 else IPV4_HOST_LEN


def store_host_len(sys_flag: int) -> int:
    """Width of STOREHOSTADDRESS: 20 bytes when sysFlag bit 5 is set, else 8 (§2.3)."""
    return IPV6_HOST_LEN if sys_flag & SYSFLAG_STOREHOST_V6 else IPV4_HOST_LEN


def topic_length_width(magic: int) -> int:
    """TOPICLENGTH is 1 byte for v1 records and 2 bytes for v2 records (§2.5)."""
    return 2 if magic == MAGIC_V2 else 1


def store_timestamp_offset(sys_flag: int) -> int:
    """Position of STORETIMESTAMP inside a record: 48 + born host width (§2.2)."""
    return OFF_BORNHOST + born_host_len(sys_flag)


def body_length_offset(sys_flag: int) -> int:
    """Position of BODYLENGTH: 68 + born host width + store host width (§2.2)."""
    return 68 + born_host_len(sys_flag) + store_host_len(sys_flag)


def record_length(sys_flag: int, magic: int, body_len: int, topic_len: int, properties_len: int) -> int:
    """TOTALSIZE for the given field lengths (`MessageExtEncoder.calMsgLength`, §2.2)."""
    return (
        body_length_offset(sys_flag)
        + 4
        + body_len
        + topic_length_width(magic)
        + topic_len
        + 2
        + properties_len
    )
