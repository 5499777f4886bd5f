"""Store reads with bodies decompressed on threads against the calling thread alone (the oracle):
same records, same FAILFAST error, same PERMISSIVE skips and counts (§2.9)."""

from __future__ import annotations

import pickle
import random
import threading
from typing import Any

import pytest

from helpers.store_builder import StoreBuilder, Written, fill
from rmqstore.format import compression
from rmqstore.format.compression import compress_body, compressed_sys_flag
from rmqstore.format.layout import COMPRESSION_LZ4, COMPRESSION_ZLIB, COMPRESSION_ZSTD
from rmqstore.store import Store, StoreCorruptionError

PATHS = ("scan", "scan_ranges", "read_offsets")
KINDS = (COMPRESSION_ZLIB, COMPRESSION_LZ4, COMPRESSION_ZSTD)


@pytest.fixture
def damaged(tmp_path) -> tuple[StoreBuilder, list[Written]]:
    """200 compressed records of 6 KB (about 3.3 KB stored) between plain ones; records 40 and 150
    are flagged compressed but hold garbage."""
    b = StoreBuilder(str(tmp_path / "store"), segment_size=1 << 20)
    rnd = random.Random(11)
    bad = []
    for i in range(200):
        kind = KINDS[i % 3]
        plain = (rnd.randbytes(3000) + b"payment-%06d " % i * 300)[:6000]
        stored = b"garbage, not %d" % kind if i in (40, 150) else compress_body(plain, kind)
        written = b.append("TopicZ", stored, sys_flag=compressed_sys_flag(kind), keys=f"k{i}")
        if i in (40, 150):
            bad.append(written)
        if i % 10 == 0:
            fill(b, 1)
    b.finish()
    return b, bad


def read(store: Store, written: list[Written], path: str, mode: str) -> list[tuple[int, bytes]]:
    cols = ["commitLogOffset", "body"]
    if path == "scan":
        batches = list(store.scan(columns=cols, mode=mode))
    elif path == "scan_ranges":
        batches = list(store.scan_ranges([(w.offset, w.offset + w.size) for w in written], cols, mode=mode))
    else:
        batches = [store.read_offsets([w.offset for w in written], cols, mode=mode)]
    return [(o, b) for batch in batches for o, b in zip(batch.column("commitLogOffset").to_pylist(),
                                                       batch.column("body").to_pylist(), strict=True)]


@pytest.fixture
def thread_names(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    names: set[str] = set()
    real = compression.decompress_body

    def spying(*args: Any, **kwargs: Any) -> bytes:
        names.add(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(compression, "decompress_body", spying)
    return names


@pytest.mark.parametrize("path", PATHS)
def test_permissive_skips_the_same_records(damaged, path: str, thread_names: set[str]) -> None:
    b, bad = damaged
    serial = Store.open(b.root, decompress_threads=1)
    want = read(serial, b.written, path, "PERMISSIVE")
    assert thread_names == {"MainThread"}
    threaded = Store.open(b.root, decompress_threads=4)
    thread_names.clear()
    assert read(threaded, b.written, path, "PERMISSIVE") == want
    assert thread_names and all(name.startswith("rmqstore-decompress-4_") for name in thread_names)
    assert [o for o, _ in want] == [w.offset for w in b.written if w not in bad]
    for store in (serial, threaded):
        assert store.stats.invalid_records_skipped == 2
        assert [p.offset for p in store.stats.skipped.values()] == [w.offset for w in bad]
    assert threaded.stats.skipped == serial.stats.skipped
    assert threaded.stats.records_decoded == serial.stats.records_decoded


@pytest.mark.parametrize("path", PATHS)
def test_failfast_names_the_first_damaged_record(damaged, path: str) -> None:
    b, bad = damaged
    errors = []
    for threads in (1, 4):
        with pytest.raises(StoreCorruptionError) as info:
            read(Store.open(b.root, decompress_threads=threads), b.written, path, "FAILFAST")
        errors.append((info.value.path, info.value.offset, info.value.cause))
    assert errors[0] == errors[1] and errors[0][1] == bad[0].offset
    assert "compression type 1" in errors[0][2]  # record 40: LZ4


def test_the_thread_count_is_a_store_option(damaged) -> None:
    b, _ = damaged
    with pytest.raises(ValueError, match="decompress_threads must be at least 1, got 0"):
        Store.open(b.root, decompress_threads=0)
    assert pickle.loads(pickle.dumps(Store.open(b.root, decompress_threads=3))).decompress_threads == 3
