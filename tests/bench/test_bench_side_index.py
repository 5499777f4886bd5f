"""Key-query bytes read with the side index (issue 9 item 3): a demo store, a ROLLBACK-heavy store and
that store with its newest index file deleted (what abnormal recovery does, apache/rocketmq#8007).

Run: `python3 -m pytest -m bench -s -p no:cacheprovider tests/bench/test_bench_side_index.py`.
Stores are written once under ~/.cache/rmqstore/bench-side (override: RMQSTORE_BENCH_DIR); the demo
store of the engines benchmark (~/.cache/rmqstore/bench-engines/<bytes>/store) is reused when it
exists. Size of each store: RMQSTORE_BENCH_SIZE (default 300MB). Caches (coverage, side index) start
empty in each run (tests/conftest.py), so the first query pays the build. Per store and key it
prints the commit-log and index-file bytes of the first query (building the side index) and of a
query on a fresh Store once it exists; it asserts the latter reads < 1% of the log.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.side_index_stores import (
    bytes_read_per_file,
    delete_index_file,
    log_bytes,
    write_keyed_store,
)
from rmqstore.cli.options import parse_size
from rmqstore.plan.lookup import find_by_key
from rmqstore.store import Store

pytestmark = pytest.mark.bench

STORE_BYTES = parse_size(os.environ.get("RMQSTORE_BENCH_SIZE", "300MB"))
CACHE = Path.home() / ".cache" / "rmqstore"
BENCH_DIR = Path(os.environ.get("RMQSTORE_BENCH_DIR", CACHE / "bench-side")) / str(STORE_BYTES)
ENGINES_DEMO = CACHE / "bench-engines" / str(STORE_BYTES)
RECORD_BYTES = 780
"""About the stored size of a `write_keyed_store` record (bodies 300-900 bytes)."""


def _once(directory: Path, write: Callable[[Path], None]) -> Path:
    if not (directory / "store.done").exists():
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        write(directory / "store")
        (directory / "store.done").write_text("ok")
    return directory / "store"


def _demo() -> Path:
    if (ENGINES_DEMO / "store.done").exists():
        return ENGINES_DEMO / "store"
    from rmqstore.writer.demo import create_demo_store

    return _once(BENCH_DIR / "demo", lambda path: create_demo_store(path, target_bytes=STORE_BYTES, seed=11))


def _rollback_heavy() -> Path:
    """Every 30th record a ROLLBACK (3.3%), broker-like segments, index files of 300k entries."""
    records = STORE_BYTES // RECORD_BYTES
    return _once(BENCH_DIR / "rollback", lambda path: write_keyed_store(
        path, records, segment_size=64 << 20, index_entries=300_000))


def _deleted_index_file() -> Path:
    def write(path: Path) -> None:
        shutil.copytree(_rollback_heavy(), path)
        delete_index_file(path, -1)

    return _once(BENCH_DIR / "deleted-index", write)


def _demo_keys(store: Path) -> list[str]:
    """A key of a ROLLBACK record and a key from the middle of the log."""
    with Store.open(store) as s:
        keys = []
        for start, end in s.unindexed_ranges():
            rows = next(s.scan(start, end, ["keys"])).column("keys").to_pylist()
            if rows and rows[0]:
                keys.append(rows[0][0])
                break
        middle = (s.min_offset + s.max_offset) // 2
        batch = next(s.scan(middle, middle + (1 << 20), ["keys"]))
        keys.append(next(k for k in batch.column("keys").to_pylist() if k)[0])
    return keys


def _query(store: Path, key: str) -> dict[str, object]:
    """Bytes and time of find_by_key on a fresh Store (after finding its valid end)."""
    with Store.open(store) as s:
        size = s.max_offset - s.min_offset
        with bytes_read_per_file() as counted:
            start = time.perf_counter()
            found = find_by_key(s, key)
            seconds = time.perf_counter() - start
            built = s.side_index().note is not None
    index = sum(n for path, n in counted.items() if "/index/" in path)
    return {"log_bytes": log_bytes(counted), "log_share": round(log_bytes(counted) / size, 5),
            "index_file_bytes": index, "hits": len(found), "seconds": round(seconds, 3), "built": built,
            "log_size": size}


@pytest.mark.parametrize("kind", ["demo", "rollback-heavy", "deleted-index-file"])
def test_key_query_bytes(kind: str) -> None:
    stores = {"demo": _demo, "rollback-heavy": _rollback_heavy, "deleted-index-file": _deleted_index_file}
    store = stores[kind]()
    keys = _demo_keys(store) if kind == "demo" else ["k7", f"k{STORE_BYTES // RECORD_BYTES - 2}"]
    for key in keys:
        first, again = _query(store, key), _query(store, key)
        print(json.dumps({"store": kind, "key": key, "first": first, "side_index_exists": again}))
        assert again["hits"] == first["hits"] > 0 and not again["built"]
        assert again["log_share"] < 0.01
