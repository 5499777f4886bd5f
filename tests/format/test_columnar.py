"""walk_records / decode_records against the scalar reference (`record.py`) and the spec vectors."""

from __future__ import annotations

import ipaddress
import sys
import zlib
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from format_vectors import RECORD
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqstore.format import columnar
from rmqstore.format.columnar import decode_records, walk_records
from rmqstore.format.compression import compress_body
from rmqstore.format.kernels import crc
from rmqstore.format.layout import (
    COMPRESSION_TYPE_SHIFT,
    MAGIC_V1,
    MAGIC_V2,
    SYSFLAG_COMPRESSED,
    body_length_offset,
    topic_length_width,
)
from rmqstore.format.properties import parse_properties
from rmqstore.format.record import check_record, decode_record, encode_blank, encode_record
from rmqstore.format.table import COLUMN_NAMES, arrow_schema

TIMESTAMP_COLUMNS = ("bornTimestamp", "storeTimestamp")
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
"""Fixtures used under @given are read-only (copied before use); monkeypatch is re-set per example."""

# ---------------------------------------------------------------------------------------------
# strategies

ipv4_hosts = st.builds(
    lambda addr, port: f"{ipaddress.IPv4Address(addr)}:{port}",
    st.integers(0, 2**32 - 1),
    st.integers(0, 65535),
)
ipv6_hosts = st.builds(
    lambda addr, port: f"[{ipaddress.IPv6Address(addr)}]:{port}",
    st.one_of(st.integers(0, 2**128 - 1), st.sampled_from([1, 0x20010DB8 << 96])),
    st.integers(0, 65535),
)
hosts = st.one_of(ipv4_hosts, ipv4_hosts, ipv6_hosts)
text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), max_size=12)
key_tokens = st.lists(st.sampled_from(["", "k1", "k2", "订单-1", "a b"]), max_size=4).map(" ".join)
property_maps = st.dictionaries(
    st.one_of(st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "WAIT", "CLUSTER", "ключ"]), text),
    st.one_of(text, key_tokens),
    max_size=6,
)
property_names = st.sampled_from([b"KEYS", b"TAGS", b"UNIQ_KEY", b"WAIT", b"", b"n\xff", "ключ".encode()])
property_values = st.sampled_from([b"", b"v", b"k1  k2 ", b" a", b"x\x01y", b"\xfe\xff", "订单".encode()])
property_segments = st.one_of(
    st.builds(lambda name, value: name + b"\x01" + value, property_names, property_values),
    st.binary(max_size=6),
)
raw_properties = st.builds(
    lambda segments, closed: b"\x02".join(segments) + (b"\x02" if closed and segments else b""),
    st.lists(property_segments, max_size=8),
    st.booleans(),
)
"""Raw PROPERTIES bytes: repeated names, empty names/values, 0x01 in values, bad UTF-8, open ends."""
topics = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=20).filter(
        lambda t: len(t.encode()) <= 127
    ),
    st.integers(128, 260).map(lambda n: "%RETRY%" + "g" * (n - 7)),
)


@st.composite
def message_specs(draw: Any) -> dict[str, Any]:
    """Keyword arguments of `encode_record` (without the offsets)."""
    body = draw(st.binary(max_size=300))
    sys_flag = draw(st.sampled_from([0, 0x2, 0x4, 0x8, 0xC]))
    compression = draw(st.sampled_from([None, None, 0, 1, 2, 3]))
    if compression is not None:
        body = compress_body(body, compression)
        sys_flag |= SYSFLAG_COMPRESSED | compression << COMPRESSION_TYPE_SHIFT
    topic = draw(topics)
    short_topic = len(topic) <= 127
    return {
        "topic": topic,
        "queue_id": draw(st.integers(-(2**31), 2**31 - 1)),
        "body": body,
        "properties": draw(st.one_of(property_maps, raw_properties)),
        "queue_offset": draw(st.integers(0, 2**63 - 1)),
        "born_timestamp": draw(st.integers(0, 2**42)),
        "store_timestamp": draw(st.integers(0, 2**42)),
        "born_host": draw(hosts),
        "store_host": draw(hosts),
        "flag": draw(st.integers(-(2**31), 2**31 - 1)),
        "sys_flag": sys_flag,
        "reconsume_times": draw(st.integers(0, 16)),
        "prepared_transaction_offset": draw(st.integers(0, 2**40)),
        "magic": draw(st.sampled_from([None, MAGIC_V2])) if short_topic else None,
        "append_crc_property": draw(st.booleans()),
    }


def build_segment(specs: list[dict[str, Any]], base: int, blank: int = 0) -> tuple[np.ndarray, list[int]]:
    """Records back to back from position 0 of a segment at `base`, then a BLANK of `blank` bytes."""
    out = bytearray()
    starts = []
    for spec in specs:
        starts.append(len(out))
        out += encode_record(physical_offset=base + len(out), **spec)
    if blank:
        out += encode_blank(blank) + bytes(blank - 8)
    return np.frombuffer(bytes(out), dtype=np.uint8), starts


# ---------------------------------------------------------------------------------------------
# helpers


def raw_properties_of(buf: np.ndarray, pos: int) -> bytes:
    """PROPERTIES bytes of the record at pos, located with the reference decoder's lengths and the
    stored TOPICLENGTH (a topic with invalid UTF-8 re-encodes to another length)."""
    raw = decode_record(buf, pos, decompress=False)
    topic_len_at = pos + body_length_offset(raw.sys_flag) + 4 + len(raw.body)
    width = topic_length_width(raw.magic)
    topic_len = int.from_bytes(bytes(buf[topic_len_at : topic_len_at + width]), "big", signed=True)
    return bytes(buf[topic_len_at + width + topic_len + 2 : pos + raw.store_size])


def expected_row(buf: np.ndarray, pos: int, decompress: bool = True) -> dict[str, Any]:
    """The reference row; `properties` keeps a trailing `__CRC32#`, as RocketMQ's decoder does."""
    row = decode_record(buf, pos, decompress=decompress).to_row()
    row["properties"] = parse_properties(raw_properties_of(buf, pos))
    return row


def batch_rows(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    """Rows of a batch with timestamps as epoch ms and maps as dicts (duplicate keys fail)."""
    columns = {}
    for name in batch.schema.names:
        column = batch.column(name)
        if name in TIMESTAMP_COLUMNS:
            columns[name] = [None if v is None else v // 1000 for v in column.cast(pa.int64()).to_pylist()]
        elif name == "properties":
            values = column.to_pylist()
            assert all(len(dict(v)) == len(v) for v in values), "a map repeats a key"
            columns[name] = [dict(v) for v in values]
        else:
            columns[name] = column.to_pylist()
    return [{name: columns[name][i] for name in batch.schema.names} for i in range(batch.num_rows)]


def reference_walk(
    buf: np.ndarray, base: int, start: int, end: int, check_crc: bool
) -> tuple[list[int], int, str]:
    """The recovery loop of §2.12 with the scalar checker."""
    pos, starts = start, []
    end = min(end, len(buf))
    while pos < end:
        verdict = check_record(buf, pos, check_crc=check_crc, expected_physical_offset=base + pos)
        if verdict.kind != "record":
            return starts, pos, verdict.kind
        starts.append(pos)
        pos += verdict.size
    return starts, pos, "end"


# ---------------------------------------------------------------------------------------------
# spec vectors


def test_golden_record_every_column(golden_record: bytes) -> None:
    buf = np.frombuffer(golden_record + encode_blank(8), dtype=np.uint8)
    walk = walk_records(buf, 0, 0, len(buf))
    assert walk.starts.tolist() == [0]
    assert (walk.stop_pos, walk.stop_kind) == (178, "blank")
    batch = decode_records(buf, walk.starts, 0, None)
    assert batch.schema == arrow_schema()
    row = batch_rows(batch)[0]
    assert row == {
        "topic": "TopicTest",
        "queueId": 0,
        "queueOffset": 0,
        "commitLogOffset": 0,
        "storeSize": 178,
        "msgId": "7F00000100002A9F0000000000000000",
        "uniqKey": "7F00000104D21B6D358605265C000000",
        "key": "k1 k2",
        "keys": ["k1", "k2"],
        "tags": "TagA",
        "body": b"hello",
        "bodyCrc": 907060870,
        "flag": 0,
        "sysFlag": 0,
        "bornTimestamp": 1_700_000_000_000,
        "storeTimestamp": 1_700_000_000_123,
        "bornHost": "127.0.0.1:53010",
        "storeHost": "127.0.0.1:10911",
        "reconsumeTimes": 0,
        "preparedTransactionOffset": 0,
        "properties": {
            "KEYS": "k1 k2",
            "UNIQ_KEY": "7F00000104D21B6D358605265C000000",
            "WAIT": "true",
            "TAGS": "TagA",
        },
    }


def test_blank_example_of_spec_2_6(golden_fields: dict[str, Any]) -> None:
    """512-byte segments, 178-byte records at 0 and 178, BLANK of 156 bytes at 356 (§2.6)."""
    first = encode_record(**golden_fields)
    second = encode_record(**{**golden_fields, "physical_offset": 178, "queue_offset": 1})
    segment = first + second + encode_blank(156) + bytes(148)
    assert len(segment) == 512
    walk = walk_records(np.frombuffer(segment, dtype=np.uint8), 0, 0, 512)
    assert walk.starts.tolist() == [0, 178]
    assert (walk.stop_pos, walk.stop_kind) == (356, "blank")
    ids = decode_records(np.frombuffer(segment, dtype=np.uint8), walk.starts, 0, ["msgId", "queueOffset"])
    assert ids.column("msgId").to_pylist() == [RECORD["decoded"]["msgId"], RECORD["msg_id_at_b2"]]
    assert ids.column("queueOffset").to_pylist() == [0, 1]


def test_golden_crc_property_stays_in_the_map(golden_fields: dict[str, Any]) -> None:
    """§8.2 with `enabledAppendPropCRC`: the 20-byte `__CRC32#` property is a normal map entry."""
    record = encode_record(**golden_fields, append_crc_property=True)
    assert len(record) == 198
    batch = decode_records(np.frombuffer(record, dtype=np.uint8), np.array([0]), 0, ["properties", "uniqKey"])
    props = dict(batch.column("properties").to_pylist()[0])
    assert props["__CRC32#"] == "8767504411"
    assert batch.column("uniqKey").to_pylist() == ["7F00000104D21B6D358605265C000000"]


# ---------------------------------------------------------------------------------------------
# differential: decode_records vs decode_record


@SETTINGS
@given(
    specs=st.lists(message_specs(), min_size=1, max_size=8),
    base=st.sampled_from([0, 1 << 30, 20_000_000_000]),
    decompress=st.booleans(),
)
def test_decode_matches_scalar_reference(specs: list[dict[str, Any]], base: int, decompress: bool) -> None:
    buf, starts = build_segment(specs, base, blank=64)
    walk = walk_records(buf, base, 0, len(buf))
    assert walk.starts.tolist() == starts
    assert (walk.stop_pos, walk.stop_kind) == (len(buf) - 64, "blank")
    batch = decode_records(buf, walk.starts, base, None, decompress=decompress)
    assert batch.schema == arrow_schema()
    assert batch_rows(batch) == [expected_row(buf, p, decompress) for p in starts]


@SETTINGS
@given(
    specs=st.lists(message_specs(), min_size=1, max_size=5),
    columns=st.permutations(COLUMN_NAMES).flatmap(
        lambda names: st.integers(1, len(names)).map(lambda k: names[:k])
    ),
    order=st.randoms(use_true_random=False),
)
def test_column_subsets_in_any_order_and_any_row_order(
    specs: list[dict[str, Any]], columns: list[str], order: Any
) -> None:
    buf, starts = build_segment(specs, 4096)
    rows = [*starts, *order.sample(starts, k=min(2, len(starts)))]
    order.shuffle(rows)
    batch = decode_records(buf, np.array(rows), 4096, columns)
    assert batch.schema == arrow_schema(columns)
    expected = [{name: expected_row(buf, p)[name] for name in columns} for p in rows]
    assert batch_rows(batch) == expected


@SETTINGS
@given(raw=st.lists(raw_properties, min_size=1, max_size=12))
def test_properties_parsing_matches_reference(raw: list[bytes], golden_fields: dict[str, Any]) -> None:
    """Separators anywhere, empty names/values, duplicates, invalid UTF-8, missing trailing 0x02."""
    specs = [{**golden_fields, "properties": props} for props in raw]
    for spec in specs:
        spec.pop("physical_offset")
    buf, starts = build_segment(specs, 0)
    columns = ["properties", "key", "keys", "tags", "uniqKey"]
    batch = decode_records(buf, np.array(starts), 0, columns)
    assert batch_rows(batch) == [{c: expected_row(buf, p)[c] for c in columns} for p in starts]


def test_mixed_host_layouts_and_magics_in_one_batch(golden_fields: dict[str, Any]) -> None:
    variants = [
        {"born_host": "[::1]:1", "store_host": "10.0.0.1:10911"},
        {"born_host": "10.0.0.2:2", "store_host": "[2001:db8::7]:10911"},
        {"born_host": "[fe80::1]:3", "store_host": "[::ffff:1.2.3.4]:10911", "magic": MAGIC_V2},
        {"born_host": "127.0.0.1:4", "store_host": "127.0.0.1:10911", "magic": MAGIC_V1},
    ]
    specs = [{**golden_fields, **v} for v in variants]
    for spec in specs:
        spec.pop("physical_offset")
    buf, starts = build_segment(specs, 1 << 30)
    batch = decode_records(buf, np.array(starts), 1 << 30, ["storeHost", "msgId", "bornHost", "topic"])
    rows = batch_rows(batch)
    store_hosts = ["10.0.0.1:10911", "[2001:db8::7]:10911", "[::ffff:102:304]:10911", "127.0.0.1:10911"]
    assert [r["storeHost"] for r in rows] == store_hosts
    assert [len(r["msgId"]) for r in rows] == [32, 56, 56, 32]
    assert rows == [{c: expected_row(buf, p)[c] for c in batch.schema.names} for p in starts]


def test_corrupt_compressed_body_names_the_offset(golden_fields: dict[str, Any]) -> None:
    record = encode_record(**{**golden_fields, "physical_offset": 512, "sys_flag": SYSFLAG_COMPRESSED})
    buf = np.frombuffer(bytes(512) + record, dtype=np.uint8)
    with pytest.raises(ValueError, match="physical offset 1024"):
        decode_records(buf, np.array([512]), 512, ["body"])
    raw = decode_records(buf, np.array([512]), 512, ["body"], decompress=False)
    assert raw.column("body").to_pylist() == [b"hello"]


def test_unknown_column_is_named() -> None:
    with pytest.raises(ValueError, match="nope"):
        decode_records(np.zeros(8, np.uint8), np.array([0]), 0, ["topic", "nope"])


# ---------------------------------------------------------------------------------------------
# walk


@SETTINGS
@given(
    specs=st.lists(message_specs(), min_size=1, max_size=6),
    damage=st.sampled_from(["torn", "zeroed", "garbage", "flip", "blank", "none"]),
    where=st.floats(0, 1),
    check_crc=st.booleans(),
    window=st.sampled_from([64, 1000, columnar.WALK_WINDOW]),
    data=st.data(),
)
def test_walk_matches_recovery_loop(
    specs: list[dict[str, Any]],
    damage: str,
    where: float,
    check_crc: bool,
    window: int,
    data: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(columnar, "WALK_WINDOW", window)
    base = 1 << 30
    clean, _ = build_segment(specs, base)
    buf = bytearray(clean.tobytes())
    cut = int(where * len(buf))
    if damage == "torn":
        del buf[cut:]
    elif damage == "zeroed":
        buf[cut : cut + 200] = bytes(len(buf[cut : cut + 200]))
    elif damage == "garbage":
        buf += data.draw(st.binary(min_size=1, max_size=200))
    elif damage == "flip" and buf:
        buf[min(cut, len(buf) - 1)] ^= data.draw(st.integers(1, 255))
    elif damage == "blank":
        buf += encode_blank(100) + bytes(92)
    arr = np.frombuffer(bytes(buf), dtype=np.uint8)
    start = data.draw(st.sampled_from([0, *_starts_of(clean)]))
    end = data.draw(st.integers(0, len(arr) + 10))
    walk = walk_records(arr, base, start, end, check_crc=check_crc)
    assert (walk.starts.tolist(), walk.stop_pos, walk.stop_kind) == reference_walk(
        arr, base, start, end, check_crc
    )
    if walk.stop_kind == "invalid":
        assert walk.reason


def _starts_of(buf: np.ndarray) -> list[int]:
    return walk_records(buf, 1 << 30, 0, len(buf)).starts.tolist()


@SETTINGS
@given(
    specs=st.lists(message_specs(), min_size=1, max_size=8),
    damage=st.sampled_from(["flip", "zeroed", "none"]),
    where=st.floats(0, 1),
    check_crc=st.booleans(),
    data=st.data(),
)
def test_walk_ranges_matches_walking_each_range(
    specs: list[dict[str, Any]], damage: str, where: float, check_crc: bool, data: Any
) -> None:
    """Ranges gathered into one buffer walk like each range on its own; a range is clean exactly when
    its own walk reaches its end (so cuts inside a record, damage and CRC errors make it unclean)."""
    base = 1 << 30
    clean, starts = build_segment(specs, base, blank=120)
    buf = bytearray(clean.tobytes())
    cut = int(where * (len(buf) - 1))
    if damage == "flip":
        buf[cut] ^= data.draw(st.integers(1, 255))
    elif damage == "zeroed":
        buf[cut : cut + 50] = bytes(len(buf[cut : cut + 50]))
    segment = np.frombuffer(bytes(buf), dtype=np.uint8)
    bounds = sorted(set(data.draw(st.lists(st.sampled_from([*starts, len(segment)]), min_size=2))))
    cuts = data.draw(st.lists(st.integers(0, len(segment)), max_size=2))  # ends inside records
    ranges = [(a, b) for a, b in zip(bounds, bounds[1:] + cuts, strict=False) if a < b]

    walked = _walk_gathered(segment, base, ranges, check_crc=check_crc)

    expected_clean, expected_starts = [], []
    gathered_at = 0
    for a, b in ranges:
        alone = walk_records(segment[:b], base, a, b, check_crc=check_crc)
        ok = (alone.stop_kind, alone.stop_pos) == ("end", b)
        expected_clean.append(ok)
        if ok:
            expected_starts += [gathered_at + p - a for p in alone.starts.tolist()]
        gathered_at += b - a
    assert walked.clean.tolist() == expected_clean
    assert walked.starts.tolist() == expected_starts


def test_walk_ranges_crc_mismatch_makes_only_its_range_unclean(golden_fields: dict[str, Any]) -> None:
    base = 1 << 20
    buf, starts = _segment_of(golden_fields, [{"body": b"hello"}] * 4, base=base)
    data = bytearray(buf.tobytes())
    data[starts[1] + 88] ^= 0x20  # one body byte of the second record
    segment = np.frombuffer(bytes(data), dtype=np.uint8)
    ranges = [(starts[0], starts[2]), (starts[2], len(segment))]
    unchecked = _walk_gathered(segment, base, ranges, check_crc=False)
    assert (unchecked.clean.tolist(), unchecked.starts.tolist()) == ([True, True], starts)
    checked = _walk_gathered(segment, base, ranges, check_crc=True)
    assert (checked.clean.tolist(), checked.starts.tolist()) == ([False, True], starts[2:])


def _walk_gathered(segment: np.ndarray, base: int, ranges: list[tuple[int, int]], *,
                   check_crc: bool) -> columnar.RangesWalk:
    """`walk_ranges` over `ranges` of a segment at `base`, gathered back to back like `read_ranges`."""
    gathered = np.concatenate([segment[a:b] for a, b in ranges]) if ranges else segment[:0]
    physical = np.asarray([base + a for a, _ in ranges], dtype=np.int64)
    length = np.asarray([b - a for a, b in ranges], dtype=np.int64)
    return columnar.walk_ranges(gathered, physical, length, check_crc=check_crc)


def test_walk_skips_a_record_hidden_inside_a_body(golden_fields: dict[str, Any]) -> None:
    """A body holding a complete record whose PHYSICALOFFSET matches its own position is no record."""
    base = 1 << 20
    inner_at = 88  # the body of a first record with IPv4 hosts starts here
    inner = encode_record(**{**golden_fields, "physical_offset": base + inner_at})
    outer = encode_record(**{**golden_fields, "physical_offset": base, "body": inner})
    second = encode_record(**{**golden_fields, "physical_offset": base + len(outer)})
    buf = np.frombuffer(outer + second + encode_blank(8), dtype=np.uint8)
    assert (
        check_record(buf, inner_at, check_crc=True, expected_physical_offset=base + inner_at).kind == "record"
    )
    walk = walk_records(buf, base, 0, len(buf))
    assert walk.starts.tolist() == [0, len(outer)]
    assert walk.stop_kind == "blank"
    assert decode_records(buf, walk.starts, base, ["body"]).column("body").to_pylist()[0] == inner


def test_walk_stops_at_a_wrong_physical_offset(golden_fields: dict[str, Any]) -> None:
    first = encode_record(**golden_fields)
    moved = encode_record(**{**golden_fields, "physical_offset": 999})
    buf = np.frombuffer(first + moved, dtype=np.uint8)
    walk = walk_records(buf, 0, 0, len(buf))
    assert walk.starts.tolist() == [0]
    assert (walk.stop_pos, walk.stop_kind) == (178, "invalid")
    assert "PHYSICALOFFSET" in walk.reason


def test_walk_crc_check(golden_fields: dict[str, Any]) -> None:
    record = bytearray(encode_record(**golden_fields))
    record[88] ^= 0x20  # one body byte: "hello" -> "Hello"
    buf = np.frombuffer(bytes(record), dtype=np.uint8)
    assert walk_records(buf, 0, 0, len(buf)).starts.tolist() == [0]
    checked = walk_records(buf, 0, 0, len(buf), check_crc=True)
    assert (checked.starts.tolist(), checked.stop_kind) == ([], "invalid")
    assert "CRC" in checked.reason


@SETTINGS
@given(data=st.binary(max_size=3000), cut=st.tuples(st.integers(0, 3000), st.integers(0, 3000)))
def test_crc32_kernels_equal_zlib(data: bytes, cut: tuple[int, int]) -> None:
    """The table kernel and ISA-L's (python-isal is a dependency, so the walk uses it) give zlib's
    CRC-32 of any slice, at any alignment."""
    if sys.platform == "linux":  # python-isal exports its C symbols there
        assert crc.NATIVE_CRC32 != 0
    at, length = min(cut[0], len(data)), cut[1]
    length = min(length, len(data) - at)
    buf = columnar.as_byte_array(data)
    expected = zlib.crc32(data[at : at + length])
    assert crc.crc32(buf, at, length) == crc.crc32(buf, at, length, crc.NATIVE_CRC32) == expected


def test_invalid_utf8_topic_is_replaced_like_the_reference(golden_record: bytes) -> None:
    record = bytearray(golden_record)
    record[94] = 0xFF  # first topic byte
    buf = np.frombuffer(bytes(record), dtype=np.uint8)
    topic = decode_records(buf, np.array([0]), 0, ["topic"]).column("topic").to_pylist()
    assert topic == [decode_record(buf, 0).topic] == ["\ufffdopicTest"]


@pytest.mark.parametrize(("delay", "valid"), [("3", True), ("x3", False)])
def test_walk_checks_delay_of_schedule_topic_records(
    delay: str, valid: bool, golden_fields: dict[str, Any]
) -> None:
    """§2.12 step 6: a SCHEDULE_TOPIC_XXXX record whose DELAY is not an int ends the log."""
    scheduled = {**golden_fields, "topic": "SCHEDULE_TOPIC_XXXX", "properties": {"DELAY": delay}}
    first = encode_record(**scheduled)
    second = encode_record(**{**golden_fields, "physical_offset": len(first)})
    buf = np.frombuffer(first + second, dtype=np.uint8)
    walk = walk_records(buf, 0, 0, len(buf))
    expected = ([0, len(first)], "end") if valid else ([], "invalid")
    assert (walk.starts.tolist(), walk.stop_kind) == expected


def test_negative_start_is_rejected() -> None:
    with pytest.raises(ValueError, match="start"):
        walk_records(np.zeros(200, np.uint8), 0, -1, 200)


# ---------------------------------------------------------------------------------------------
# kernel edge cases


def _segment_of(
    golden_fields: dict[str, Any], variants: list[dict[str, Any]], base: int = 0
) -> tuple[np.ndarray, list[int]]:
    specs = [{**golden_fields, **variant} for variant in variants]
    for spec in specs:
        spec.pop("physical_offset")
    return build_segment(specs, base)


@pytest.mark.parametrize("window", [91, 100, 177, 178, 179, 400])
def test_walk_windows_split_records(
    window: int, golden_fields: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records longer than a walk window, and windows ending inside or right at a record."""
    monkeypatch.setattr(columnar, "WALK_WINDOW", window)
    bodies = [b"x" * n for n in (0, 5, 300, 1, 1000, 17)]
    buf, starts = _segment_of(golden_fields, [{"body": body} for body in bodies], base=1 << 20)
    for start in (0, starts[2]):
        walk = walk_records(buf, 1 << 20, start, len(buf))
        assert walk.starts.tolist() == [p for p in starts if p >= start]
        assert (walk.stop_pos, walk.stop_kind) == (len(buf), "end")
    for end in (starts[3], starts[3] + 1):
        assert walk_records(buf, 1 << 20, 0, end).starts.tolist() == [p for p in starts if p < end]


def test_v2_magic_ipv6_and_long_topics_every_column(golden_fields: dict[str, Any]) -> None:
    variants = [
        {"topic": "%RETRY%" + "g" * 200, "born_host": "[::1]:7"},
        {"magic": MAGIC_V2, "store_host": "[2001:db8::1]:10911"},
        {"topic": "T" * 127, "born_host": "[::ffff:10.0.0.1]:1", "store_host": "[::]:0"},
        {},
        {"magic": MAGIC_V2, "topic": ""},
    ]
    buf, starts = _segment_of(golden_fields, variants, base=20_000_000_000)
    assert [int(buf[p + 7]) for p in starts] == [0xAB, 0xAB, 0xA7, 0xA7, 0xAB]
    walk = walk_records(buf, 20_000_000_000, 0, len(buf))
    assert walk.starts.tolist() == starts
    batch = decode_records(buf, walk.starts, 20_000_000_000, None)
    assert batch_rows(batch) == [expected_row(buf, p) for p in starts]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"A\x011\x02B\x012\x02A\x013\x02", [("A", "3"), ("B", "2")]),
        (b"KEYS\x01a\x02TAGS\x01t\x02KEYS\x01b  c \x02", [("KEYS", "b  c "), ("TAGS", "t")]),
        (b"TAGS\x01no-terminator", [("TAGS", "no-terminator")]),
        (b"", []),
        (b"\x02\x02\x01\x02=\x01\x02\x01v\x02n\x01\x01\x01", [("n", "\x01\x01")]),
        (b"\x00KEYS\x01k\x00\x02", [("\x00KEYS", "k\x00")]),
        (b"n\xff\x011\x02n\xfe\x012\x02KEYS\x01\xe4\xb8 a", [("n\ufffd", "2"), ("KEYS", "\ufffd a")]),
    ],
)
def test_property_edge_cases(
    raw: bytes, expected: list[tuple[str, str]], golden_fields: dict[str, Any]
) -> None:
    """Duplicates (last value, first place), no final 0x02, empty field, stray separators, NUL bytes,
    invalid UTF-8 (names equal only after U+FFFD replacement merge, as in the reference)."""
    buf, starts = _segment_of(golden_fields, [{}, {"properties": raw}, {}])
    columns = ["properties", "key", "keys", "tags", "uniqKey", "topic"]
    batch = decode_records(buf, np.array(starts), 0, columns)
    assert batch.column("properties").to_pylist()[1] == expected
    assert batch_rows(batch) == [{c: expected_row(buf, p)[c] for c in columns} for p in starts]


def test_invalid_utf8_rows_keep_their_place(golden_fields: dict[str, Any]) -> None:
    """Rows decoded by the Python fallback go back to their own row; valid rows stay untouched."""
    variants = [
        {"topic": "ok-0"},
        {"properties": b"TAGS\x01bad\xc3\x02KEYS\x01k1 k2\x02"},
        {"topic": "ok-2", "properties": {"TAGS": "fine"}},
        {"properties": b"\xed\xa0\x80\x01v\x02UNIQ_KEY\x01u\xf4\x90\x80\x80\x02"},
        {"topic": "ok-4", "properties": {"KEYS": "订单-1 用户"}},
    ]
    buf, starts = _segment_of(golden_fields, variants)
    record = bytearray(buf.tobytes())
    record[starts[2] + 88 + 5 + 1] = 0xC0  # first topic byte of row 2: "ok-2" -> "\ufffdk-2"
    buf = np.frombuffer(bytes(record), dtype=np.uint8)
    rows = [*starts, starts[1], starts[0]]
    batch = decode_records(buf, np.array(rows), 0, None)
    assert batch_rows(batch) == [expected_row(buf, p) for p in rows]
    assert batch.column("topic").to_pylist()[2] == "\ufffdk-2"
    assert batch.column("tags").to_pylist()[:3] == ["TagA", "bad\ufffd", "fine"]


def test_record_at_the_very_end_of_the_buffer(golden_fields: dict[str, Any]) -> None:
    """No byte after the last record: word-at-a-time reads must stay inside the buffer."""
    for props in (b"", b"A\x01b", b"KEYS\x01k", b"LONGER_NAME_X\x01value\x02"):
        buf, starts = _segment_of(golden_fields, [{"properties": props, "body": b""}])
        batch = decode_records(buf, np.array(starts), 0, None)
        assert batch_rows(batch) == [expected_row(buf, starts[0])]


def test_many_distinct_hosts(golden_fields: dict[str, Any]) -> None:
    """Host interning with many distinct IPv4 and IPv6 hosts, repeats and back-to-back equal hosts."""
    hosts = [f"10.{i % 7}.{i % 13}.{i % 3}:{i % 5}" for i in range(150)]
    hosts += [f"[2001:db8::{i % 11:x}]:{i % 4}" for i in range(150)]
    hosts += ["[::]:0", "0.0.0.0:0", "[::]:0", "0.0.0.0:0", "0.0.0.0:0"]
    variants = [{"born_host": h, "store_host": hosts[-1 - i], "body": b""} for i, h in enumerate(hosts)]
    buf, starts = _segment_of(golden_fields, variants)
    columns = ["bornHost", "storeHost", "msgId"]
    batch = decode_records(buf, np.array(starts), 0, columns)
    assert batch_rows(batch) == [{c: expected_row(buf, p)[c] for c in columns} for p in starts]


@pytest.mark.parametrize(
    "delay", ["3", "+3", "-2147483648", "2147483647", "2147483648", "-2147483649", "0003", "-", "", "3 ", "٣"]
)
def test_walk_delay_values_like_integer_parse_int(delay: str, golden_fields: dict[str, Any]) -> None:
    scheduled = {**golden_fields, "topic": "SCHEDULE_TOPIC_XXXX", "properties": {"WAIT": "x", "DELAY": delay}}
    buf = np.frombuffer(encode_record(**scheduled) + encode_blank(8), dtype=np.uint8)
    walk = walk_records(buf, 0, 0, len(buf))
    reference = check_record(buf, 0, check_crc=False, expected_physical_offset=0)
    assert walk.stop_kind == ("blank" if reference.kind == "record" else "invalid")


def test_decode_rejects_a_position_without_a_record(golden_record: bytes) -> None:
    buf = np.frombuffer(golden_record * 2, dtype=np.uint8)
    with pytest.raises(ValueError, match="physical offset 4096"):
        decode_records(buf, np.array([0, 1]), 4095, ["topic"])
    with pytest.raises(ValueError, match="physical offset 400"):
        decode_records(buf, np.array([300]), 100, ["queueId"])
