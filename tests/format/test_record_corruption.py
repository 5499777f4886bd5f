"""check_record on damaged bytes: always a verdict with a reason, never an exception (§2.12)."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqstore.format.record import check_record, decode_record, encode_record

pytestmark = pytest.mark.timeout(60)


def invalid_reason(buf: bytes | bytearray, pos: int = 0, *, check_crc: bool = True) -> str:
    check = check_record(buf, pos, check_crc=check_crc)
    assert check.kind == "invalid"
    assert check.reason
    return check.reason


def test_every_truncation_is_invalid(golden_record: bytes) -> None:
    for cut in range(len(golden_record)):
        reason = invalid_reason(golden_record[:cut])
        assert "past the end" in reason or "bytes left" in reason
        with pytest.raises(ValueError, match="position 0"):
            decode_record(golden_record[:cut], 0)


def test_position_past_the_end_is_invalid(golden_record: bytes) -> None:
    assert "0 bytes left" in invalid_reason(golden_record, len(golden_record) + 10)
    assert "position -1" in invalid_reason(golden_record, -1)


def test_total_size_past_end(golden_record: bytes) -> None:
    data = bytearray(golden_record)
    struct.pack_into(">i", data, 0, 1000)
    assert "TOTALSIZE 1000 at position 0 runs past the end" in invalid_reason(data)


def test_wrong_magic(golden_record: bytes) -> None:
    data = bytearray(golden_record)
    data[4:8] = b"\xde\xad\xbe\xef"
    assert invalid_reason(data) == "bad magic code 0xdeadbeef at position 4"


def test_zero_filled_tail_is_invalid() -> None:
    assert "bad magic code 0x00000000" in invalid_reason(bytes(4096), 1000)


def test_zeroed_body_fails_crc_only_when_checked(golden_record: bytes) -> None:
    data = bytearray(golden_record)
    data[88:93] = bytes(5)
    assert "BODYCRC mismatch at position 0" in invalid_reason(data)
    assert check_record(data, 0, check_crc=False).kind == "record"


def test_length_mismatch_reports_total_size_like_rocketmq(golden_record: bytes) -> None:
    data = bytearray(golden_record) + bytes(20)
    struct.pack_into(">i", data, 0, 190)  # fields still add up to 178
    check = check_record(data, 0, check_crc=True)
    assert (check.kind, check.size) == ("invalid", 190)
    assert "fields' total length 178" in (check.reason or "")
    with pytest.raises(ValueError, match="TOTALSIZE 190"):
        decode_record(data, 0)


def test_field_length_beyond_total_size(golden_record: bytes) -> None:
    data = bytearray(golden_record) + bytes(400)
    struct.pack_into(">i", data, 84, 300)  # BODYLENGTH > TOTALSIZE
    assert "BODYLENGTH 300 at position 84 exceeds TOTALSIZE 178" in invalid_reason(data, check_crc=False)


def test_negative_topic_length(golden_record: bytes) -> None:
    data = bytearray(golden_record)
    data[93] = 0xF0
    assert "bad TOPICLENGTH -16 at position 93" in invalid_reason(data)


def test_non_integer_delay_on_schedule_topic(golden_fields: dict[str, Any]) -> None:
    fields = {**golden_fields, "topic": "SCHEDULE_TOPIC_XXXX", "properties": {"DELAY": "x3"}}
    assert "non-integer DELAY" in invalid_reason(encode_record(**fields))
    fields["properties"] = {"DELAY": "3"}
    assert check_record(encode_record(**fields), 0, check_crc=True).kind == "record"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.integers(0, 420), st.booleans())
def test_garbage_never_raises(data: bytes, pos: int, check_crc: bool) -> None:
    check = check_record(data, pos, check_crc=check_crc)
    assert check.kind in ("record", "blank", "invalid")
    assert (check.reason is None) == (check.kind != "invalid")
    if check.kind == "record":
        assert decode_record(data, pos, decompress=False).store_size == check.size


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_record_never_raises(golden_record: bytes, data: st.DataObject) -> None:
    buf = bytearray(golden_record) + bytes(64)
    for _ in range(data.draw(st.integers(1, 6))):
        buf[data.draw(st.integers(0, len(buf) - 1))] = data.draw(st.integers(0, 255))
    check = check_record(buf, 0, check_crc=data.draw(st.booleans()))
    assert check.kind in ("record", "blank", "invalid")
    if check.kind == "invalid":
        assert check.reason
