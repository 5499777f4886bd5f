"""Decode throughput of a store whose bodies producers compressed with zlib: zlib against ISA-L's
inflate, on the calling thread against the decompression pool (`format.compression`).

Run: python3 -m pytest tests/bench/test_bench_inflate.py -m bench -s -p no:cacheprovider
RMQSTORE_BENCH_INFLATE_RECORDS sets the record count (default 20000; bodies of 4-32 KiB, JSON-like,
compressed like a producer does, zlib level 5), RMQSTORE_BENCH_THREADS the pool size (default
`decompress_thread_count(None)`). Each configuration is the best wall time of three full scans of
`commitLogOffset` and `body`; CPU time is shown beside it. The pool can only use cores that other
work leaves idle: the load average is printed with the results.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from pathlib import Path

import pytest

from rmqstore.format import compression
from rmqstore.format.layout import COMPRESSION_ZLIB
from rmqstore.store import Store
from rmqstore.writer.message import MessageSpec
from rmqstore.writer.store_writer import StoreWriter

pytestmark = pytest.mark.bench

RECORDS = int(os.environ.get("RMQSTORE_BENCH_INFLATE_RECORDS", "20000"))
THREADS = int(os.environ.get("RMQSTORE_BENCH_THREADS", "0")) or compression.decompress_thread_count(None)
COLUMNS = ["commitLogOffset", "body"]


def order_lines(rnd: random.Random) -> list[bytes]:
    """Order events as JSON lines, bodies are made of."""
    return [json.dumps({"orderId": rnd.randrange(10**9), "user": f"user-{rnd.randrange(10**5)}",
                        "amount": round(rnd.random() * 1000, 2), "currency": rnd.choice(["EUR", "USD"]),
                        "items": [{"sku": f"SKU{rnd.randrange(10**6)}", "qty": rnd.randrange(1, 5)}
                                  for _ in range(rnd.randrange(1, 6))]}).encode() for _ in range(20_000)]


def write_store(path: Path) -> int:
    """The store, and the total size of its bodies as sent."""
    rnd = random.Random(17)
    lines = order_lines(rnd)
    sent = 0
    with StoreWriter(path, segment_size=64 << 20, seed=1) as writer:
        for i in range(RECORDS):
            body = b"\n".join(rnd.choices(lines, k=200))[: rnd.randrange(4096, 32768)]
            sent += len(body)
            writer.append(MessageSpec("OrderEvents", body, keys=f"order-{i}", compression=COMPRESSION_ZLIB))
    return sent


def scan(store: Store) -> tuple[float, float, str]:
    """Best wall and CPU seconds of three scans, and a digest of the bodies read."""
    best_wall, best_cpu, digest = float("inf"), float("inf"), ""
    for _ in range(3):
        wall, cpu = time.perf_counter(), time.process_time()
        sha = hashlib.sha256()
        rows = 0
        for batch in store.scan(columns=COLUMNS):
            for buffer in batch.column("body").buffers()[1:]:
                sha.update(buffer)
            rows += batch.num_rows
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
        assert rows == RECORDS
        digest = sha.hexdigest()
    return best_wall, best_cpu, digest


def test_bench_inflate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    began = time.perf_counter()
    sent = write_store(tmp_path / "store")
    stored = sum(f.stat().st_size for f in (tmp_path / "store" / "commitlog").iterdir())
    print(f"\n{RECORDS} records, {sent / 2**20:.0f} MiB of bodies in {stored / 2**20:.0f} MiB of commit log "
          f"(written in {time.perf_counter() - began:.0f}s); pool of {THREADS} threads, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    Store.open(tmp_path / "store").read_offsets([0], COLUMNS)  # compile or load the kernels
    fast = compression._isal_zlib
    assert fast is not None, "python-isal is a dependency"
    results: dict[tuple[str, int], tuple[float, float]] = {}
    digests = set()
    for inflater in ("zlib", "isal"):
        monkeypatch.setattr(compression, "_isal_zlib", fast if inflater == "isal" else None)
        for threads in (1, THREADS):
            wall, cpu, digest = scan(Store.open(tmp_path / "store", decompress_threads=threads))
            results[(inflater, threads)] = (wall, cpu)
            digests.add(digest)
    with Store.open(tmp_path / "store") as store:
        floor = min(_timed(lambda s=store: sum(b.num_rows for b in s.scan(columns=COLUMNS, decompress=False)))
                    for _ in range(3))
    assert len(digests) == 1, "every configuration must read the same bodies"
    base = results[("zlib", 1)][0]
    base_cpu = results[("zlib", 1)][1]
    print(f"scan without decompressing (floor): {floor * 1000:6.0f} ms wall")
    for (inflater, threads), (wall, cpu) in results.items():
        print(f"{inflater:4} {threads} thread(s): {wall:6.2f}s wall {cpu:6.2f}s CPU, "
              f"{sent / wall / 2**20:6.0f} MiB/s of bodies, {RECORDS / wall:7.0f} records/s; against zlib "
              f"on 1 thread: {base / wall:4.2f}x wall, {base_cpu / cpu:4.2f}x CPU")


def _timed(work: object) -> float:
    began = time.perf_counter()
    work()  # type: ignore[operator]
    return time.perf_counter() - began
