"""PROPERTIES parsing/encoding rules of spec §2.8, incl. the `__CRC32#` property."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rmqstore.format.properties import (
    encode_crc_property,
    encode_properties,
    parse_properties,
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


def test_crc_property_zero_padding_is_at_the_end() -> None:
    assert encode_crc_property(123)[9:19] == b"3210000000"
