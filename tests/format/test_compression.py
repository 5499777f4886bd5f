"""Body compression types from sysFlag bits 8-10 (§2.3, §2.9)."""

from __future__ import annotations

import zlib

import lz4.frame
import pytest
import zstandard

from rmqstore.format.compression import compress_body, compression_type, decompress_body
from rmqstore.format.layout import (
    COMPRESSION_LEGACY_ZLIB,
    COMPRESSION_LZ4,
    COMPRESSION_TYPE_SHIFT,
    COMPRESSION_ZLIB,
    COMPRESSION_ZSTD,
    SYSFLAG_COMPRESSED,
)

BODY = b"rocketmq " * 1000


def sys_flag_for(kind: int) -> int:
    return SYSFLAG_COMPRESSED | (kind << COMPRESSION_TYPE_SHIFT)


@pytest.mark.parametrize(
    ("kind", "reference_compress"),
    [
        (COMPRESSION_LEGACY_ZLIB, lambda b: zlib.compress(b, 5)),
        (COMPRESSION_ZLIB, lambda b: zlib.compress(b, 5)),
        (COMPRESSION_LZ4, lz4.frame.compress),
        # zstd-jni's stream writes no content size; the decoder must cope.
        (COMPRESSION_ZSTD, lambda b: zstandard.ZstdCompressor(write_content_size=False).compress(b)),
    ],
)
def test_decompress_each_type(kind: int, reference_compress: object) -> None:
    stored = reference_compress(BODY)  # type: ignore[operator]
    assert decompress_body(stored, sys_flag_for(kind)) == BODY
    assert decompress_body(compress_body(BODY, kind), sys_flag_for(kind)) == BODY
    assert compression_type(sys_flag_for(kind)) == kind


def test_uncompressed_body_is_returned_as_is() -> None:
    assert decompress_body(b"abc", 0x300) == b"abc"


def test_zlib_compression_matches_deflater_level() -> None:
    assert compress_body(BODY, COMPRESSION_ZLIB, level=9) == zlib.compress(BODY, 9)


@pytest.mark.parametrize("kind", [COMPRESSION_ZLIB, COMPRESSION_LZ4, COMPRESSION_ZSTD])
def test_corrupt_body_is_a_value_error_naming_the_type(kind: int) -> None:
    with pytest.raises(ValueError, match=f"compression type {kind}"):
        decompress_body(b"\x00garbage-not-compressed", sys_flag_for(kind))


def test_truncated_zstd_is_detected() -> None:
    stored = compress_body(BODY, COMPRESSION_ZSTD)
    with pytest.raises(ValueError, match="compression type 2"):
        decompress_body(stored[:-4], sys_flag_for(COMPRESSION_ZSTD))


def test_zstd_body_after_a_failed_one_decompresses() -> None:
    """The thread's zstd decompressor is reused: a body cut mid-frame, or garbage, must not leave
    state behind for the next body."""
    stored = compress_body(BODY, COMPRESSION_ZSTD)
    for bad in (stored[: len(stored) // 2], b"\x00garbage-not-compressed"):
        with pytest.raises(ValueError, match="compression type 2"):
            decompress_body(bad, sys_flag_for(COMPRESSION_ZSTD))
        assert decompress_body(stored, sys_flag_for(COMPRESSION_ZSTD)) == BODY


def test_unknown_type_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown compression type 5"):
        decompress_body(b"x", sys_flag_for(5))
    with pytest.raises(ValueError, match="unknown compression type 7"):
        compress_body(b"x", 7)
