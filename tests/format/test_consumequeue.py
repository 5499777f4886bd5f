"""ConsumeQueue units, fillers, ext addresses, schedule-topic tagsCode and file positions (§4.1-§4.4)."""

from __future__ import annotations

import numpy as np
import pytest

from rmqstore.format.consumequeue import (
    CQ_DTYPE,
    CQ_UNIT_SIZE,
    DEFAULT_DELAY_LEVEL_TABLE,
    FILLER_SIZE,
    delivery_time_tags_code,
    encode_unit,
    ext_address_offset,
    is_ext_address,
    is_filler,
    parse_delay_levels,
    parse_units,
    queue_offset_location,
    record_tags_code,
    valid_unit_count,
)
from rmqstore.format.javahash import tags_code
from rmqstore.format.record import decode_record


def test_unit_of_the_golden_record(golden_record: bytes) -> None:
    rec = decode_record(golden_record, 0)
    unit = encode_unit(rec.commit_log_offset, rec.store_size, tags_code(rec.tags))
    assert unit == bytes.fromhex("0000000000000000000000B2000000000027A807")
    parsed = parse_units(unit)
    assert parsed.dtype == CQ_DTYPE and CQ_DTYPE.itemsize == CQ_UNIT_SIZE
    assert (int(parsed["phy"][0]), int(parsed["size"][0]), int(parsed["tags_code"][0])) == (0, 178, 2598919)


def test_negative_tags_code_unit() -> None:
    unit = encode_unit(512, 178, tags_code("TagB||TagC"))
    assert unit[12:] == bytes.fromhex("FFFFFFFF9F8F7991")


def test_parse_units_rejects_partial_units() -> None:
    with pytest.raises(ValueError, match="not a whole number of 20-byte units"):
        parse_units(bytes(30))


def test_valid_units_stop_at_first_empty_unit_and_count_fillers() -> None:
    data = (
        encode_unit(0, FILLER_SIZE, 0) * 2
        + encode_unit(1000, 178, 5)
        + encode_unit(1178, 178, 6)
        + bytes(CQ_UNIT_SIZE * 3)
        + encode_unit(2000, 178, 7)
    )
    units = parse_units(data)
    assert valid_unit_count(units) == 4
    assert is_filler(units).tolist() == [True, True, False, False, False, False, False, False]
    assert valid_unit_count(parse_units(encode_unit(-1, 10, 0))) == 0
    assert valid_unit_count(parse_units(encode_unit(0, 10, 0) * 3)) == 3


@pytest.mark.parametrize("first_bad", [0, 1, 4095, 4096, 4097, 20_479, 20_480, 50_000, None])
def test_valid_unit_count_across_chunks(first_bad: int | None) -> None:
    """The count stops at the first bad unit wherever it is (the scan goes in growing chunks)."""
    good = encode_unit(100, 10, 0)
    count = 60_000
    units = [good] * count
    if first_bad is not None:
        units[first_bad] = encode_unit(100, 0, 0)
        units[first_bad + 1 :] = [good] * (count - first_bad - 1)  # valid units after it do not count
    assert valid_unit_count(parse_units(b"".join(units))) == (count if first_bad is None else first_bad)


def test_ext_address_boundary() -> None:
    assert not is_ext_address(-(2**31))
    assert is_ext_address(-(2**31) - 1)
    address = 12345 - 2**63  # ConsumeQueueExt.decorate(12345)
    assert is_ext_address(address)
    assert ext_address_offset(address) == 12345
    with pytest.raises(ValueError, match="not a ConsumeQueueExt address"):
        ext_address_offset(2598919)


def test_default_delay_levels() -> None:
    assert len(DEFAULT_DELAY_LEVEL_TABLE) == 18
    assert DEFAULT_DELAY_LEVEL_TABLE[1] == 1000
    assert DEFAULT_DELAY_LEVEL_TABLE[5] == 60_000
    assert DEFAULT_DELAY_LEVEL_TABLE[18] == 7_200_000
    assert parse_delay_levels("2d 500s") == {1: 172_800_000, 2: 500_000}
    with pytest.raises(ValueError, match="level 2"):
        parse_delay_levels("1s 5x")


@pytest.mark.parametrize(
    ("level", "delay_ms"),
    [(3, 10_000), (18, 7_200_000), (99, 7_200_000), (0, 1000), (-2, 1000)],
)
def test_delivery_time_tags_code(level: int, delay_ms: int) -> None:
    assert delivery_time_tags_code(1_700_000_000_123, level) == 1_700_000_000_123 + delay_ms


def test_record_tags_code() -> None:
    store_ts = 1_700_000_000_123
    assert record_tags_code("TopicTest", {"TAGS": "TagA", "DELAY": "3"}, store_ts) == 2598919
    assert (
        record_tags_code("SCHEDULE_TOPIC_XXXX", {"TAGS": "TagA", "DELAY": "3"}, store_ts) == store_ts + 10_000
    )
    assert record_tags_code("SCHEDULE_TOPIC_XXXX", {"TAGS": "TagA", "DELAY": "0"}, store_ts) == 2598919
    assert record_tags_code("SCHEDULE_TOPIC_XXXX", {}, store_ts) == 0
    with pytest.raises(ValueError, match="non-integer DELAY"):
        record_tags_code("SCHEDULE_TOPIC_XXXX", {"DELAY": "three"}, store_ts)


def test_queue_offset_to_file_example_of_spec_4_3() -> None:
    segment_start, position = queue_offset_location(123456789)
    assert f"{segment_start:020d}" == "00000000002466000000"
    assert position == 3_135_780
    assert queue_offset_location(5, segment_size=100) == (100, 0)
    with pytest.raises(ValueError, match="multiple of 20"):
        queue_offset_location(1, segment_size=4096)


def test_units_are_a_zero_copy_view() -> None:
    data = bytearray(encode_unit(1, 2, 3))
    units = parse_units(data)
    data[7] = 9
    assert int(units["phy"][0]) == 9
    assert isinstance(units, np.ndarray)
