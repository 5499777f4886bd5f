"""The compiled point reader against its oracle, the scalar reference reader (`format.points`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_columnar import SETTINGS, batch_rows, build_segment, message_specs

from rmqstore.format.compression import BodyDecompressionError
from rmqstore.format.kernels import points as point_kernels
from rmqstore.format.points import FEW_RECORDS, PointRecords, point_reader, problem_at, worth_gathering
from rmqstore.format.record import check_record, encode_record
from rmqstore.format.table import COLUMN_NAMES

COMPILED = point_reader("compiled")
REFERENCE = point_reader("reference")


@SETTINGS
@given(
    specs=st.lists(message_specs(), min_size=1, max_size=6),
    flips=st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)), max_size=3),
    cut=st.floats(0.5, 1),
    check_crc=st.booleans(),
    inside=st.lists(st.floats(0, 1), max_size=40),
)
def test_check_matches_reference(
    specs: list[dict[str, Any]], flips: list[tuple[float, int]], cut: float, check_crc: bool,
    inside: list[float],
) -> None:
    """Record starts (intact, damaged, cut by the buffer's end), positions inside records and around
    the buffer's ends, with the right physical offset and a wrong one: same verdicts and sizes."""
    base = 1 << 30
    clean, starts = build_segment(specs, base, blank=40)
    raw = bytearray(clean.tobytes())
    for where, bits in flips:
        raw[int(where * (len(raw) - 1))] ^= bits
    buf = np.frombuffer(bytes(raw[: max(int(cut * len(raw)), 1)]), dtype=np.uint8)
    n = len(buf)
    picked = [*starts, len(clean) - 40, *(int(f * n) for f in inside), -2, -1, n - 5, n - 4, n - 1, n, n + 1]
    positions = np.array(picked, dtype=np.int64)
    for physical in (base + positions, base + positions + 1):
        got, want = (r.check(buf, positions, physical, check_crc=check_crc) for r in (COMPILED, REFERENCE))
        assert got.ok.tolist() == want.ok.tolist()
        assert got.sizes.tolist() == want.sizes.tolist()


@SETTINGS
@given(
    specs=st.lists(message_specs(), min_size=1, max_size=6),
    columns=st.permutations(COLUMN_NAMES).flatmap(lambda names: st.integers(1, len(names)).map(
        lambda k: list(names[:k]))),
    order=st.randoms(use_true_random=False),
    decompress=st.booleans(),
)
def test_decode_matches_reference(specs: list[dict[str, Any]], columns: list[str], order: Any,
                                  decompress: bool) -> None:
    base = 20_000_000_000
    buf, starts = build_segment(specs, base)
    rows = [*starts, *order.sample(starts, k=min(2, len(starts)))]
    order.shuffle(rows)
    positions = np.array(rows, dtype=np.int64)
    got, want = (r.decode(buf, positions, base + positions, columns, decompress=decompress,
                          max_body_size=1 << 20) for r in (COMPILED, REFERENCE))
    assert got.schema == want.schema
    assert batch_rows(got) == batch_rows(want)


@pytest.mark.parametrize("reader", [COMPILED, REFERENCE], ids=lambda r: r.kind)
def test_a_body_that_cannot_be_decompressed_names_its_row(reader: Any, golden_fields: dict[str, Any]) -> None:
    good = encode_record(**golden_fields)
    bad = encode_record(**{**golden_fields, "physical_offset": len(good), "sys_flag": 0x1 | 3 << 8})
    buf = np.frombuffer(good + bad, dtype=np.uint8)
    positions = np.array([0, len(good)], dtype=np.int64)
    with pytest.raises(BodyDecompressionError) as info:
        reader.decode(buf, positions, 7000 + positions, ["body"], decompress=True, max_body_size=1 << 20)
    assert (info.value.row, info.value.position) == (1, len(good))
    assert "physical offset 7178" in str(info.value)


def test_compiled_check_is_one_kernel_call(golden_fields: dict[str, Any], monkeypatch) -> None:
    """Many positions, one compiled call (the point of the compiled reader)."""
    specs = [{**golden_fields, "queue_offset": i} for i in range(50)]
    for spec in specs:
        spec.pop("physical_offset")
    buf, starts = build_segment(specs, 0)
    calls = []
    check_starts = point_kernels.check_starts
    monkeypatch.setattr(point_kernels, "check_starts", lambda *args: calls.append(1) or check_starts(*args))
    positions = np.array(starts, dtype=np.int64)
    assert COMPILED.check(buf, positions, positions, check_crc=True).ok.all()
    assert len(calls) == 1


def test_problem_names_the_reason(golden_record: bytes) -> None:
    buf = np.frombuffer(golden_record, dtype=np.uint8)
    assert "PHYSICALOFFSET" in problem_at(buf, 0, 5, check_crc=False)
    assert problem_at(buf, 3, 3, check_crc=False) == check_record(buf, 3, check_crc=False).reason
    with pytest.raises(ValueError, match="unknown point reader"):
        point_reader("fast")  # type: ignore[arg-type]


@SETTINGS
@given(
    buffers=st.lists(st.lists(message_specs(), min_size=1, max_size=5), min_size=1, max_size=3),
    picks=st.randoms(use_true_random=False),
    columns=st.permutations(COLUMN_NAMES).map(lambda names: list(names[:4])),
)
def test_gather_matches_reference(buffers: list[list[dict[str, Any]]], picks: Any,
                                  columns: list[str]) -> None:
    """Records of several buffers copied back to back: same bytes, positions, sizes and offsets both
    ways, and they decode to the rows the records give where they lie."""
    parts, in_place = [], []
    for k, specs in enumerate(buffers):
        base = (k + 1) << 30
        buf, starts = build_segment(specs, base)
        kept = sorted(picks.sample(starts, k=picks.randint(0, len(starts))))
        positions = np.array(kept, dtype=np.int64)
        sizes = np.array([len(encode_record(physical_offset=0, **specs[starts.index(p)])) for p in kept],
                         dtype=np.int64)
        parts.append(PointRecords(buf, positions, sizes, base + positions))
        in_place.append(COMPILED.decode(buf, positions, base + positions, columns, decompress=True,
                                        max_body_size=1 << 20))
    got, want = COMPILED.gather(parts), REFERENCE.gather(parts)
    assert bytes(got.buf) == bytes(want.buf) == b"".join(
        bytes(p.buf[a:a + n]) for p in parts for a, n in zip(p.positions, p.sizes, strict=True))
    for name in ("positions", "sizes", "physical"):
        assert getattr(got, name).tolist() == getattr(want, name).tolist()
    assert got.physical.tolist() == [o for p in parts for o in p.physical.tolist()]
    decoded = COMPILED.decode(got.buf, got.positions, got.physical, columns, decompress=True,
                              max_body_size=1 << 20)
    assert batch_rows(decoded) == [row for batch in in_place for row in batch_rows(batch)]


@pytest.mark.parametrize("reader", [COMPILED, REFERENCE], ids=lambda r: r.kind)
def test_gather_of_nothing_is_empty(reader: Any) -> None:
    gathered = reader.gather([])
    assert len(gathered) == 0 and len(gathered.buf) == 0


def test_worth_gathering_few_or_sparse_records() -> None:
    """Fewer than FEW_RECORDS records, or records filling less than a quarter of the bytes from the
    first start to the last end."""

    def records(positions: list[int], size: int) -> PointRecords:
        at = np.array(positions, dtype=np.int64)
        return PointRecords(None, at, np.full(len(at), size, dtype=np.int64), at)

    def spread(count: int, gap: int) -> list[int]:
        return list(range(0, count * gap, gap))

    assert worth_gathering(records([], 100)) and worth_gathering(records(spread(FEW_RECORDS - 1, 100), 100))
    assert not worth_gathering(records(spread(FEW_RECORDS, 100), 100))  # back to back
    assert not worth_gathering(records(spread(FEW_RECORDS, 399), 100))
    exactly_a_quarter = [*spread(FEW_RECORDS - 1, 400), FEW_RECORDS * 400 - 100]  # 100 per 400 bytes
    assert not worth_gathering(records(exactly_a_quarter, 100))
    assert worth_gathering(records(spread(FEW_RECORDS, 401), 100))  # below a quarter of the span
