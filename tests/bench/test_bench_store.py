"""Store benchmarks: key lookups, index probes, seek_time and small time-window scans on a demo store.

Run: `python3 -m pytest -m bench -s tests/bench/test_bench_store.py`. Uses the Spark benchmark's store
(~/.cache/rmqstore/bench-spark/store, override: RMQSTORE_BENCH_DIR) when it exists, else writes a
smaller demo store once under ~/.cache/rmqstore/bench-store. Stores are only read. Times are
reported next to a baseline measured in the same run; only byte counts (from `store.stats`) are
asserted.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from rmqstore.format.indexfile import index_key
from rmqstore.format.javahash import index_key_hash
from rmqstore.plan.lookup import find_by_key
from rmqstore.store import Store
from rmqstore.store.commitlog import LOCAL_WINDOW

pytestmark = pytest.mark.bench

CACHE = Path.home() / ".cache" / "rmqstore"
SPARK_BENCH_DIR = Path(os.environ.get("RMQSTORE_BENCH_DIR", CACHE / "bench-spark"))
OWN_BENCH_DIR = CACHE / "bench-store"
OWN_STORE_BYTES = 512_000_000
WINDOW_MS = 60_000


def _store_path() -> Path:
    for directory in (SPARK_BENCH_DIR, OWN_BENCH_DIR):
        if (directory / "store.done").exists():
            return directory / "store"
    from rmqstore.writer.demo import create_demo_store

    create_demo_store(OWN_BENCH_DIR / "store", target_bytes=OWN_STORE_BYTES, seed=11, overwrite=True)
    (OWN_BENCH_DIR / "store.done").write_text("ok")
    return OWN_BENCH_DIR / "store"


def _median_s(run: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@pytest.fixture(scope="module")
def store_path() -> Path:
    return _store_path()


@pytest.fixture(scope="module")
def sample(store_path: Path) -> dict[str, object]:
    """A key (and its topic) with a few hits, taken from the middle of the log, and the time span."""
    store = Store.open(store_path)
    middle = (store.min_offset + store.max_offset) // 2
    batch = next(store.scan(middle, middle + (1 << 20), ["topic", "keys", "storeTimestamp"]))
    row = next(r for r in batch.to_pylist() if r["keys"])
    times = [store.index_files[0].header.begin_timestamp, store.index_files[-1].header.end_timestamp]
    return {"key": row["keys"][0], "topic": row["topic"], "first_ms": times[0], "last_ms": times[1]}


def test_find_by_key(store_path: Path, sample: dict[str, object]) -> None:
    key = str(sample["key"])
    found = find_by_key(Store.open(store_path), key)
    assert found
    end_walk = _median_s(lambda: Store.open(store_path).max_offset)
    warm = _median_s(lambda: find_by_key(Store.open(store_path), key))
    same_store = Store.open(store_path)
    find_by_key(same_store, key)
    again = _median_s(lambda: find_by_key(same_store, key), repeat=20)
    cold = _fresh_process_lookup(store_path, key)
    print(f"\n[store] find_by_key({key!r}) on {len(same_store.index_files)} index file(s), "
          f"{len(same_store.topics())} topics: {len(found)} hit(s)")
    print(f"  fresh Store in a warm process : {warm * 1e3:8.1f} ms  (baseline: the valid-end walk of a "
          f"fresh Store alone {end_walk * 1e3:.1f} ms, ratio {warm / end_walk:.2f})")
    print(f"  same Store again              : {again * 1e3:8.2f} ms")
    print(f"  fresh process                 : import {cold['import_s']:.2f} s, open+index "
          f"{cold['open_index_s'] * 1e3:.1f} ms, valid end {cold['end_s'] * 1e3:.1f} ms, lookup "
          f"{cold['find_s'] * 1e3:.1f} ms; open->result {cold['total_s'] * 1e3:.1f} ms")


def _fresh_process_lookup(store_path: Path, key: str) -> dict[str, float]:
    script = f"""
import json, time
t0 = time.perf_counter()
from rmqstore.plan.lookup import find_by_key
from rmqstore.store import Store
t1 = time.perf_counter()
store = Store.open({str(store_path)!r})
store.index_files
t2 = time.perf_counter()
store.max_offset
t3 = time.perf_counter()
find_by_key(store, {key!r})
t4 = time.perf_counter()
print(json.dumps(dict(import_s=t1 - t0, open_index_s=t2 - t1, end_s=t3 - t2, find_s=t4 - t3,
                      total_s=t4 - t1)))
"""
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_index_probe_cost(store_path: Path, sample: dict[str, object]) -> None:
    store = Store.open(store_path)
    views = [store.index._views[i.path] for i in store.index_files if i.problem is None]
    topic = str(sample["topic"])
    hashes = [index_key_hash(index_key(topic, f"absent-{i}")) for i in range(20_000)]
    far = (1 << 62)

    def probe_all() -> None:
        for view in views:
            for key_hash in hashes:
                view.candidates_for_hash(key_hash, -far, far)

    def hash_all() -> None:
        for i in range(len(hashes)):
            index_key_hash(index_key(topic, f"absent-{i}"))

    probes = len(views) * len(hashes)
    per_probe = _median_s(probe_all, repeat=3) / probes
    per_hash = _median_s(hash_all, repeat=3) / len(hashes)
    print(f"\n[store] index probe, absent key: {per_probe * 1e6:.2f} us per file (baseline: the key's Java "
          f"hash, computed once per topic, {per_hash * 1e6:.2f} us; ratio {per_probe / per_hash:.2f})")


def test_seek_time_reads_little(store_path: Path, sample: dict[str, object]) -> None:
    """Once the log's time summary is cached (one walk of the store times, see store.timeline)."""
    Store.open(store_path).seek_time(0)
    store = Store.open(store_path)
    _ = store.max_offset
    first_ms, last_ms = int(sample["first_ms"]), int(sample["last_ms"])
    targets = [first_ms + (last_ms - first_ms) * i // 7 + 123 for i in range(1, 7)]
    read, spent = [], []
    for ts in targets:
        store.stats.reset()
        start = time.perf_counter()
        store.seek_time(ts)
        spent.append(time.perf_counter() - start)
        read.append(store.stats.bytes_read)
    print(f"\n[store] seek_time over {(last_ms - first_ms) / 3.6e6:.1f} h of log: median "
          f"{statistics.median(read) / 1e3:.0f} KB read (max {max(read) / 1e3:.0f} KB; baseline: one "
          f"forward decoder window {LOCAL_WINDOW / 1e6:.0f} MB), {statistics.median(spent) * 1e3:.1f} ms")
    assert max(read) < LOCAL_WINDOW // 16


def test_one_minute_scan_reads_its_own_bytes(store_path: Path, sample: dict[str, object]) -> None:
    store = Store.open(store_path)
    _ = store.max_offset
    ts = (int(sample["first_ms"]) + int(sample["last_ms"])) // 2
    lo, hi = store.seek_time(ts), store.seek_time(ts + WINDOW_MS)
    store.stats.reset()
    record_bytes = rows = 0
    for batch in store.scan(lo, hi, ["storeSize"]):
        record_bytes += pc.sum(pc.cast(batch.column("storeSize"), pa.int64())).as_py() or 0
        rows += batch.num_rows
    ratio = store.stats.bytes_read / record_bytes
    print(f"\n[store] scan of a 1-minute window: {rows} records, {record_bytes / 1e6:.2f} MB of records, "
          f"{store.stats.bytes_read / 1e6:.2f} MB read (ratio {ratio:.3f})")
    assert ratio < 2
