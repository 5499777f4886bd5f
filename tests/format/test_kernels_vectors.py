"""Each compiled kernel (`rmqstore.format.kernels`) against its pure form on the record vector of
docs/format.md §8: `record.py`, `properties.parse_properties` and zlib are the oracles."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from format_vectors import RECORD

from rmqstore.format.columnar import as_byte_array, decode_records
from rmqstore.format.kernels import crc, points, properties, recordscan, walk
from rmqstore.format.properties import parse_properties
from rmqstore.format.record import check_record, decode_record

RECORD_BYTES = bytes.fromhex(RECORD["hex"])
DECODED = RECORD["decoded"]


@pytest.fixture
def buf() -> np.ndarray:
    return as_byte_array(RECORD_BYTES + bytes(16))


def test_scan_record_finds_the_fields_check_record_finds(buf: np.ndarray) -> None:
    kind, size, sys_flag, body_at, body_len, topic_at, topic_len, props_at, props_len = (
        recordscan.scan_record(buf, 0))
    assert check_record(buf, 0, check_crc=True).kind == "record" and kind == recordscan.RECORD
    assert (size, sys_flag) == (DECODED["storeSize"], DECODED["sysFlag"])
    assert (topic_at, topic_len) == (DECODED["topicPosition"], DECODED["topicLength"])
    assert (props_at, props_len) == (DECODED["propertiesPosition"], DECODED["propertiesLength"])
    assert RECORD_BYTES[body_at:body_at + body_len].decode() == RECORD["fields"]["body"]


def test_split_properties_equals_parse_properties(buf: np.ndarray) -> None:
    at, length = DECODED["propertiesPosition"], DECODED["propertiesLength"]
    scratch = properties.property_scratch()
    count, ascii = properties.split_properties(buf, at, length, scratch)
    text = RECORD_BYTES.decode("latin-1")  # one character per byte
    at_len = ((properties.NAME_AT, properties.NAME_LEN), (properties.VALUE_AT, properties.VALUE_LEN))
    split = [tuple(text[scratch[a, e]:scratch[a, e] + scratch[n, e]] for a, n in at_len)
             for e in range(count)]
    assert ascii
    assert split == list(parse_properties(RECORD_BYTES[at:at + length]).items())
    assert split == [tuple(pair) for pair in RECORD["fields"]["properties"]]


def test_crc_kernels_equal_zlib_and_the_stored_bodycrc(buf: np.ndarray) -> None:
    body = RECORD["fields"]["body"].encode()
    body_at = RECORD_BYTES.index(body)
    for native in (0, crc.NATIVE_CRC32):
        assert crc.crc32(buf, body_at, len(body), native) == zlib.crc32(body)
        assert crc.crc32(buf, body_at, len(body), native) & 0x7FFFFFFF == DECODED["bodyCrc"]
    damaged = buf.copy()
    damaged[body_at] ^= 1
    assert crc.crc_mismatches(as_byte_array(damaged), np.array([0]), crc.NATIVE_CRC32).tolist() == [True]
    assert check_record(damaged, 0, check_crc=True).kind == "invalid"


@pytest.mark.parametrize("physical", [0, 1])
def test_walk_and_check_starts_give_check_record_verdicts(buf: np.ndarray, physical: int) -> None:
    """A record claiming PHYSICALOFFSET 0 is valid at commit-log offset 0, invalid at 1."""
    verdict = check_record(buf, 0, check_crc=True, expected_physical_offset=physical).kind
    kinds, sizes = points.check_starts(buf, np.array([0]), np.array([physical]), True, crc.NATIVE_CRC32)
    out = np.empty(4, dtype=np.int64)
    count, stop, kind = walk.walk(buf, physical, 0, len(RECORD_BYTES), out)
    assert verdict == ("record" if physical == 0 else "invalid")
    assert kinds.tolist() == [recordscan.RECORD if verdict == "record" else recordscan.INVALID]
    assert sizes.tolist() == [DECODED["storeSize"]]
    assert (count, stop, kind) == ((1, len(RECORD_BYTES), recordscan.END) if verdict == "record"
                                   else (0, 0, recordscan.INVALID))


def test_decode_equals_decode_record(buf: np.ndarray) -> None:
    columns = ["topic", "msgId", "uniqKey", "key", "keys", "tags", "storeSize", "bodyCrc", "body"]
    row = decode_records(buf, np.array([0]), 0, columns).to_pylist()[0]
    reference = decode_record(buf, 0).to_row()
    assert row == {column: reference[column] for column in columns}
    assert {column: row[column] for column in columns if column in DECODED} == {
        column: DECODED[column] for column in columns if column in DECODED}
