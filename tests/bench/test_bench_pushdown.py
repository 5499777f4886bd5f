"""Point reads against scans, `topic = T` pushed against unpushed, and where a topic plan should scan
instead (`planner.DENSE_SHARE`) (issue 9 items 1 and 2).

Run: `python3 -m pytest -m bench -s -p no:cacheprovider tests/bench/test_bench_pushdown.py`
(store size: RMQSTORE_BENCH_RECORDS, default 200000 records of ~430 bytes per store). The stores are
written once under ~/.cache/rmqstore/bench-pushdown/<records>/<share> (override the directory:
RMQSTORE_BENCH_DIR): topic `T` holds 10%, 35% or 70% of the records, topic `Other` the rest, mixed at
random like independent producers. Stores are only read. Every number is a ratio against a baseline
measured in the same run (interleaved, median of a few warm runs): point reads against a scan of the
same store, records per second of CPU time; the Python engine's `topic = T` with pushdown against the
same query with `pushdown=false`; the queue path of a topic plan against its scan path (stores with
85% and 100% topics too). Only sanity is asserted (same rows both ways), never a timing.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rmqstore.spark import session
from rmqstore.store import Store
from rmqstore.writer.message import MessageSpec
from rmqstore.writer.store_writer import StoreWriter

pytestmark = pytest.mark.bench

RECORDS = int(os.environ.get("RMQSTORE_BENCH_RECORDS", "200000"))
BENCH_DIR = Path(os.environ.get("RMQSTORE_BENCH_DIR", Path.home() / ".cache" / "rmqstore" / "bench-pushdown"))
SHARES = (0.10, 0.35, 0.70)
TOPIC = "T"
RUNS = 5


def share_store(share: float, records: int = RECORDS) -> Path:
    """A store where topic T holds `share` of the records (written once, then only read)."""
    directory = BENCH_DIR / str(records) / f"{share:.2f}"
    if not (directory / "store.done").exists():
        rng = random.Random(int(share * 100))
        with StoreWriter(directory / "store", segment_size=64 << 20, seed=7, overwrite=True) as writer:
            writer.declare_topic(TOPIC, 4)
            writer.declare_topic("Other", 4)
            for i in range(records):
                topic = TOPIC if rng.random() < share else "Other"
                writer.append(MessageSpec(topic=topic, body=rng.randbytes(8) * rng.randint(20, 60),
                                          keys=f"order-{i}", tags="created"))
                if i % 1000 == 0:
                    writer.advance_clock(50)
        (directory / "store.done").write_text("ok")
    return directory / "store"


def _interleaved(measure: Callable[[], float], baseline: Callable[[], float],
                 runs: int = RUNS) -> tuple[float, float, float]:
    """Median seconds of `measure` and of `baseline`, run alternately after one warm-up each, and the
    median of the per-round ratios."""
    measure(), baseline()
    ours, theirs = [], []
    for _ in range(runs):
        ours.append(measure())
        theirs.append(baseline())
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    return statistics.median(ours), statistics.median(theirs), statistics.median(ratios)


def _cpu_s(action: Callable[[], object]) -> float:
    start = time.process_time()
    action()
    return time.process_time() - start


def _wall_s(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def test_point_reads_against_scan() -> None:
    path = str(share_store(0.35))
    with Store.open(path) as store:
        end = store.log_end
        offsets = np.concatenate([b.column(0).to_numpy() for b in store.scan(columns=["commitLogOffset"])])

    def fresh() -> Store:  # a fresh Store per read, like a Spark task
        store = Store.open(path)
        store.log.end = end
        return store

    def scan() -> float:
        return _cpu_s(lambda: sum(b.num_rows for b in fresh().scan()))

    print(f"\n[point reads] {path}: {len(offsets):,} records; records/s of CPU time, all columns")
    print(f"{'selection':<28}{'points rec/s':>14}{'scan rec/s':>12}{'per record':>12}  target")
    rng = np.random.default_rng(3)
    for label, picked in (("every 2nd record (50%)", offsets[::2]),
                          ("random 10%", np.sort(rng.choice(offsets, len(offsets) // 10, replace=False))),
                          ("random 1%", np.sort(rng.choice(offsets, len(offsets) // 100, replace=False)))):
        def points(picked: np.ndarray = picked) -> float:
            return _cpu_s(lambda: sum(b.num_rows for b in fresh().read_offsets_batches(picked)))

        point_s, scan_s, _ = _interleaved(points, scan)
        point_rate, scan_rate = len(picked) / point_s, len(offsets) / scan_s
        print(f"{label:<28}{point_rate:>14,.0f}{scan_rate:>12,.0f}{point_rate / scan_rate:>11.2f}x  >= 0.8x")
        assert fresh().read_offsets(picked, ["commitLogOffset"]).num_rows == len(picked)


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    spark = session("local[2]", "rmqstore-bench-pushdown", engine="python", spark__ui__enabled="false",
                    spark__ui__showConsoleProgress="false")
    yield spark
    spark.stop()


def _topic_query(spark: SparkSession, path: Path, pushdown: bool) -> DataFrame:
    frame = spark.read.format("rmqstore_python").option("pushdown", str(pushdown).lower()).load(str(path))
    return frame.where(F.col("topic") == TOPIC)


def _tree_cpu_s() -> float:
    """CPU seconds used so far by this process and its descendants (Spark's JVM and its Python
    workers, those that ended included once their parent waited for them), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    parent, used = {}, {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # not a process, or one that just ended
        parent[int(entry)] = int(fields[1])
        used[int(entry)] = sum(int(f) for f in fields[11:15]) / ticks  # utime stime cutime cstime
    tree, grew = {os.getpid()}, True
    while grew:
        more = {pid for pid, ppid in parent.items() if ppid in tree} - tree
        tree, grew = tree | more, bool(more)
    return sum(used[pid] for pid in tree if pid in used)


def test_topic_pushdown_against_unpushed(spark: SparkSession) -> None:
    """Whole-query seconds, and the same less a query's fixed cost (the pushed query for a topic that
    has no records: planning in a Python worker, job start), which dominates on small stores; and the
    CPU seconds of the JVM and Python workers per query, which a machine shared with other work
    inflates less than the wall time."""
    print(f"\n[topic = {TOPIC!r}] Python engine, local[2], all columns written to noop; "
          f"pushdown against pushdown=false; {RECORDS:,} records per store")
    print(f"{'share':<8}{'rows':>10}{'pushed s':>10}{'unpushed s':>12}{'fixed s':>9}{'ratio':>8}"
          f"{'less fixed':>12}{'cpu ratio':>11}  target (share + 0.1)")
    for share in SHARES:
        path = share_store(share)
        pushed, plain = (_topic_query(spark, path, flag) for flag in (True, False))
        rows = pushed.count()
        assert rows == plain.count() and rows
        absent = spark.read.format("rmqstore_python").load(str(path)).where(F.col("topic") == "absent")

        def run(frame: DataFrame, cpu: list[float]) -> Callable[[], float]:
            def once() -> float:
                before = _tree_cpu_s()
                wall = _wall_s(lambda: frame.write.format("noop").mode("overwrite").save())
                cpu.append(_tree_cpu_s() - before)
                return wall
            return once

        pushed_cpu: list[float] = []
        plain_cpu: list[float] = []
        pushed_s, plain_s, ratio = _interleaved(run(pushed, pushed_cpu), run(plain, plain_cpu), runs=3)
        fixed_cpu: list[float] = []
        fixed_s = statistics.median(run(absent, fixed_cpu)() for _ in range(3))
        marginal = (pushed_s - fixed_s) / (plain_s - fixed_s)
        cpu_ratio = statistics.median(a / b for a, b in zip(pushed_cpu[1:], plain_cpu[1:], strict=True))
        cpu = [statistics.median(c) for c in (pushed_cpu[1:], plain_cpu[1:], fixed_cpu)]
        print(f"{share:<8.0%}{rows:>10,}{pushed_s:>10.2f}{plain_s:>12.2f}{fixed_s:>9.2f}{ratio:>8.2f}"
              f"{marginal:>12.2f}{cpu_ratio:>11.2f}  <= {share + 0.1:.2f}   cpu s: pushed {cpu[0]:.2f}, "
              f"unpushed {cpu[1]:.2f}, fixed {cpu[2]:.2f}")


DENSE_SHARES = (0.35, 0.70, 0.85, 1.00)


def test_dense_share_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where scanning and filtering beats reading a topic's records by offset (planner.DENSE_SHARE):
    `topic = T` planned, read and confirmed in one process, CPU time, a fresh Store per task like
    Spark; the queue path (DENSE_SHARE above 1) against the scan path (DENSE_SHARE 0). Both return
    the same rows, so what Spark does with them afterwards costs the same."""
    from rmqstore.format.table import COLUMN_NAMES
    from rmqstore.plan import planner
    from rmqstore.plan.confirm import confirm
    from rmqstore.plan.execute import ReadSettings, run_task
    from rmqstore.plan.predicates import Compare

    wanted = [Compare("topic", "=", TOPIC)]

    def query(path: str, dense: float) -> Callable[[], float]:
        def read() -> int:
            monkeypatch.setattr(planner, "DENSE_SHARE", dense)
            with Store.open(path) as store:
                plan = planner.plan_read([store], [wanted], planner.PlanSettings())
                end = store.log.end
            rows = 0
            for task in plan.tasks:
                with Store.open(path) as fresh:
                    fresh.log.end = end
                    rows += sum(confirm(b, wanted).num_rows
                                for b in run_task(task, fresh, COLUMN_NAMES, ReadSettings()))
            return rows
        return lambda: _cpu_s(read)

    print(f"\n[dense share] queue path against scan path, CPU time; {RECORDS:,} records per store")
    print(f"{'share':<8}{'queues s':>10}{'scan s':>9}{'ratio':>8}")
    for share in DENSE_SHARES:
        path = str(share_store(share))
        queue_s, scan_s, ratio = _interleaved(query(path, 2.0), query(path, 0.0))
        print(f"{share:<8.0%}{queue_s:>10.3f}{scan_s:>9.3f}{ratio:>8.2f}")
