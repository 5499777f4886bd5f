"""The verified record of spec §8.2, its CRC-property variant and the BLANK of §2.6."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np
import pytest
from format_vectors import RECORD, VECTORS

from rmqstore.format.layout import MAGIC_V1, MIN_RECORD_SIZE
from rmqstore.format.record import check_record, decode_record, encode_blank, encode_record
from rmqstore.format.table import COLUMN_NAMES


def test_decode_every_field(golden_record: bytes, golden_fields: dict[str, Any]) -> None:
    uniq_key = RECORD["decoded"]["uniqKey"]
    rec = decode_record(golden_record, 0)
    assert {column: rec.to_row()[column] for column in RECORD["decoded"] if column in COLUMN_NAMES} == {
        column: value for column, value in RECORD["decoded"].items() if column in COLUMN_NAMES}
    assert rec.topic == "TopicTest"
    assert rec.queue_id == 0
    assert rec.queue_offset == 0
    assert rec.commit_log_offset == 0
    assert rec.store_size == 178
    assert rec.msg_id == "7F00000100002A9F0000000000000000"
    assert rec.uniq_key == uniq_key
    assert rec.key == "k1 k2"
    assert rec.keys == ["k1", "k2"]
    assert rec.tags == "TagA"
    assert rec.body == b"hello"
    assert rec.body_crc == 907060870
    assert rec.flag == 0
    assert rec.sys_flag == 0
    assert rec.born_timestamp == 1_700_000_000_000
    assert rec.store_timestamp == 1_700_000_000_123
    assert rec.born_host == "127.0.0.1:53010"
    assert rec.store_host == "127.0.0.1:10911"
    assert rec.reconsume_times == 0
    assert rec.prepared_transaction_offset == 0
    assert rec.properties == {"KEYS": "k1 k2", "UNIQ_KEY": uniq_key, "WAIT": "true", "TAGS": "TagA"}
    assert rec.magic == MAGIC_V1


def test_row_has_every_table_column(golden_record: bytes, golden_fields: dict[str, Any]) -> None:
    row = decode_record(golden_record, 0).to_row()
    assert tuple(row) == COLUMN_NAMES
    assert row["storeTimestamp"] == golden_fields["store_timestamp"]
    assert row["keys"] == ["k1", "k2"]


def test_encode_reproduces_the_bytes(golden_record: bytes, golden_fields: dict[str, Any]) -> None:
    assert encode_record(**golden_fields) == golden_record


def test_decode_at_an_offset_inside_a_numpy_buffer(golden_record: bytes) -> None:
    buf = np.frombuffer(bytes(50) + golden_record + bytes(8), dtype=np.uint8)
    assert decode_record(buf, 50).body == b"hello"
    assert check_record(buf, 50, check_crc=True).size == 178


def test_check_golden_record(golden_record: bytes) -> None:
    check = check_record(golden_record, 0, check_crc=True)
    assert (check.kind, check.size, check.reason) == ("record", 178, None)


def test_crc_property_variant(golden_record: bytes, golden_fields: dict[str, Any]) -> None:
    vector = VECTORS["record_with_crc"]
    data = encode_record(**golden_fields, append_crc_property=True)
    assert len(data) == vector["size"]
    assert struct.unpack_from(">i", data, 0)[0] == vector["size"]
    assert struct.unpack_from(">h", data, 103)[0] == vector["properties_length"]
    assert data[-20:] == bytes.fromhex(vector["crc_property_hex"])
    assert data[4:103] == golden_record[4:103]
    assert data[105:178] == golden_record[105:178]
    assert zlib.crc32(data[:178]) & 0x7FFFFFFF == vector["record_crc"]
    check = check_record(data, 0, check_crc=True, verify_prop_crc=True)
    assert check.kind == "record"
    rec = decode_record(data, 0)
    # MessageDecoder keeps the record-CRC property like any other one (digits as stored).
    assert rec.properties == {**golden_fields["properties"], "__CRC32#": vector["crc_property"]}
    assert rec.store_size == 198


def test_crc_property_covers_the_header(golden_fields: dict[str, Any]) -> None:
    data = bytearray(encode_record(**golden_fields, append_crc_property=True))
    data[20] ^= 0x01  # QUEUEOFFSET is not in BODYCRC but is in the record CRC
    assert check_record(data, 0, check_crc=True).kind == "record"
    check = check_record(data, 0, check_crc=True, verify_prop_crc=True)
    assert check.kind == "invalid"
    assert "record CRC mismatch" in (check.reason or "")


def test_missing_crc_property_fails_forced_verification(golden_record: bytes) -> None:
    check = check_record(golden_record, 0, check_crc=True, verify_prop_crc=True)
    assert check.kind == "invalid"
    assert "__CRC32#" in (check.reason or "")


def test_blank_example_of_spec_2_6(golden_fields: dict[str, Any]) -> None:
    segment = bytearray(512)
    first = encode_record(**golden_fields)
    second = encode_record(**{**golden_fields, "physical_offset": 178, "queue_offset": 1})
    segment[0:178] = first
    segment[178:356] = second
    segment[356:364] = encode_blank(512 - 356)
    assert bytes(segment[356:364]) == bytes.fromhex("0000009CCBD43194")
    assert check_record(segment, 356, check_crc=True) == check_record(segment, 356, check_crc=False)
    blank = check_record(segment, 356, check_crc=True)
    assert (blank.kind, blank.size) == ("blank", 156)
    with pytest.raises(ValueError, match="BLANK"):
        decode_record(segment, 356)


def test_blank_size_limits() -> None:
    with pytest.raises(ValueError, match="at least 8"):
        encode_blank(7)


def test_minimum_record_size(golden_fields: dict[str, Any]) -> None:
    data = encode_record(**{**golden_fields, "topic": "", "body": b"", "properties": {}})
    assert len(data) == MIN_RECORD_SIZE
    assert check_record(data, 0, check_crc=True).kind == "record"
    rec = decode_record(data, 0)
    assert (rec.topic, rec.body, rec.properties, rec.keys, rec.uniq_key) == ("", b"", {}, None, None)


def test_physical_offset_sanity_check_is_optional(golden_record: bytes) -> None:
    assert check_record(golden_record, 0, check_crc=True, expected_physical_offset=0).kind == "record"
    check = check_record(golden_record, 0, check_crc=True, expected_physical_offset=1024)
    assert check.kind == "invalid"
    assert "PHYSICALOFFSET" in (check.reason or "")
