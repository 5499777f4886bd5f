"""Java String.hashCode, index key hash and tagsCode against spec §8.1 / §4.2 vectors."""

from __future__ import annotations

import pytest

from rmqstore.format.indexfile import DEFAULT_HASH_SLOTS, INDEX_HEADER_SIZE
from rmqstore.format.javahash import index_key_hash, java_string_hashcode, tags_code


@pytest.mark.parametrize(
    ("key", "java_hash", "key_hash", "slot_default", "slot_pos", "slot_100"),
    [
        ("TopicTest#order-1", -1829193424, 1829193424, 4193424, 16773736, 24),
        ("TopicTest#k1", 2746024, 2746024, 2746024, 10984136, 24),
        ("TopicTest#k2", 2746025, 2746025, 2746025, 10984140, 25),
        ("TopicTest#7F00000104D21B6D358605265C000000", 1581648890, 1581648890, 1648890, 6595600, 90),
        ("TopicTest#订单-1", -573861415, 573861415, 3861415, 15445700, 15),
        ("TopicTest#key-\U0001f600", 2033569811, 2033569811, 3569811, 14279284, 11),
        ("polygenelubricants", -2147483648, 0, 0, 40, 0),
    ],
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
    [
        ("TagA", 2598919, "00000000 0027A807"),
        ("TagB||TagC", -1617987183, "FFFFFFFF 9F8F7991"),
    ],
)
def test_tags_code_is_sign_extended_java_hash(tags: str, code: int, unit_bytes: str) -> None:
    assert tags_code(tags) == code
    assert code.to_bytes(8, "big", signed=True) == bytes.fromhex(unit_bytes)


@pytest.mark.parametrize("tags", [None, ""])
def test_tags_code_of_missing_tags_is_zero(tags: str | None) -> None:
    assert tags_code(tags) == 0
