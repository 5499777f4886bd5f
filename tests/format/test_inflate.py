"""The fast zlib inflate (ISA-L, `compression._zlib_decompress`) against zlib alone, the oracle: the
same bodies, the same errors with the same causes, the same cap, on RocketMQ's own fixtures and on
random, compressible, truncated and corrupted streams (§2.9)."""

from __future__ import annotations

import glob
import os
import random
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator

import pytest
from isal import isal_zlib

from rmqstore.format import compression
from rmqstore.format.compression import (
    BodyDecompressionError,
    compressed_sys_flag,
    compression_type,
    decompress_body,
)
from rmqstore.format.layout import COMPRESSION_LEGACY_ZLIB, COMPRESSION_ZLIB, SYSFLAG_COMPRESSED
from rmqstore.store import Store

ZLIB = compressed_sys_flag(COMPRESSION_ZLIB)
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "conformance", "fixtures")


@pytest.fixture
def isal_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the streams handed to ISA-L (one entry per decompressobj made)."""
    calls: list[int] = []
    make = isal_zlib.decompressobj

    def counting() -> object:
        calls.append(1)
        return make()

    monkeypatch.setattr(compression._isal_zlib, "decompressobj", counting)
    return calls


def outcome(body: bytes, *, fast: bool, max_size: int = compression.MAX_MESSAGE_SIZE) -> object:
    """decompress_body's result or error cause, with ISA-L on or off (zlib alone: the oracle)."""
    saved = compression._isal_zlib
    compression._isal_zlib = saved if fast else None
    try:
        return decompress_body(body, ZLIB, max_size=max_size)
    except BodyDecompressionError as exc:
        return ("error", exc.cause)
    finally:
        compression._isal_zlib = saved


def assert_same(body: bytes, **kwargs: int) -> object:
    want = outcome(body, fast=False, **kwargs)
    assert outcome(body, fast=True, **kwargs) == want
    return want


def test_isal_is_the_inflater() -> None:
    assert compression._isal_zlib is isal_zlib


def test_rocketmq_fixtures_inflate_identically(isal_calls: list[int]) -> None:
    """Every zlib body (type 3 and legacy bit-0-only) that RocketMQ's compressors wrote, including
    the real producers' in rmq-5.5.0-broker and rmq-5.5.0-life (the -crc fixtures, the 5.4.0
    queue-shape fixtures and the 5.3.3 rdb fixture, which holds the LMQ scenario's records, send
    plain bodies and hold none)."""
    seen: dict[str, int] = {}
    for store_dir in sorted(glob.glob(os.path.join(FIXTURES, "*", "store"))):
        name = os.path.basename(os.path.dirname(store_dir))
        seen[name] = 0
        with Store.open(store_dir) as store:
            for batch in store.scan(columns=["sysFlag", "body"], decompress=False):
                for flag, body in zip(batch.column("sysFlag").to_pylist(), batch.column("body").to_pylist(),
                                      strict=True):
                    if flag & SYSFLAG_COMPRESSED and body and compression_type(flag) in (
                            COMPRESSION_LEGACY_ZLIB, COMPRESSION_ZLIB):
                        assert decompress_body(body, flag) == zlib.decompress(body)
                        seen[name] += 1
    plain = ("-crc", "-batchcq", "-lmq", "-cqext", "-rdb")
    assert len(seen) >= 19 and all(count for name, count in seen.items() if not name.endswith(plain))
    assert len(isal_calls) == sum(seen.values())


def bodies(rnd: random.Random) -> Iterator[bytes]:
    """Random (incompressible), word salad and JSON-like bodies from 1 byte to 300 KB."""
    words = [rnd.randbytes(rnd.randint(1, 8)) for _ in range(200)]
    for size in (1, 100, 4096, 10_000, 70_000, 300_000):
        yield rnd.randbytes(size)
        yield b"".join(rnd.choice(words) for _ in range(size // 4 + 1))[:size]
        yield (b'{"orderId":%d,"user":"u%d","items":[1,2,3]}' % (size, size)) * (size // 40 + 1)


def variants(stored: bytes, body: bytes, rnd: random.Random) -> Iterator[bytes]:
    """The stream, cut, extended, bit-flipped, with other headers, dictionaries, windows, wrappers."""
    yield from (stored, stored[:-1], stored[:-4], stored[: len(stored) // 2], stored[:1], stored[2:],
                stored + b"trailing", stored + stored)
    for _ in range(25):
        flipped = bytearray(stored)
        for _ in range(rnd.randint(1, 3)):
            flipped[rnd.randrange(len(flipped))] ^= 1 << rnd.randrange(8)
        yield bytes(flipped)
    for cinfo in range(16):  # window sizes, valid (<= 7) and not; ISA-L accepts CINFO > 7
        cmf = cinfo << 4 | 8
        yield bytes([cmf, next(f for f in range(256) if (cmf << 8 | f) % 31 == 0)]) + stored[2:]
    for wbits, zdict in ((9, None), (12, None), (15, b"a preset dictionary"), (-15, None), (31, None)):
        packer = zlib.compressobj(5, zlib.DEFLATED, wbits, zdict=zdict) if zdict else \
            zlib.compressobj(5, zlib.DEFLATED, wbits)
        yield packer.compress(body) + packer.flush()


def test_random_and_damaged_streams_match_zlib() -> None:
    rnd = random.Random(9)
    verdicts = {"ok": 0, "error": 0}
    for body in bodies(rnd):
        for level in (1, 5, 9):
            stored = zlib.compress(body, level)
            for variant in variants(stored, body, rnd):
                want = assert_same(variant)
                verdicts["error" if isinstance(want, tuple) else "ok"] += 1
    assert verdicts["ok"] > 100 and verdicts["error"] > 1000


@pytest.mark.parametrize(("damage", "cause"), [
    (lambda s: s[:-1] + bytes([s[-1] ^ 1]), "Error -3 while decompressing data: incorrect data check"),
    (lambda s: s[:-3], "truncated zlib stream"),
    (lambda s: b"\x88\x1c" + s[2:], "Error -3 while decompressing data: invalid window size"),
    (lambda s: s[:2] + b"\xff" * 8 + s[10:], "Error -3 while decompressing data: invalid block type"),
])
def test_corrupt_streams_fail_with_zlibs_cause(damage: Callable[[bytes], bytes], cause: str,
                                               isal_calls: list[int]) -> None:
    """ISA-L reports these in its own words (or, for a window over 32 KiB, accepts the stream); the
    cause is zlib's either way."""
    stored = damage(zlib.compress(b"rocketmq " * 5000, 5))
    with pytest.raises(BodyDecompressionError) as info:
        decompress_body(stored, ZLIB)
    assert info.value.cause == f"cannot decompress body (compression type 3): {cause}"


@pytest.mark.parametrize("size", [5000, 1 << 20])
def test_cap_holds_on_both_paths(size: int, isal_calls: list[int]) -> None:
    stored = zlib.compress(bytes(size), 9)
    for max_size in (size - 1, size, size + 1, 10):
        want = assert_same(stored, max_size=max_size)
        assert (want == bytes(size)) == (max_size >= size)
    assert isal_calls


def test_without_isal_zlib_inflates_alone() -> None:
    """A platform without python-isal wheels: the import fails and zlib does the work."""
    code = ("import sys, zlib; sys.modules['isal'] = None\n"
            "from rmqstore.format import compression as c\n"
            "assert c._isal_zlib is None\n"
            "assert c.decompress_body(zlib.compress(b'x' * 9000), 0x301) == b'x' * 9000\n")
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy())
