"""next_record_start: from every byte position, the next record start (or the segment-ending BLANK)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqstore.format.layout import MAGIC_V2
from rmqstore.format.record import encode_blank, encode_record
from rmqstore.format.resync import next_record_start

BASE = 3 << 30
VARIANTS = [
    {},
    {"born_host": "[::1]:1", "store_host": "[2001:db8::1]:10911"},
    {"topic": "%RETRY%" + "g" * 140},
    {"magic": MAGIC_V2, "properties": {}},
    {"born_host": "[fe80::2]:2"},
]


def golden_like(golden_fields: dict[str, Any], bodies: list[bytes]) -> list[dict[str, Any]]:
    specs = []
    for i, body in enumerate(bodies):
        spec = {**golden_fields, **VARIANTS[i % len(VARIANTS)], "body": body, "queue_offset": i}
        spec.pop("physical_offset")
        specs.append(spec)
    return specs


def segment(specs: list[dict[str, Any]], tail: int, blank: bool) -> tuple[np.ndarray, list[int], int]:
    """Records from position 0, then `tail` more bytes: a BLANK covering them, or zeros."""
    out = bytearray()
    starts = []
    for spec in specs:
        starts.append(len(out))
        out += encode_record(physical_offset=BASE + len(out), **spec)
    blank_at = len(out)
    out += (encode_blank(tail) + bytes(tail - 8)) if blank else bytes(tail)
    return np.frombuffer(bytes(out), dtype=np.uint8), starts, blank_at


def expected_next(starts: list[int], blank_at: int | None, pos: int, end: int) -> int | None:
    candidates = [p for p in [*starts, *([blank_at] if blank_at is not None else [])] if pos <= p < end]
    return min(candidates) if candidates else None


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    bodies=st.lists(st.binary(max_size=80), min_size=1, max_size=4),
    blank=st.booleans(),
)
def test_every_byte_position(bodies: list[bytes], blank: bool, golden_fields: dict[str, Any]) -> None:
    buf, starts, blank_at = segment(golden_like(golden_fields, bodies), 40, blank)
    for pos in range(len(buf) + 2):
        got = next_record_start(buf, pos, BASE, len(buf))
        assert got == expected_next(starts, blank_at if blank else None, pos, len(buf)), pos


def test_end_limits_the_search(golden_fields: dict[str, Any]) -> None:
    buf, starts, blank_at = segment(golden_like(golden_fields, [b"a" * 50] * 4), 16, True)
    for end in range(0, len(buf) + 1, 23):
        for pos in range(0, len(buf), 17):
            assert next_record_start(buf, pos, BASE, end) == expected_next(starts, blank_at, pos, end)


def test_blank_must_reach_the_segment_end(golden_fields: dict[str, Any]) -> None:
    """A BLANK whose TOTALSIZE does not cover exactly the rest of the buffer is not a boundary."""
    buf, starts, blank_at = segment(golden_like(golden_fields, [b"x"]), 64, True)
    short = bytearray(buf.tobytes())
    short[blank_at : blank_at + 8] = encode_blank(60)
    assert next_record_start(buf, starts[0] + 1, BASE, len(buf)) == blank_at
    assert next_record_start(np.frombuffer(bytes(short), np.uint8), starts[0] + 1, BASE, len(buf)) is None


def test_wrong_base_offset_finds_nothing(golden_fields: dict[str, Any]) -> None:
    buf, _, _ = segment(golden_like(golden_fields, [b"x", b"y"]), 0, False)
    assert next_record_start(buf, 0, BASE + 1024, len(buf)) is None


def test_magic_inside_a_body_is_not_a_start(golden_fields: dict[str, Any]) -> None:
    """A body that holds a record header with the wrong PHYSICALOFFSET is skipped."""
    fake = encode_record(**{**golden_fields, "physical_offset": 5})
    buf, starts, _ = segment(golden_like(golden_fields, [fake, b"z"]), 0, False)
    assert next_record_start(buf, 1, BASE, len(buf)) == starts[1]


@pytest.mark.parametrize("pos", [-5, 0])
def test_negative_or_zero_position(pos: int, golden_fields: dict[str, Any]) -> None:
    buf, _, _ = segment(golden_like(golden_fields, [b"x"]), 0, False)
    assert next_record_start(buf, pos, BASE, len(buf)) == 0
