"""Producer-side body compression (spec §2.3, §2.9).

Applies when sysFlag bit 0 is set; the type is `(sysFlag & 0x700) >> 8`: 0 (legacy) and 3 = zlib
stream, 1 = LZ4 frame, 2 = zstd frame. BODYCRC and BODYLENGTH describe the compressed bytes.
"""

from __future__ import annotations

import zlib

import lz4.frame
import zstandard

from rmqstore.format.layout import (
    COMPRESSION_LEGACY_ZLIB,
    COMPRESSION_LZ4,
    COMPRESSION_TYPE_SHIFT,
    COMPRESSION_ZLIB,
    COMPRESSION_ZSTD,
    SYSFLAG_COMPRESSED,
    SYSFLAG_COMPRESSION_TYPE_MASK,
)

_ZLIB_TYPES = (COMPRESSION_LEGACY_ZLIB, COMPRESSION_ZLIB)


def compression_type(sys_flag: int) -> int:
    """Compression type bits 8-10 of sysFlag (§2.3)."""
    return (sys_flag & SYSFLAG_COMPRESSION_TYPE_MASK) >> COMPRESSION_TYPE_SHIFT


def _zstd_decompress(body: bytes) -> bytes:
    # zstd-jni's ZstdOutputStream writes no content size, so decompress as a stream.
    dobj = zstandard.ZstdDecompressor().decompressobj()
    out = dobj.decompress(body)
    if not dobj.eof:
        raise ValueError("truncated zstd frame")
    return out


def decompress_body(body: bytes, sys_flag: int) -> bytes:
    """The body as sent by the producer: decompressed when sysFlag bit 0 is set (§2.9).

    Raises ValueError naming the compression type when the type is unknown or the data is corrupt.
    """
    if not sys_flag & SYSFLAG_COMPRESSED:
        return bytes(body)
    kind = compression_type(sys_flag)
    try:
        if kind in _ZLIB_TYPES:
            return zlib.decompress(body)
        if kind == COMPRESSION_LZ4:
            return lz4.frame.decompress(body)
        if kind == COMPRESSION_ZSTD:
            return _zstd_decompress(body)
    except (zlib.error, RuntimeError, zstandard.ZstdError, ValueError) as exc:
        raise ValueError(f"cannot decompress body (compression type {kind}): {exc}") from None
    raise ValueError(f"unknown compression type {kind} in sysFlag {sys_flag:#x}")


def compress_body(body: bytes, compression_type: int, level: int = 5) -> bytes:
    """Compress like the producer's compressor for the given type (§2.9); level as `compressLevel`."""
    if compression_type in _ZLIB_TYPES:
        return zlib.compress(body, level)
    if compression_type == COMPRESSION_LZ4:
        return lz4.frame.compress(body)
    if compression_type == COMPRESSION_ZSTD:
        return zstandard.ZstdCompressor(level=level, write_content_size=False).compress(body)
    raise ValueError(f"unknown compression type {compression_type}")
