"""Spark benchmarks on a >= 2 GB demo store (`pytest -m bench tests/bench/test_bench_spark.py -s`).

The store is created once under ~/.cache/rmqstore/bench-spark (override: RMQSTORE_BENCH_DIR),
with the Arrow "ceiling" copy of its rows next to it. Targets (printed, and asserted as ratios
against baselines measured in the same run):
(a) full scan through the rmqstore source >= 70% of the throughput of a trivial Python source
    yielding equivalent pre-built Arrow batches;
(b) `WHERE key = ...` >= 100x faster than the same query with pushdown off, and within 2x of a
    1-row query on the trivial source;
(c) a 1-minute storeTimestamp window out of hours reads at most 2x that window's bytes.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark import cloudpickle
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from rmqstore.plan.tasks import split_spans
from rmqstore.spark import session
from rmqstore.spark.schema import output_arrow_schema, table_schema
from rmqstore.store import Store

pytestmark = pytest.mark.bench

BENCH_DIR = Path(os.environ.get("RMQSTORE_BENCH_DIR", Path.home() / ".cache" / "rmqstore" / "bench-spark"))
STORE_BYTES = 2_200_000_000
PARTITION_BYTES = 256 * 1024 * 1024


def _store() -> Path:
    path = BENCH_DIR / "store"
    if not (BENCH_DIR / "store.done").exists():
        from rmqstore.writer.demo import create_demo_store

        create_demo_store(path, target_bytes=STORE_BYTES, seed=11, overwrite=True)
        (BENCH_DIR / "store.done").write_text("ok")
    return path


def _ceiling_files(store: Path) -> list[str]:
    """The store's rows as Arrow IPC files, one per scan partition (the pre-built batches)."""
    directory = BENCH_DIR / "ceiling"
    done = directory / "done.json"
    if done.exists():
        return json.loads(done.read_text())
    directory.mkdir(parents=True, exist_ok=True)
    target = output_arrow_schema(table_schema())
    files = []
    with Store.open(str(store)) as opened:
        for i, (start, end) in enumerate(split_spans(opened.segment_spans(), PARTITION_BYTES)):
            name = str(directory / f"part-{i:04d}.arrow")
            with pa.OSFile(name, "wb") as sink, pa.ipc.new_file(sink, target) as writer:
                for batch in opened.scan(start, end):
                    arrays = [*batch.columns, pa.array([str(store)] * batch.num_rows, pa.string())]
                    writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=target))
            files.append(name)
    done.write_text(json.dumps(files))
    return files


class _CeilingReader(DataSourceReader):
    def __init__(self, files: list[str], rows: int | None) -> None:
        self.files = files
        self.rows = rows

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(f) for f in self.files]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        with pa.memory_map(partition.value) as source:
            reader = pa.ipc.open_file(source)
            for i in range(reader.num_record_batches):
                batch = reader.get_batch(i)
                if self.rows is not None:
                    yield batch.slice(0, self.rows)
                    return
                yield batch


class CeilingSource(DataSource):
    """Yields pre-built Arrow batches of the table (memory-mapped IPC files): the ceiling."""

    @classmethod
    def name(cls) -> str:
        return "rmqceiling"

    def schema(self):
        return table_schema()

    def reader(self, schema):
        rows = self.options.get("rows")
        return _CeilingReader(json.loads(self.options["files"]), int(rows) if rows else None)


@pytest.fixture(scope="module")
def bench() -> Iterator[tuple[SparkSession, Path, list[str]]]:
    store = _store()
    files = _ceiling_files(store)
    # The Python engine, measured against a Python source (JVM against Python: test_bench_engines.py).
    spark = session("local[2]", "rmqstore-bench", engine="python", spark__ui__enabled="false")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test module
    spark.dataSource.register(CeilingSource)
    yield spark, store, files
    spark.stop()


def _median_time(action: Callable[[], object], runs: int = 3) -> float:
    action()  # warm-up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        action()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _noop(df) -> None:
    df.write.format("noop").mode("overwrite").save()


def test_a_full_scan_vs_ceiling(bench: tuple[SparkSession, Path, list[str]]) -> None:
    spark, store, files = bench
    reader = spark.read.format("rmqstore").option("maxBytesPerPartition", str(PARTITION_BYTES))
    ours = _median_time(lambda: _noop(reader.load(str(store))), 2)
    ceiling = _median_time(lambda: _noop(spark.read.format("rmqceiling").option("files", json.dumps(files))
                                         .load()), 2)
    size = sum(s.size for s in Store.open(str(store)).segments)
    print(f"\n(a) full scan: rmqstore {ours:.2f}s ({size / ours / 1e6:.0f} MB/s), ceiling {ceiling:.2f}s, "
          f"ratio {ceiling / ours:.2f} (target >= 0.70)")
    assert ceiling / ours >= 0.70


def test_b_key_lookup(bench: tuple[SparkSession, Path, list[str]]) -> None:
    spark, store, files = bench
    key = "order-12345"  # an existing order key (the demo numbers orders from 0)

    def lookup(pushdown: str) -> Callable[[], object]:
        return lambda: spark.read.format("rmqstore").option("pushdown", pushdown).load(str(store)) \
            .where(F.col("key") == key).collect()

    found = lookup("true")()
    pushed = _median_time(lookup("true"), 5)
    full = _median_time(lookup("false"), 1)
    one_row = _median_time(lambda: spark.read.format("rmqceiling").option("files", json.dumps(files[:1]))
                           .option("rows", "1").load().collect(), 5)
    print(f"\n(b) key = {key!r} ({len(found)} rows): pushdown {pushed * 1000:.0f} ms, pushdown off "
          f"{full:.2f}s -> {full / pushed:.0f}x (target >= 100x); 1-row trivial query "
          f"{one_row * 1000:.0f} ms -> {pushed / one_row:.2f}x (target <= 2x)")
    assert full / pushed >= 100
    assert pushed / one_row <= 2


def test_c_time_window_bytes(bench: tuple[SparkSession, Path, list[str]], tmp_path: Path) -> None:
    spark, store, _ = bench
    first = spark.read.format("rmqstore").load(str(store)).agg(F.min("storeTimestamp")).first()[0]
    lo, hi = first + timedelta(hours=2), first + timedelta(hours=2, minutes=1)
    rows = (spark.read.format("rmqstore").option("statsDir", str(tmp_path)).load(str(store))
            .where((F.col("storeTimestamp") >= lo) & (F.col("storeTimestamp") < hi))
            .select("storeSize").collect())
    window_bytes = sum(r.storeSize for r in rows)
    stats = [json.loads(line) for f in tmp_path.iterdir() for line in f.read_text().splitlines()]
    read_bytes = sum(s["bytes_read"] for s in stats if s["event"] == "read")
    planned = sum(s["range_bytes"] for s in stats if s["event"] == "plan")
    with Store.open(str(store)) as opened:
        log_bytes = opened.max_offset - opened.min_offset
    print(f"\n(c) 1-minute window: {len(rows)} rows, {window_bytes / 1e6:.1f} MB of records; read "
          f"{read_bytes / 1e6:.1f} MB -> {read_bytes / max(window_bytes, 1):.2f}x (target <= 2x); planned "
          f"commit-log range {planned / 1e6:.1f} MB -> {planned / max(window_bytes, 1):.2f}x; "
          f"log {log_bytes / 1e9:.2f} GB")
    assert rows
    assert read_bytes <= 2 * window_bytes
