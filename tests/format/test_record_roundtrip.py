"""encode_record -> decode_record round trips (Hypothesis) over the whole field space (§2.2-§2.9)."""

from __future__ import annotations

import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqstore.format.compression import compress_body
from rmqstore.format.layout import (
    COMPRESSION_TYPE_SHIFT,
    MAGIC_V1,
    MAGIC_V2,
    SYSFLAG_BORNHOST_V6,
    SYSFLAG_COMPRESSED,
    SYSFLAG_COMPRESSION_TYPE_MASK,
    SYSFLAG_STOREHOST_V6,
    body_length_offset,
    store_timestamp_offset,
)
from rmqstore.format.record import check_record, decode_record, encode_record

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
CHARS = st.characters(blacklist_categories=("Cs",))
PROP_NAMES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), max_size=6)
PROP_VALUES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x02"), max_size=6)


def java_length(s: str) -> int:
    return len(s.encode("utf-16-le")) // 2


@st.composite
def hosts(draw: st.DrawFn) -> str:
    ip = draw(st.ip_addresses())
    port = draw(st.integers(0, 65535))
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"


@st.composite
def topics(draw: st.DrawFn) -> str:
    topic = draw(
        st.one_of(st.text(CHARS, max_size=40), st.text(st.sampled_from("%RETRY_ab9-"), max_size=200))
    )
    if java_length(topic) <= 127 and len(topic.encode()) > 127:
        topic = topic[:30]
    return topic


@st.composite
def raw_properties(draw: st.DrawFn) -> tuple[bytes, dict[str, str]]:
    """Properties text with duplicates, empty names/values and an optional missing terminator."""
    pairs = draw(
        st.lists(st.tuples(st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "A"]) | PROP_NAMES, PROP_VALUES))
    )
    text = "".join(f"{name}\x01{value}\x02" for name, value in pairs)
    if text and draw(st.booleans()):
        text = text[:-1]
    expected: dict[str, str] = {}
    for name, value in pairs:
        if name and value:
            expected[name] = value
    return text.encode(), expected


@settings(max_examples=150, deadline=None)
@given(
    topic=topics(),
    body=st.binary(max_size=300),
    props=raw_properties(),
    born_host=hosts(),
    store_host=hosts(),
    queue_id=INT32,
    flag=INT32,
    sys_flag=INT32,
    reconsume_times=INT32,
    queue_offset=INT64,
    physical_offset=INT64,
    born_timestamp=INT64,
    store_timestamp=INT64,
    prepared=INT64,
    compression=st.sampled_from([None, 0, 1, 2, 3]),
    force_v2=st.booleans(),
    append_crc=st.booleans(),
)
def test_round_trip(
    topic: str,
    body: bytes,
    props: tuple[bytes, dict[str, str]],
    born_host: str,
    store_host: str,
    queue_id: int,
    flag: int,
    sys_flag: int,
    reconsume_times: int,
    queue_offset: int,
    physical_offset: int,
    born_timestamp: int,
    store_timestamp: int,
    prepared: int,
    compression: int | None,
    force_v2: bool,
    append_crc: bool,
) -> None:
    raw_props, expected_props = props
    sys_flag &= ~(SYSFLAG_COMPRESSED | SYSFLAG_COMPRESSION_TYPE_MASK)
    stored_body = body
    if compression is not None:
        sys_flag |= SYSFLAG_COMPRESSED | (compression << COMPRESSION_TYPE_SHIFT)
        stored_body = compress_body(body, compression)
    data = encode_record(
        topic=topic,
        queue_id=queue_id,
        body=stored_body,
        properties=raw_props,
        queue_offset=queue_offset,
        physical_offset=physical_offset,
        born_timestamp=born_timestamp,
        store_timestamp=store_timestamp,
        born_host=born_host,
        store_host=store_host,
        flag=flag,
        sys_flag=sys_flag,
        reconsume_times=reconsume_times,
        prepared_transaction_offset=prepared,
        magic=MAGIC_V2 if force_v2 else None,
        append_crc_property=append_crc,
    )
    check = check_record(data, 0, check_crc=True, verify_prop_crc=append_crc)
    assert (check.kind, check.size) == ("record", len(data)), check.reason
    rec = decode_record(data, 0)
    assert rec.magic == (MAGIC_V2 if force_v2 or java_length(topic) > 127 else MAGIC_V1)
    assert rec.topic == topic
    assert rec.body == body
    assert decode_record(data, 0, decompress=False).body == stored_body
    crc_property = {"__CRC32#": str(check_crc_value(data)).zfill(10)[::-1]} if append_crc else {}
    assert rec.properties == {**expected_props, **crc_property}
    assert rec.key == expected_props.get("KEYS")
    assert rec.tags == expected_props.get("TAGS")
    assert rec.uniq_key == expected_props.get("UNIQ_KEY")
    assert (rec.born_host, rec.store_host) == (born_host, store_host)
    v6_bits = (SYSFLAG_BORNHOST_V6 if born_host.startswith("[") else 0) | (
        SYSFLAG_STOREHOST_V6 if store_host.startswith("[") else 0
    )
    assert rec.sys_flag == (sys_flag & ~(SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6)) | v6_bits
    assert (rec.queue_id, rec.flag, rec.reconsume_times) == (queue_id, flag, reconsume_times)
    assert (rec.queue_offset, rec.commit_log_offset) == (queue_offset, physical_offset)
    assert (rec.born_timestamp, rec.store_timestamp) == (born_timestamp, store_timestamp)
    assert rec.prepared_transaction_offset == prepared
    assert (
        int.from_bytes(data[store_timestamp_offset(rec.sys_flag) :][:8], "big", signed=True)
        == store_timestamp
    )
    assert int.from_bytes(data[body_length_offset(rec.sys_flag) :][:4], "big") == len(stored_body)


def test_keys_split_on_single_spaces(golden_fields: dict[str, Any]) -> None:
    data = encode_record(**{**golden_fields, "properties": {"KEYS": " a  b a "}})
    rec = decode_record(data, 0)
    assert (rec.key, rec.keys) == (" a  b a ", ["a", "b", "a"])


def test_long_topic_switches_to_v2(golden_fields: dict[str, Any]) -> None:
    topic = "%RETRY%" + "g" * 121
    data = encode_record(**{**golden_fields, "topic": topic})
    assert int.from_bytes(data[4:8], "big") == MAGIC_V2
    assert decode_record(data, 0).topic == topic


def test_v1_topic_too_long_in_utf8_is_rejected(golden_fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="topic is 200 UTF-8 bytes"):
        encode_record(**{**golden_fields, "topic": "é" * 100})


def test_oversized_properties_are_rejected(golden_fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="PROPERTIES would be"):
        encode_record(**{**golden_fields, "properties": {"A": "x" * 40000}})


def check_crc_value(data: bytes) -> int:
    """The record CRC a 5.2+ broker writes: masked CRC-32 of everything before the 20-byte property."""
    return zlib.crc32(data[:-20]) & 0x7FFFFFFF


def test_crc_property_in_input_is_replaced(golden_fields: dict[str, Any]) -> None:
    props = {**golden_fields["properties"], "__CRC32#": "0000000000"}
    data = encode_record(**{**golden_fields, "properties": props}, append_crc_property=True)
    assert len(data) == 198
    assert check_record(data, 0, check_crc=True, verify_prop_crc=True).kind == "record"
