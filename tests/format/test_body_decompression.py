"""Compressed bodies on both decoders (the per-record `decode_record` is the oracle): empty stored
bodies, corrupt bodies and decompression bombs (§2.9, `format.compression`)."""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from typing import Any

import lz4.frame
import numpy as np
import pytest
import zstandard

from rmqstore.format.columnar import decode_records
from rmqstore.format.compression import (
    MAX_MESSAGE_SIZE,
    BodyDecompressionError,
    compressed_sys_flag,
    decompress_body,
)
from rmqstore.format.layout import (
    COMPRESSION_LEGACY_ZLIB,
    COMPRESSION_LZ4,
    COMPRESSION_ZLIB,
    COMPRESSION_ZSTD,
    TRANSACTION_ROLLBACK,
)
from rmqstore.format.record import decode_record, encode_record

TYPES = (COMPRESSION_LEGACY_ZLIB, COMPRESSION_LZ4, COMPRESSION_ZSTD, COMPRESSION_ZLIB)
BASE = 4096



def per_record(buf: np.ndarray, starts: list[int], **kwargs: Any) -> list[bytes]:
    return [decode_record(buf, p, **kwargs).body for p in starts]


def columnar(buf: np.ndarray, starts: list[int], **kwargs: Any) -> list[bytes]:
    return decode_records(buf, np.array(starts), BASE, ["body"], **kwargs).column("body").to_pylist()


DECODERS = pytest.mark.parametrize("decode", [per_record, columnar], ids=["per_record", "columnar"])


def segment(golden_fields: dict[str, Any], specs: list[tuple[bytes, int]]) -> tuple[np.ndarray, list[int]]:
    """Records (stored body, sysFlag) back to back from physical offset BASE."""
    out, starts = bytearray(), []
    for body, sys_flag in specs:
        starts.append(len(out))
        out += encode_record(**{**golden_fields, "body": body, "sys_flag": sys_flag,
                                "physical_offset": BASE + len(out)})
    return np.frombuffer(bytes(out), dtype=np.uint8), starts


@DECODERS
@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("transaction", [0, TRANSACTION_ROLLBACK])
def test_empty_compressed_body_is_empty(decode: Callable, kind: int, transaction: int,
                                        golden_fields: dict[str, Any]) -> None:
    """MessageDecoder decompresses only a non-empty body: BODYLENGTH 0 is the empty body whatever
    the compression bits say (a ROLLBACK from the older end-transaction path keeps them)."""
    flag = compressed_sys_flag(kind) | transaction
    specs = [(b"", flag), (zlib.compress(b"next"), compressed_sys_flag(COMPRESSION_ZLIB)), (b"", flag)]
    buf, starts = segment(golden_fields, specs)
    assert per_record(buf, starts) == [b"", b"next", b""]  # the oracle
    assert decode(buf, starts) == [b"", b"next", b""]


@DECODERS
@pytest.mark.parametrize("kind", [*TYPES, 5])
def test_corrupt_body_is_a_named_error(decode: Callable, kind: int, golden_fields: dict[str, Any]) -> None:
    """A flipped compression bit (a plain body read as compressed) or an unknown type."""
    specs = [(b"plain", 0), (b"plain body, never compressed", compressed_sys_flag(kind))]
    buf, starts = segment(golden_fields, specs)
    with pytest.raises(BodyDecompressionError) as info:
        decode(buf, starts)
    assert info.value.position == starts[1]
    assert f"compression type {kind}" in info.value.cause
    if decode is columnar:
        assert info.value.row == 1 and f"physical offset {BASE + starts[1]}" in str(info.value)


def _bomb(kind: int, size: int) -> bytes:
    """`size` zero bytes compressed as a stream, without holding them in memory."""
    zeros = bytes(1 << 20)
    if kind == COMPRESSION_ZSTD:
        zc = zstandard.ZstdCompressor(level=1, write_content_size=False).compressobj()
        return b"".join(zc.compress(zeros) for _ in range(size >> 20)) + zc.flush()
    if kind == COMPRESSION_LZ4:
        lc = lz4.frame.LZ4FrameCompressor()
        return lc.begin() + b"".join(lc.compress(zeros) for _ in range(size >> 20)) + lc.flush()
    dc = zlib.compressobj(9)
    return b"".join(dc.compress(zeros) for _ in range(size >> 20)) + dc.flush()


@DECODERS
@pytest.mark.parametrize(("kind", "size"), [(COMPRESSION_ZSTD, 1 << 30), (COMPRESSION_LZ4, 1 << 30),
                                            (COMPRESSION_ZLIB, MAX_MESSAGE_SIZE + (1 << 20))])
def test_decompression_bomb_stops_at_the_cap(decode: Callable, kind: int, size: int,
                                             golden_fields: dict[str, Any]) -> None:
    bomb = _bomb(kind, size)
    assert len(bomb) < size // 200
    buf, starts = segment(golden_fields, [(bomb, compressed_sys_flag(kind))])
    began = time.monotonic()
    with pytest.raises(BodyDecompressionError, match=f"inflates past {MAX_MESSAGE_SIZE} bytes"):
        decode(buf, starts)
    assert time.monotonic() - began < 5, "decompression must stop at the cap, not inflate the whole bomb"
    with pytest.raises(BodyDecompressionError, match="inflates past 1000 bytes"):
        decode(buf, starts, max_body_size=1000)


@pytest.mark.parametrize("kind", TYPES)
def test_body_exactly_at_the_cap_is_accepted(kind: int) -> None:
    body = bytes(range(256)) * 40
    stored = _compress(kind, body)
    assert decompress_body(stored, compressed_sys_flag(kind), max_size=len(body)) == body
    with pytest.raises(BodyDecompressionError, match=f"inflates past {len(body) - 1} bytes"):
        decompress_body(stored, compressed_sys_flag(kind), max_size=len(body) - 1)


def _compress(kind: int, body: bytes) -> bytes:
    if kind == COMPRESSION_LZ4:
        return lz4.frame.compress(body)
    if kind == COMPRESSION_ZSTD:
        return zstandard.ZstdCompressor(write_content_size=False).compress(body)
    return zlib.compress(body)


@pytest.mark.parametrize("kind", TYPES)
def test_truncated_body_is_detected(kind: int) -> None:
    stored = _compress(kind, b"rocketmq " * 2000)
    with pytest.raises(BodyDecompressionError, match=f"compression type {kind}"):
        decompress_body(stored[: len(stored) // 2], compressed_sys_flag(kind))
