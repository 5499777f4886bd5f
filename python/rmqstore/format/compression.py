"""Producer-side body compression (spec §2.3, §2.9).

Applies when sysFlag bit 0 is set; the type is `(sysFlag & 0x700) >> 8`: 0 (legacy) and 3 = zlib
stream, 1 = LZ4 frame, 2 = zstd frame. BODYCRC and BODYLENGTH describe the compressed bytes.

Like RocketMQ's `MessageDecoder.decode` (4.9.x and 5.x: the compressor runs only inside
`if (bodyLen > 0)`), an empty stored body is the empty body whatever the compression bits say:
a transaction ROLLBACK written by the older end-transaction path keeps the half message's sysFlag
and has no body.

Decompressed size is capped (`MAX_MESSAGE_SIZE`): the producer refuses a body larger than its
`maxMessageSize` *before* compressing it (`Validators.checkMessage`; client and broker default
4 MiB), so a body that inflates past the cap is corrupt, not a message. Decompression is
incremental and stops just past the cap, so a decompression bomb costs at most the cap in memory
and the time to produce it.

zlib streams are inflated by ISA-L (python-isal) when it is installed, about twice zlib's speed, with
zlib as the arbiter (`_zlib_decompress`): results and error messages are zlib's on every input.
Batches with many compressed bodies are decompressed on a small thread pool (`decompress_bodies`;
zlib, ISA-L, LZ4 and zstd all release the GIL while they work).
"""

from __future__ import annotations

import os
import threading
import zlib
from bisect import bisect_left
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from itertools import accumulate, pairwise
from typing import Any

import lz4.frame
import zstandard

try:
    from isal import isal_zlib as _isal_zlib
except ImportError:  # a platform without python-isal wheels: zlib inflates alone
    _isal_zlib = None

from rmqstore.format.contract_layout import MAX_MESSAGE_SIZE
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

_ZSTD_MAX_RATIO = 1 << 15
"""Most output one input byte of a zstd frame can produce: a block is at least 4 bytes (3-byte
header, 1 RLE byte) and at most 128 KiB of output."""
_ZSTD_MIN_STEP = 64

DEFAULT_MAX_DECOMPRESS_THREADS = 4
"""Upper bound of the default thread count (`decompress_thread_count`)."""
PARALLEL_MIN_BYTES = 256 << 10
"""Compressed bytes a batch must hold before its bodies go to threads: about 1.3 ms of inflating
(zlib level 5 JSON, ISA-L), against some 70 µs to hand a batch's runs to the pool and collect them."""
_RUNS_PER_THREAD = 4
"""Contiguous runs per thread, so one slow run does not leave the other threads idle."""


class BodyDecompressionError(ValueError):
    """A compressed body that cannot be decompressed: corrupt, truncated, an unknown type, or
    inflating past the size cap. `cause` says which; decoders add the record's buffer `position`
    (and `row` in a batch) so a caller that knows the file can name the record's physical offset."""

    def __init__(self, cause: str, *, position: int = -1, row: int = -1, message: str | None = None) -> None:
        super().__init__(message or cause)
        self.cause = cause
        self.position = position
        self.row = row


def compression_type(sys_flag: int) -> int:
    """Compression type bits 8-10 of sysFlag (§2.3)."""
    return (sys_flag & SYSFLAG_COMPRESSION_TYPE_MASK) >> COMPRESSION_TYPE_SHIFT


def compressed_sys_flag(kind: int) -> int:
    """The sysFlag bits of a body compressed with `kind` (bit 0 and type bits 8-10, §2.3)."""
    return SYSFLAG_COMPRESSED | kind << COMPRESSION_TYPE_SHIFT


def _too_big(limit: int) -> str:
    return (f"body inflates past {limit} bytes (the cap on a decompressed body; the producer refuses "
            f"bodies over maxMessageSize before compressing them)")


def _bounded(out: bytes, dobj: Any, limit: int, what: str) -> bytes:
    """`out`, the whole output of the decompressor `dobj`, unless it passed the cap or the stream
    did not end (`dobj.eof`)."""
    if len(out) > limit:
        raise BodyDecompressionError(_too_big(limit))
    if not dobj.eof:
        raise BodyDecompressionError(f"truncated {what}")
    return out


def _deflater_header(body: Any) -> bool:
    """The zlib header `java.util.zip.Deflater` writes (RFC 1950, section 2.2): deflate with a
    32 KiB window (CMF 0x78), no preset dictionary (FLG bit 5), a valid FCHECK."""
    return len(body) >= 2 and body[0] == 0x78 and not body[1] & 0x20 and (0x7800 | body[1]) % 31 == 0


def _zlib_decompress(body: bytes, limit: int) -> bytes:
    """ISA-L inflates streams with Deflater's header and its output is kept only when the stream ends
    within the cap; zlib decides everything else (other headers, which ISA-L reads more leniently;
    corrupt, truncated and oversized streams), so output and errors are zlib's on every input."""
    if _isal_zlib is not None and _deflater_header(body):
        fast = _isal_zlib.decompressobj()
        try:
            out = fast.decompress(body, limit + 1)
        except _isal_zlib.error:
            pass
        else:
            if fast.eof and len(out) <= limit:
                return out
    dobj = zlib.decompressobj()
    return _bounded(dobj.decompress(body, limit + 1), dobj, limit, "zlib stream")


def _lz4_decompress(body: bytes, limit: int) -> bytes:
    dobj = lz4.frame.LZ4FrameDecompressor()
    return _bounded(dobj.decompress(body, max_length=limit + 1), dobj, limit, "LZ4 frame")


_zstd = threading.local()


def _zstd_decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompressor: making one per body (its context) cost a third of a 25 KB body's
    time; a decompressor is not thread safe, and `decompressobj()` resets its context."""
    if not hasattr(_zstd, "decompressor"):
        _zstd.decompressor = zstandard.ZstdDecompressor()
    return _zstd.decompressor


def _zstd_decompress(body: bytes, limit: int) -> bytes:
    """zstd-jni's ZstdOutputStream writes no content size, so decompress as a stream, fed in steps
    small enough that one step cannot inflate far past the cap (`_ZSTD_MAX_RATIO`)."""
    dobj = _zstd_decompressor().decompressobj()
    view = memoryview(body)
    parts, size, pos = [], 0, 0
    while pos < len(view) and not dobj.eof:
        step = max(_ZSTD_MIN_STEP, (limit - size) // _ZSTD_MAX_RATIO)
        part = dobj.decompress(view[pos : pos + step])
        pos += step
        size += len(part)
        if size > limit:
            raise BodyDecompressionError(_too_big(limit))
        parts.append(part)
    return _bounded(b"".join(parts), dobj, limit, "zstd frame")


def decompress_body(body: bytes, sys_flag: int, *, max_size: int = MAX_MESSAGE_SIZE) -> bytes:
    """The body as sent by the producer: decompressed when sysFlag bit 0 is set and the stored body
    is not empty (§2.9, module docstring).

    Raises BodyDecompressionError naming the compression type when the type is unknown, the data
    is corrupt or truncated, or it inflates past `max_size` bytes.
    """
    if not sys_flag & SYSFLAG_COMPRESSED or not len(body):
        return bytes(body)
    kind = compression_type(sys_flag)
    decompress = _DECOMPRESSORS.get(kind)
    if decompress is None:
        raise BodyDecompressionError(f"unknown compression type {kind} in sysFlag {sys_flag:#x}")
    try:
        return decompress(body, max_size)
    except BodyDecompressionError as exc:
        cause = exc.cause
    except (zlib.error, RuntimeError, zstandard.ZstdError, ValueError) as exc:
        cause = str(exc)
    raise BodyDecompressionError(f"cannot decompress body (compression type {kind}): {cause}")


def decompress_thread_count(threads: int | None) -> int:
    """Threads for decompressing a batch's bodies: `threads`, or for None the machine's cores, at
    most DEFAULT_MAX_DECOMPRESS_THREADS. ValueError below 1."""
    if threads is None:
        return min(DEFAULT_MAX_DECOMPRESS_THREADS, os.cpu_count() or 1)
    if threads < 1:
        raise ValueError(f"decompress_threads must be at least 1, got {threads}")
    return threads


def decompress_bodies(bodies: Sequence[Any], sys_flags: Sequence[int], *, max_size: int = MAX_MESSAGE_SIZE,
                      threads: int | None = None) -> list[bytes]:
    """`decompress_body` of each body with its sysFlag, in order.

    With `threads` > 1 (`decompress_thread_count`: None is the default) and PARALLEL_MIN_BYTES of
    stored bodies, contiguous runs of bodies are decompressed on that many threads. Either way the
    first body in order that cannot be decompressed raises its BodyDecompressionError with `row` set
    to its index, and no work is left running when this returns or raises.
    """
    threads = decompress_thread_count(threads)
    ends = list(accumulate(len(body) for body in bodies))
    if threads == 1 or len(bodies) < 2 or ends[-1] < PARALLEL_MIN_BYTES:
        return _decompress_run(bodies, sys_flags, 0, len(bodies), max_size)
    runs = min(len(bodies), threads * _RUNS_PER_THREAD)
    cuts = [0, *(bisect_left(ends, ends[-1] * i // runs) for i in range(1, runs)), len(bodies)]
    pool = _executor(threads)
    futures = [pool.submit(_decompress_run, bodies, sys_flags, lo, hi, max_size)
               for lo, hi in pairwise(cuts) if lo < hi]
    out: list[bytes] = []
    try:
        for future in futures:
            out.extend(future.result())
    finally:
        _stop(futures)
    return out


def _decompress_run(bodies: Sequence[Any], sys_flags: Sequence[int], lo: int, hi: int,
                    max_size: int) -> list[bytes]:
    out = []
    for k in range(lo, hi):
        try:
            out.append(decompress_body(bodies[k], sys_flags[k], max_size=max_size))
        except BodyDecompressionError as exc:
            exc.row = k
            raise
    return out


def _stop(futures: list[Future[list[bytes]]]) -> None:
    """Cancel the runs not started and wait for the running ones (they read the caller's buffer)."""
    for future in futures:
        future.cancel()
    wait(futures)


_pools: dict[int, ThreadPoolExecutor] = {}
_pools_pid = os.getpid()
_pools_lock = threading.Lock()


def _executor(threads: int) -> ThreadPoolExecutor:
    """The process's pool of `threads` threads; made again in a forked child (Spark's Python
    workers fork from a daemon), whose copy of the parent's pool has no threads."""
    global _pools_pid
    with _pools_lock:
        if _pools_pid != os.getpid():
            _pools.clear()
            _pools_pid = os.getpid()
        if threads not in _pools:
            _pools[threads] = ThreadPoolExecutor(threads, thread_name_prefix=f"rmqstore-decompress-{threads}")
        return _pools[threads]


_DECOMPRESSORS = {
    COMPRESSION_LEGACY_ZLIB: _zlib_decompress,
    COMPRESSION_ZLIB: _zlib_decompress,
    COMPRESSION_LZ4: _lz4_decompress,
    COMPRESSION_ZSTD: _zstd_decompress,
}


def compress_body(body: bytes, compression_type: int, level: int = 5) -> bytes:
    """Compress like the producer's compressor for the given type (§2.9); level as `compressLevel`."""
    if compression_type in _ZLIB_TYPES:
        return zlib.compress(body, level)
    if compression_type == COMPRESSION_LZ4:
        return lz4.frame.compress(body)
    if compression_type == COMPRESSION_ZSTD:
        return zstandard.ZstdCompressor(level=level, write_content_size=False).compress(body)
    raise ValueError(f"unknown compression type {compression_type}")
