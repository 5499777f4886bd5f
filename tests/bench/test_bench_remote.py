"""Remote benchmark: what queries download from a demo store on S3 (a moto server on loopback).

Run: `python3 -m pytest -m bench -s tests/bench/test_bench_remote.py`. Writes a ~200 MB demo store
(broker index geometry: one 420 MB index file) once under ~/.cache/rmqstore/bench-remote (size:
RMQSTORE_BENCH_REMOTE_BYTES), uploads it to a moto S3 server on loopback (own process) and runs
each query the way the Python engine does in Spark: planned on a driver Store, each task on a
pickled copy (an executor), rows confirmed. Every ranged request is counted at the io layer.
Reported: bytes downloaded, requests and seconds, next to the full scan without pushdown in the
same run; cold = empty rmqstore cache directory and a fresh process's state (what a key lookup's
first plan builds: the valid-end walk of the active segment, the consume queues' coverage, the side
index), new process = the cache directory the cold query filled but a fresh process's state (a second
Spark session or an executor), warm = the same query again. A cold query's bytes are also split by
file kind.
"""

from __future__ import annotations

import os
import pickle
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pytest
from bench_stores import cached_demo_store

from rmqstore.cachedir import CACHE_DIR_ENV
from rmqstore.io import remote
from rmqstore.plan.confirm import confirm
from rmqstore.plan.execute import ReadSettings, run_task
from rmqstore.plan.planner import PlanSettings, plan_read
from rmqstore.plan.predicates import Compare, InSet, Predicate
from rmqstore.store import Store
from rmqstore.store import index as index_module

pytestmark = pytest.mark.bench

BENCH_DIR = Path.home() / ".cache" / "rmqstore" / "bench-remote"
COLUMNS = ["commitLogOffset", "topic", "key", "keys", "msgId", "storeTimestamp"]
"""Decoded: the row's identity plus what the predicates are confirmed on."""
STORE_BYTES = int(os.environ.get("RMQSTORE_BENCH_REMOTE_BYTES", 200_000_000))


@pytest.fixture(scope="module")
def store_path() -> Path:
    return cached_demo_store(BENCH_DIR / str(STORE_BYTES), STORE_BYTES, seed=17)


class Counted:
    """Bytes and requests of every `ArrowFile` ranged request while installed."""

    def __init__(self) -> None:
        self.bytes = self.requests = 0
        self.by_kind: dict[str, int] = {}
        """Bytes per store directory (commitlog, consumequeue, index, config)."""

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        fetch = remote.ArrowFile._fetch

        def counted(file: remote.ArrowFile, offset: int, length: int):
            data = fetch(file, offset, length)
            self.bytes += len(data)
            self.requests += 1
            kind = file.path.split("/")[2] if file.path.count("/") > 2 else file.path
            self.by_kind[kind] = self.by_kind.get(kind, 0) + len(data)
            return data

        monkeypatch.setattr(remote.ArrowFile, "_fetch", counted)


def _query(s3: pafs.S3FileSystem, predicates: list[Predicate], counted: Counted) -> dict[str, float]:
    """Plan on a driver Store, run every task on a pickled copy; what was downloaded and the rows."""
    counted.bytes = counted.requests = 0
    counted.by_kind = {}
    start = time.perf_counter()
    driver = Store.open("bench/store", filesystem=s3)
    plan = plan_read([driver], [predicates], PlanSettings())
    rows = 0
    for task in plan.tasks:
        executor = pickle.loads(pickle.dumps(driver))
        for batch in run_task(task, executor, COLUMNS, ReadSettings()):
            rows += confirm(batch, predicates).num_rows
    result = {"rows": rows, "mb": counted.bytes / 1e6, "requests": counted.requests,
              "s": time.perf_counter() - start, "access": plan.access[0],
              "by_kind": {kind: round(n / 1e6, 2) for kind, n in sorted(counted.by_kind.items())}}
    print(f"  ({predicates}: {result})", flush=True)
    return result


@pytest.fixture(scope="module")
def s3_process() -> Iterator[str]:
    """A moto S3 server in its own process (the in-process one shares the GIL with the reads and
    copies a whole object per ranged GET: slow for the 420 MB index file); its "host:port"."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait()


def _upload(endpoint: str, local_root: Path, bucket: str, prefix: str) -> None:
    import boto3

    client = boto3.client("s3", endpoint_url=f"http://{endpoint}", aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    client.create_bucket(Bucket=bucket)
    for path in sorted(p for p in local_root.rglob("*") if p.is_file()):
        client.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(local_root).as_posix()}")


@pytest.fixture(scope="module")
def s3(store_path, s3_process) -> pafs.S3FileSystem:
    """The S3 file system holding the demo store at bench/store."""
    start = time.perf_counter()
    _upload(s3_process, store_path, "bench", "store")
    print(f"\n  (uploaded in {time.perf_counter() - start:.0f} s)", flush=True)
    return pafs.S3FileSystem(access_key="testing", secret_key="testing", endpoint_override=s3_process,
                             scheme="http", region="us-east-1", request_timeout=300, connect_timeout=30)


def _report(results: dict[str, dict], local: Store) -> None:
    scan = results["full scan, no pushdown"]
    log_mb = (local.max_offset - local.min_offset) / 1e6
    index_mb = sum(info.size for info in local.index_files) / 1e6
    print(f"\n[remote] demo store on loopback S3: log {log_mb:.0f} MB, {len(local.index_files)} index "
          f"file(s) {index_mb:.0f} MB")
    for name, r in results.items():
        print(f"  {name:30s} {r['mb']:9.2f} MB {r['requests']:6d} requests {r['s']:7.2f} s "
              f"{r['rows']:8d} rows  ({r['mb'] / scan['mb']:.4f} of the scan's bytes, {r['access']}) "
              f"{r['by_kind']}")


@pytest.mark.timeout(3600)
def test_remote_query_downloads(store_path, s3, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    local = Store.open(store_path)
    middle = (local.min_offset + local.max_offset) // 2
    orders = [row["key"] for row in next(local.scan(middle, middle + (4 << 20), ["key"])).to_pylist()
              if (row["key"] or "").startswith("order-") and " " not in row["key"]]  # whole KEYS strings
    key = orders[0]
    first = next(local.scan(middle, middle + (1 << 20), ["msgId"]))
    msg_id = first.column("msgId")[0].as_py()
    counted = Counted()
    counted.install(monkeypatch)
    index_module._REMOTE_VERDICTS.clear()  # a fresh process's state
    results = {"key = (cold)": _query(s3, [Compare("key", "=", key)], counted)}
    index_module._REMOTE_VERDICTS.clear()
    results["key = (new process)"] = _query(s3, [Compare("key", "=", orders[1])], counted)
    results.update({
        "key = (warm)": _query(s3, [Compare("key", "=", key)], counted),
        "key IN 200": _query(s3, [InSet("key", tuple(orders[:200]))], counted),
        "msgId =": _query(s3, [Compare("msgId", "=", msg_id)], counted),
        "topic = PaymentTopic": _query(s3, [Compare("topic", "=", "PaymentTopic")], counted),
        "topic = PaymentTopic (again)": _query(s3, [Compare("topic", "=", "PaymentTopic")], counted),
        "full scan, no pushdown": _query(s3, [], counted),
    })
    _report(results, local)
    print(f"  key {key!r}")
    scan = results["full scan, no pushdown"]
    assert results["key = (cold)"]["rows"] == results["key = (warm)"]["rows"] >= 1
    assert results["key IN 200"]["rows"] >= 200
    assert results["msgId ="]["rows"] == 1
    assert results["topic = PaymentTopic"]["rows"] == results["topic = PaymentTopic (again)"]["rows"] > 0
    assert results["key = (warm)"]["mb"] < 4
    assert results["key = (new process)"]["mb"] < 4
    assert max(r["mb"] for name, r in results.items() if name != "full scan, no pushdown") < scan["mb"]


@pytest.mark.timeout(3600)
def test_remote_time_window_downloads(store_path, s3, tmp_path, monkeypatch):
    """A first storeTimestamp window on a cold cache directory downloads no more than the scan (it scans
    the segments whose store times are not summarized, and summarizes them); the next windows, in this
    process or a new one, download bisections and the window."""
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    local = Store.open(store_path)
    middle = (local.min_offset + local.max_offset) // 2
    at_us = pc.cast(next(local.scan(middle, middle + (1 << 20), ["storeTimestamp"])).column("storeTimestamp"),
                    pa.int64())[0].as_py()

    def window(start_us: int) -> list[Predicate]:
        return [Compare("storeTimestamp", ">=", start_us),
                Compare("storeTimestamp", "<", start_us + 60_000_000)]

    counted = Counted()
    counted.install(monkeypatch)
    results = {"full scan, no pushdown": _query(s3, [], counted)}
    shutil.rmtree(tmp_path / "cache")  # both cold (the valid end walked again too)
    results.update({
        "storeTimestamp 60 s (cold)": _query(s3, window(at_us), counted),
        "storeTimestamp 60 s (again)": _query(s3, window(at_us), counted),
        "storeTimestamp 60 s (later)": _query(s3, window(at_us - 600_000_000), counted),
    })
    _report(results, local)
    scan = results["full scan, no pushdown"]
    assert results["storeTimestamp 60 s (cold)"]["rows"] == results["storeTimestamp 60 s (again)"]["rows"] > 0
    assert results["storeTimestamp 60 s (later)"]["rows"] > 0
    assert results["storeTimestamp 60 s (cold)"]["mb"] <= scan["mb"]
    assert max(results[f"storeTimestamp 60 s ({w})"]["mb"] for w in ("again", "later")) < scan["mb"] / 10
