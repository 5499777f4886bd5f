"""PROPERTIES parsing/encoding rules of spec §2.8, incl. the `__CRC32#` property."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rmqstore.format.properties import (
    encode_crc_property,
    encode_properties,
    parse_properties,
    split_crc_property,
)

NAMES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), max_size=8)
VALUES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x02"), max_size=8)


def test_duplicates_last_wins_and_malformed_segments_skipped() -> None:
    data = b"A\x011\x02\x01x\x02B\x01\x02C\x012\x01z\x02noseparator\x02\x02A\x013"
    assert parse_properties(data) == {"A": "3", "C": "2\x01z"}


def test_value_keeps_further_separators_and_unicode() -> None:
    assert parse_properties("ключ\x01a\x01b\x02".encode()) == {"ключ": "a\x01b"}


def test_malformed_utf8_becomes_replacement_char() -> None:
    assert parse_properties(b"K\x01\xff\x02") == {"K": "\ufffd"}


def test_encode_uses_mapping_order() -> None:
    assert encode_properties({"B": "2", "A": "1"}) == b"B\x012\x02A\x011\x02"


@given(st.lists(st.tuples(NAMES, VALUES), max_size=12), st.booleans())
def test_parse_matches_hashmap_model(pairs: list[tuple[str, str]], terminate_last: bool) -> None:
    text = "".join(f"{name}\x01{value}\x02" for name, value in pairs)
    if pairs and not terminate_last:
        text = text[:-1]
    expected: dict[str, str] = {}
    for name, value in pairs:
        if name and value:
            expected[name] = value
    assert parse_properties(text.encode("utf-8")) == expected


@given(
    st.dictionaries(
        NAMES.filter(bool),
        VALUES.filter(bool),
        max_size=10,
    )
)
def test_parse_inverts_encode_for_valid_maps(props: dict[str, str]) -> None:
    assert parse_properties(encode_properties(props)) == props


def test_crc_property_vector_of_spec_8_2() -> None:
    prop = encode_crc_property(1144057678)
    assert prop == bytes.fromhex("5F5F4352433332230138373637353034343131 02".replace(" ", ""))
    assert len(prop) == 20


@given(st.integers(0, 0x7FFFFFFF), st.binary(max_size=40).map(lambda b: b.replace(b"\x02", b"")))
def test_crc_property_splits_back(crc: int, head: bytes) -> None:
    props = (head + b"\x02" if head else b"") + encode_crc_property(crc)
    assert split_crc_property(props) == ((head + b"\x02") if head else b"", crc)


def test_crc_property_zero_padding_is_at_the_end() -> None:
    assert encode_crc_property(123)[9:19] == b"3210000000"


def test_split_ignores_lookalikes() -> None:
    not_own_property = b"MY" + encode_crc_property(5)
    assert split_crc_property(not_own_property) == (not_own_property, None)
    bad_digits = encode_crc_property(5).replace(b"5", b"x")
    assert split_crc_property(bad_digits) == (bad_digits, None)
    assert split_crc_property(b"A\x011\x02") == (b"A\x011\x02", None)
