"""The commit-log record layout (spec §2.2-§2.6) shared by every decoder and encoder.

All integers in a store are big-endian. The fixed header of a record depends on two sysFlag bits
(IPv6 born host, IPv6 store host); everything after the store host moves with them.
"""

from __future__ import annotations

# The layout constants are generated from docs/contract.toml (both engines read the same values).
from rmqstore.format.contract_layout import *  # noqa: F403
from rmqstore.format.contract_layout import (
    IPV4_HOST_LEN,
    IPV6_HOST_LEN,
    MAGIC_V2,
    OFF_BORNHOST,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_STOREHOST_V6,
    TRANSACTION_COMMIT,
    TRANSACTION_NOT_TYPE,
)

QUEUED_TRANSACTION_TYPES = (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT)
"""Only these transaction types get a consume-queue unit (§4.1): PREPARED and ROLLBACK records keep
queueOffset 0 and are in no queue, so a queue position never selects them."""


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
