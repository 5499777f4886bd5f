"""JVM engine against Python engine on one demo store, in one Spark session (issue 8's benchmark).

Run: `python3 -m pytest -m bench -s tests/bench/test_bench_engines.py -p no:cacheprovider`
(quick: `RMQSTORE_BENCH_SIZE=300MB ...`; default 2GB). The demo store is written once under
~/.cache/rmqstore/bench-engines/<bytes> (override the directory: RMQSTORE_BENCH_DIR) and only read.
The session loads the connector jar (`session(engine="jvm")`): the JVM engine is
`format(PROVIDER_CLASS)`, the Python engine `format("rmqstore_python")`. Each query is timed as the
median of a few warm runs after one warm-up; the table prints both engines' seconds, the ratio
python/jvm and the issue's target, and `spark.range(1).collect()` as the baseline of the key lookup.
Beside wall time, the CPU seconds of the session's processes (driver JVM, Python workers: /proc) per run
and their ratio: on a loaded machine wall time follows the scheduler more than the engine (a sub-second
query's CPU is rough: an exited worker counts once it is reaped).
`test_streaming_catch_up` times a stream from earliest to the end of the store on each engine
(Trigger.AvailableNow, noop sink; `RMQSTORE_BENCH_MAX_OFFSETS=<n>` for batches of n messages).
Only sanity is asserted (both engines return the same count), never a timing.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from bench_stores import cached_demo_store, sample_order_event
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rmqstore.cli.options import parse_size
from rmqstore.spark import session
from rmqstore.spark.engine import has_connector
from rmqstore.spark.jar import PROVIDER_CLASS
from rmqstore.store import Store

pytestmark = pytest.mark.bench

STORE_BYTES = parse_size(os.environ.get("RMQSTORE_BENCH_SIZE", "2GB"))
BENCH_DIR = Path(os.environ.get("RMQSTORE_BENCH_DIR", Path.home() / ".cache" / "rmqstore" / "bench-engines"))
ENGINES = {"jvm": PROVIDER_CLASS, "python": "rmqstore_python"}
TOPIC = "PaymentTopic"  # the demo's ~10% topic (rmqstore.writer.demo._one_event)
WARM_RUNS = 3


def _store() -> Path:
    return cached_demo_store(BENCH_DIR / str(STORE_BYTES), STORE_BYTES, seed=11)


def _median_s(action: Callable[[], object], runs: int = WARM_RUNS) -> tuple[float, object]:
    """The median seconds of `runs` warm runs after one warm-up, and the warm-up's result."""
    (wall, _), result = _median_wall_cpu(action, runs)
    return wall, result


def _median_wall_cpu(action: Callable[[], object],
                     runs: int = WARM_RUNS) -> tuple[tuple[float, float], object]:
    """The median wall and CPU seconds (`_session_cpu_s`) of `runs` warm runs after one warm-up, and the
    warm-up's result."""
    result = action()
    walls, cpus = [], []
    for _ in range(runs):
        cpu, start = _session_cpu_s(), time.perf_counter()
        action()
        walls.append(time.perf_counter() - start)
        cpus.append(_session_cpu_s() - cpu)
    return (statistics.median(walls), statistics.median(cpus)), result


def _session_cpu_s() -> float:
    """User + system CPU seconds so far of this process's descendants alive now and of the children they
    reaped: the driver JVM and the Python workers it forked (Linux /proc)."""
    tick, total, todo = os.sysconf("SC_CLK_TCK"), 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                todo += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
            if pid != os.getpid():
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += sum(int(f) for f in fields[11:15]) / tick  # utime stime cutime cstime
        except OSError:  # the process ended meanwhile
            continue
    return total


@dataclass(frozen=True)
class Query:
    """One row of the table: what is run on each engine's DataFrame, and the issue's target."""

    name: str
    run: Callable[[DataFrame], object]
    target: str


@pytest.fixture(scope="module")
def bench() -> Iterator[tuple[SparkSession, Path]]:
    store = _store()
    spark = session("local[2]", "rmqstore-bench-engines", engine="jvm", spark__ui__enabled="false",
                    spark__ui__showConsoleProgress="false")
    assert has_connector(spark), "the JVM connector jar is not on the session's classpath"
    yield spark, store
    spark.stop()


def _noop(df: DataFrame) -> None:
    df.write.format("noop").mode("overwrite").save()


def test_engines(bench: tuple[SparkSession, Path]) -> None:
    spark, store = bench
    key, middle = sample_order_event(store)
    ts = F.col("storeTimestamp")
    window = (ts >= F.lit(middle)) & (ts < F.lit(middle + timedelta(minutes=1)))
    queries = [
        Query("full scan, all columns (noop)", _noop, ">= 3x"),
        Query("count()", lambda df: df.count(), ">= 10x"),
        Query(f"key = {key!r} collect()", lambda df: len(df.where(F.col("key") == key).collect()),
              "jvm <= 1.5x baseline"),
        Query("1-minute storeTimestamp window count", lambda df: df.where(window).count(), ""),
        Query(f"topic = {TOPIC!r} count", lambda df: df.where(F.col("topic") == TOPIC).count(), ""),
    ]
    frames = {name: spark.read.format(fmt).load(str(store)) for name, fmt in ENGINES.items()}
    baseline, _ = _median_s(lambda: spark.range(1).collect(), 5)
    with Store.open(str(store)) as opened:
        log_bytes = opened.max_offset - opened.min_offset
    print(f"\nstore {store}: {log_bytes / 1e9:.2f} GB of commit log; key {key!r}; window from {middle}")
    print(f"{'query':<40}{'jvm s':>9}{'python s':>10}{'py/jvm':>8}{'cpu py/jvm':>12}  {'rows':>11}  target")
    for query in queries:
        measured = {name: _median_wall_cpu(lambda df=df, run=query.run: run(df))
                    for name, df in frames.items()}
        ((jvm, jvm_cpu), jvm_rows), ((python, python_cpu), python_rows) = measured["jvm"], measured["python"]
        assert jvm_rows == python_rows, f"{query.name}: jvm {jvm_rows} rows, python {python_rows}"
        if query.run is not _noop:
            assert jvm_rows, f"{query.name}: no rows"
        extra = f" (jvm/baseline {jvm / baseline:.2f}x)" if query.target.endswith("baseline") else ""
        rows = "" if jvm_rows is None else f"{jvm_rows:,}"
        print(f"{query.name:<40}{jvm:>9.3f}{python:>10.3f}{python / jvm:>7.1f}x"
              f"{python_cpu / jvm_cpu:>11.1f}x  {rows:>11}  {query.target}{extra}")
    print(f"{'baseline spark.range(1).collect()':<40}{baseline:>9.3f}")


def _catch_up_s(spark: SparkSession, fmt: str, store: Path, checkpoint: Path,
                options: dict[str, str]) -> tuple[float, int, int]:
    """Seconds of one stream from earliest to the end of the store (Trigger.AvailableNow into the noop
    sink, a new checkpoint), its micro-batches and rows."""
    started = time.perf_counter()
    query = (spark.readStream.format(fmt).options(**options).load(str(store)).writeStream.format("noop")
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    seconds = time.perf_counter() - started
    batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    return seconds, len(batches), sum(batches)


def test_streaming_catch_up(bench: tuple[SparkSession, Path], tmp_path: Path) -> None:
    """Catch-up rate of each engine's stream over the whole store: the median of WARM_RUNS runs after a
    warm-up, each on a new checkpoint; with RMQSTORE_BENCH_MAX_OFFSETS, in batches of that many."""
    spark, store = bench
    limit = os.environ.get("RMQSTORE_BENCH_MAX_OFFSETS")
    options = {"maxOffsetsPerTrigger": limit} if limit else {}
    with Store.open(str(store)) as opened:
        log_bytes = opened.max_offset - opened.min_offset
    print(f"\nstreaming catch-up over {log_bytes / 1e6:.0f} MB of commit log "
          f"(maxOffsetsPerTrigger={limit or 'none'})")
    print(f"{'engine':<8}{'s':>8}{'batches':>9}{'rows':>12}{'msg/s':>12}{'MB/s':>8}")
    rows_seen = set()
    for name, fmt in ENGINES.items():
        runs = [_catch_up_s(spark, fmt, store, tmp_path / f"{name}-{run}", options)
                for run in range(WARM_RUNS + 1)]
        seconds = statistics.median(r[0] for r in runs[1:])
        _, batches, rows = runs[-1]
        rows_seen.add(rows)
        print(f"{name:<8}{seconds:>8.2f}{batches:>9}{rows:>12,}{rows / seconds:>12,.0f}"
              f"{log_bytes / 1e6 / seconds:>8.1f}")
    assert len(rows_seen) == 1 and rows_seen.pop() > 0, "both engines must stream every message"
