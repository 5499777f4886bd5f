"""Java String.hashCode, index key hash and tagsCode against spec §8.1 / §4.2 vectors."""

from __future__ import annotations

import pytest
from format_vectors import VECTORS

from rmqstore.format.indexfile import DEFAULT_HASH_SLOTS, INDEX_HEADER_SIZE
from rmqstore.format.javahash import index_key_hash, java_string_hashcode, tags_code


@pytest.mark.parametrize(
    ("key", "java_hash", "key_hash", "slot_default", "slot_pos", "slot_100"),
    [(v["key"], v["java_hash"], v["key_hash"], v["slot_default"], v["slot_pos"], v["slot_100"])
     for v in VECTORS["hashes"]],
)
def test_hash_table_of_spec_8_1(
    key: str, java_hash: int, key_hash: int, slot_default: int, slot_pos: int, slot_100: int
) -> None:
    assert java_string_hashcode(key) == java_hash
    assert index_key_hash(key) == key_hash
    assert key_hash % DEFAULT_HASH_SLOTS == slot_default
    assert INDEX_HEADER_SIZE + 4 * slot_default == slot_pos
    assert key_hash % 100 == slot_100


def test_non_bmp_char_counts_as_two_utf16_units() -> None:
    # U+1F600 = surrogates D83D DE00: hash("x" + emoji) == 31*(31*'x' + D83D) + DE00.
    expected = ((ord("x") * 31 + 0xD83D) * 31 + 0xDE00) & 0xFFFFFFFF
    assert java_string_hashcode("x\U0001f600") == expected


def test_empty_string_hash_is_zero() -> None:
    assert java_string_hashcode("") == 0


@pytest.mark.parametrize(
    ("tags", "code", "unit_bytes"),
    [(v["tags"], v["code"], v["unit_hex"]) for v in VECTORS["tags_codes"]],
)
def test_tags_code_is_sign_extended_java_hash(tags: str, code: int, unit_bytes: str) -> None:
    assert tags_code(tags) == code
    assert code.to_bytes(8, "big", signed=True) == bytes.fromhex(unit_bytes)


@pytest.mark.parametrize("tags", [None, ""])
def test_tags_code_of_missing_tags_is_zero(tags: str | None) -> None:
    assert tags_code(tags) == 0
