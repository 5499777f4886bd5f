"""Remote benchmark: what queries download from a demo store on S3 (a moto server on loopback).

Run: `python3 -m pytest -m bench -s tests/bench/test_bench_remote.py`. Writes a ~200 MB demo store
(broker index geometry: one 420 MB index file) once under ~/.cache/rmqstore/bench-remote (size:
RMQSTORE_BENCH_REMOTE_BYTES), uploads it to the loopback S3 server and runs each query the way the
Python engine does in Spark: planned on a driver Store, each task on a pickled copy (an executor),
rows confirmed. Every ranged request is counted at the io layer. Reported: bytes downloaded, requests
and seconds, next to the full scan without pushdown in the same run; cold = empty rmqstore cache
directory and a fresh process's state, warm = the same query again.
"""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path

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
STORE_BYTES = int(os.environ.get("RMQSTORE_BENCH_REMOTE_BYTES", 200_000_000))


@pytest.fixture(scope="module")
def store_path() -> Path:
    return cached_demo_store(BENCH_DIR / str(STORE_BYTES), STORE_BYTES, seed=17)


class Counted:
    """Bytes and requests of every `ArrowFile` ranged request while installed."""

    def __init__(self) -> None:
        self.bytes = self.requests = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        fetch = remote.ArrowFile._fetch

        def counted(file: remote.ArrowFile, offset: int, length: int):
            data = fetch(file, offset, length)
            self.bytes += len(data)
            self.requests += 1
            return data

        monkeypatch.setattr(remote.ArrowFile, "_fetch", counted)


def _query(uri: str, predicates: list[Predicate], counted: Counted) -> dict[str, float]:
    """Plan on a driver Store, run every task on a pickled copy; what was downloaded and the rows."""
    counted.bytes = counted.requests = 0
    start = time.perf_counter()
    driver = Store.open(uri)
    plan = plan_read([driver], [predicates], PlanSettings())
    rows = 0
    for task in plan.tasks:
        executor = pickle.loads(pickle.dumps(driver))
        for batch in run_task(task, executor, ["commitLogOffset", "topic", "keys"], ReadSettings()):
            rows += confirm(batch, predicates).num_rows
    return {"rows": rows, "mb": counted.bytes / 1e6, "requests": counted.requests,
            "s": time.perf_counter() - start, "access": plan.access[0]}


def test_remote_query_downloads(store_path, s3_server, tmp_path, monkeypatch):
    endpoint, _, upload = s3_server
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    upload(str(store_path), "bench/store")
    uri = f"s3://bench/store?endpoint_override={endpoint}&scheme=http&region=us-east-1"
    local = Store.open(store_path)
    middle = (local.min_offset + local.max_offset) // 2
    orders = [k for row in next(local.scan(middle, middle + (4 << 20), ["keys"])).to_pylist()
              for k in row["keys"] or () if k.startswith("order-")]
    key = orders[0]
    counted = Counted()
    counted.install(monkeypatch)
    index_module._REMOTE_VERDICTS.clear()  # a fresh process's state
    results = {
        "key = (cold)": _query(uri, [Compare("key", "=", key)], counted),
        "key = (warm)": _query(uri, [Compare("key", "=", key)], counted),
        "key IN 200 (warm)": _query(uri, [InSet("key", tuple(orders[:200]))], counted),
        "topic = PaymentTopic": _query(uri, [Compare("topic", "=", "PaymentTopic")], counted),
        "topic = PaymentTopic (again)": _query(uri, [Compare("topic", "=", "PaymentTopic")], counted),
        "full scan, no pushdown": _query(uri, [], counted),
    }
    scan = results["full scan, no pushdown"]
    log_mb = (local.max_offset - local.min_offset) / 1e6
    index_mb = sum(info.size for info in local.index_files) / 1e6
    print(f"\n[remote] demo store on loopback S3: log {log_mb:.0f} MB, {len(local.index_files)} index "
          f"file(s) {index_mb:.0f} MB, key {key!r}")
    for name, r in results.items():
        print(f"  {name:30s} {r['mb']:9.2f} MB {r['requests']:6d} requests {r['s']:7.2f} s "
              f"{r['rows']:8d} rows  ({r['mb'] / scan['mb']:.4f} of the scan's bytes, {r['access']})")
    assert results["key = (cold)"]["rows"] == results["key = (warm)"]["rows"] >= 1
    assert results["key IN 200 (warm)"]["rows"] >= 200
    assert results["topic = PaymentTopic"]["rows"] == results["topic = PaymentTopic (again)"]["rows"] > 0
    assert results["key = (warm)"]["mb"] < 4
    assert max(r["mb"] for name, r in results.items() if name != "full scan, no pushdown") < scan["mb"]
