"""Bodies decompressed on threads (`compression.decompress_bodies`) against the calling thread alone
(threads=1) and the per-record `decode_record`, the oracles: same bodies in the same order, the
first failing record in record order reported, nothing left running (§2.9)."""

from __future__ import annotations

import multiprocessing
import random
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from rmqstore.format import compression
from rmqstore.format.columnar import decode_records
from rmqstore.format.compression import (
    PARALLEL_MIN_BYTES,
    BodyDecompressionError,
    compress_body,
    compressed_sys_flag,
    decompress_bodies,
)
from rmqstore.format.layout import (
    COMPRESSION_LEGACY_ZLIB,
    COMPRESSION_LZ4,
    COMPRESSION_ZLIB,
    COMPRESSION_ZSTD,
)
from rmqstore.format.record import decode_record, encode_record

BASE = 1 << 20
KINDS = {"legacy-zlib": (COMPRESSION_LEGACY_ZLIB,), "zlib": (COMPRESSION_ZLIB,), "lz4": (COMPRESSION_LZ4,),
         "zstd": (COMPRESSION_ZSTD,),
         "mixed": (COMPRESSION_ZLIB, COMPRESSION_LZ4, COMPRESSION_ZSTD, COMPRESSION_LEGACY_ZLIB)}
THREADS = pytest.mark.parametrize("threads", [1, 2, 4])


def body(rnd: random.Random, i: int) -> bytes:
    """6 KB, half random: about 3.3 KB compressed."""
    return (rnd.randbytes(3000) + b"order-%08d " % i * 250)[:6000]


def segment(golden_fields: dict[str, Any], kinds: tuple[int, ...], count: int,
            bad: dict[int, bytes] | None = None) -> tuple[np.ndarray, list[int], list[bytes]]:
    """`count` records, every fifth uncompressed, the others compressed with `kinds` in turn; record i
    in `bad` stores those bytes instead (still flagged compressed)."""
    rnd = random.Random(5)
    out, starts, bodies = bytearray(), [], []
    for i in range(count):
        plain = body(rnd, i)
        kind = kinds[i % len(kinds)]
        stored, flag = (plain, 0) if i % 5 == 4 else (compress_body(plain, kind), compressed_sys_flag(kind))
        if bad and i in bad:
            stored = bad[i]
        starts.append(len(out))
        bodies.append(plain)
        out += encode_record(**{**golden_fields, "body": stored, "sys_flag": flag,
                                "physical_offset": BASE + len(out)})
    return np.frombuffer(bytes(out), dtype=np.uint8), starts, bodies


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Which threads decompressed, and how many decompressions are running."""
    seen: dict[str, Any] = {"threads": set(), "running": 0, "calls": 0}
    lock = threading.Lock()
    real = compression.decompress_body

    def spying(*args: Any, **kwargs: Any) -> bytes:
        with lock:
            seen["threads"].add(threading.current_thread().name)
            seen["running"] += 1
            seen["calls"] += 1
        try:
            return real(*args, **kwargs)
        finally:
            with lock:
                seen["running"] -= 1

    monkeypatch.setattr(compression, "decompress_body", spying)
    yield seen


def decoded(buf: np.ndarray, starts: list[int], threads: int) -> list[bytes]:
    batch = decode_records(buf, np.array(starts), BASE, ["body"], decompress_threads=threads)
    return batch.column("body").to_pylist()


@pytest.mark.parametrize("kinds", list(KINDS.values()), ids=list(KINDS))
@THREADS
def test_threads_decode_what_one_thread_does(kinds: tuple[int, ...], threads: int,
                                             golden_fields: dict[str, Any], workers: dict[str, Any]) -> None:
    buf, starts, plain = segment(golden_fields, kinds, 150)
    assert [decode_record(buf, p).body for p in starts] == plain  # the oracle
    order = starts[::-1] + starts[:7]  # any order, repeats allowed
    assert decoded(buf, order, threads) == [plain[starts.index(p)] for p in order]
    if threads == 1:
        assert workers["threads"] == {"MainThread"}
    else:  # the pool of that size did all of it (it starts threads as it needs them)
        assert workers["threads"] and all(name.startswith(f"rmqstore-decompress-{threads}_")
                                          for name in workers["threads"])
        assert len(workers["threads"]) <= threads


def test_small_batches_stay_on_the_calling_thread(golden_fields: dict[str, Any],
                                                  workers: dict[str, Any]) -> None:
    buf, starts, plain = segment(golden_fields, KINDS["mixed"], 20)
    assert decoded(buf, starts, 4) == plain
    assert workers["threads"] == {"MainThread"}


def _bomb() -> bytes:
    return compress_body(bytes(compression.MAX_MESSAGE_SIZE + 1), COMPRESSION_ZSTD)


@THREADS
@pytest.mark.parametrize(("bad", "first"), [
    ({140: b"not zlib"}, 140),
    ({3: b"not zlib", 140: b"not zlib"}, 3),
    ({12: b"\x78\x9c broken", 131: b"not zlib"}, 12),
    ({60: b"not zlib", 147: _bomb()}, 60),
])
def test_first_failing_record_in_record_order_wins(threads: int, bad: dict[int, bytes], first: int,
                                                   golden_fields: dict[str, Any],
                                                   workers: dict[str, Any]) -> None:
    buf, starts, _ = segment(golden_fields, KINDS["zlib"], 150, bad)
    with pytest.raises(BodyDecompressionError) as info:
        decoded(buf, starts, threads)
    assert (info.value.row, info.value.position) == (first, starts[first])
    assert f"record at physical offset {BASE + starts[first]}:" in str(info.value)
    assert workers["running"] == 0, "no decompression may outlive the call (they read the buffer)"
    if threads == 1:
        assert workers["calls"] == first - first // 5 + 1  # stops at the failing record


def test_thread_count_is_checked() -> None:
    with pytest.raises(ValueError, match="decompress_threads must be at least 1, got 0"):
        decompress_bodies([b""], [0], threads=0)


def test_default_threads_follow_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    for cores, want in ((1, 1), (2, 2), (64, compression.DEFAULT_MAX_DECOMPRESS_THREADS), (None, 1)):
        monkeypatch.setattr(compression.os, "cpu_count", lambda cores=cores: cores)
        assert compression.decompress_thread_count(None) == want


def _child(queue: Any, stored: list[bytes], flags: list[int]) -> None:
    queue.put(len(b"".join(decompress_bodies(stored, flags, threads=2))))


def test_a_forked_child_gets_its_own_pool() -> None:
    """Spark's Python workers fork from a daemon: a pool made before the fork has no threads in the
    child, which must make its own instead of waiting forever."""
    rnd = random.Random(3)
    plain = [body(rnd, i) for i in range(120)]
    stored = [compress_body(p, COMPRESSION_ZLIB) for p in plain]
    flags = [compressed_sys_flag(COMPRESSION_ZLIB)] * len(stored)
    assert sum(map(len, stored)) >= PARALLEL_MIN_BYTES
    assert decompress_bodies(stored, flags, threads=2) == plain  # the parent's pool exists now
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue, stored, flags))
    child.start()
    child.join(60)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive and child.exitcode == 0
    assert queue.get(timeout=5) == sum(map(len, plain))
