"""One cold-then-warm measurement of one query on one engine, in a fresh driver (test_bench_growth.py).

Run as `python3 growth_probe.py '<json spec>'` (spec: store, summary, engine, query, cache); prints one
JSON line. The rmqstore cache directory is the spec's (fresh), set before Spark's JVM starts so the
JVM and the Python workers use it; compiled kernels (`NUMBA_CACHE_DIR`) are kept in `kernels/` beside
it, as they belong to the installation, not to a store (compiling them takes minutes on a busy machine).
The store's pages are dropped (`POSIX_FADV_DONTNEED` on every file)
just before the cold run; resident store bytes are counted with `fincore` right after it. CPU seconds
are those of the whole process tree (this driver, Spark's JVM, the Python workers); peak RSS is each
process's VmHWM. Wall times are also given as a ratio to `spark.range(1).collect()` in this process.
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

from rmqstore.writer.bulk import GROUP_LAG

_TICK = os.sysconf("SC_CLK_TCK")


def store_files(store: Path) -> list[Path]:
    return [p for p in store.rglob("*") if p.is_file()]


def drop_page_cache(store: Path) -> None:
    """Write back and drop every store file's cached pages, so the next read comes from disk."""
    for path in store_files(store):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def resident_bytes(store: Path) -> dict[str, int]:
    """Bytes of the store's files in the page cache (`fincore`), by top entry (commitlog, index, ...)."""
    files = [str(p) for p in store_files(store)]
    totals: dict[str, int] = {}
    for start in range(0, len(files), 999):
        command = ["fincore", "--bytes", "--raw", "--noheadings", "-oRES,FILE", *files[start : start + 999]]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            res, name = line.split(" ", 1)
            kind = Path(name).relative_to(store).parts[0]
            totals[kind] = totals.get(kind, 0) + int(res)
    return totals


def _tree(root: int) -> list[int]:
    """`root` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def tree_cpu_seconds(root: int) -> float:
    """User + system seconds of `root`'s process tree, including reaped children."""
    total = 0
    for pid in _tree(root):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])
    return total / _TICK


def peak_rss(pid: int) -> int:
    """VmHWM of a process in bytes (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def queries(summary: dict) -> dict[str, tuple[dict[str, str], Callable, Callable[[int], bool]]]:
    """name -> (extra reader options, what runs on the DataFrame, the sanity check of its result)."""
    from pyspark.sql import functions as F

    middle, records = summary["middle"], summary["records"]
    window_start = middle["store_timestamp"] // 1000 * 1000
    repeats = -(-records // 16) // summary["key_groups"]
    backlog = GROUP_LAG * summary["queues"]  # the group's lag on each queue, when the queue is that long

    def rows(column: str, value: str) -> Callable:
        return lambda df: df.where(F.col(column) == value).select("commitLogOffset").collect().__len__()

    def window(df) -> int:
        start = F.timestamp_millis(F.lit(window_start))
        end = F.timestamp_millis(F.lit(window_start + 60_000))
        return df.where((F.col("storeTimestamp") >= start) & (F.col("storeTimestamp") < end)).count()

    def plan(df) -> int:
        df.where(F.col("key") == middle["key"])._jdf.queryExecution().executedPlan()
        return 1

    span_s = max((summary["last_timestamp"] - summary["first_timestamp"]) // 1000, 1)
    per_minute = 60 * (records - 1) // span_s
    return {
        "key1": ({}, rows("key", middle["key"]), lambda n: n == 1),
        "key500": ({}, rows("key", middle["repeated_key"]), lambda n: repeats <= n <= repeats + 1),
        "uniqKey": ({}, rows("uniqKey", middle["uniq_key"]), lambda n: n == 1),
        "msgId": ({}, rows("msgId", middle["msg_id"]), lambda n: n == 1),
        "window1m": ({}, window, lambda n: abs(n - per_minute) <= per_minute // 50 + 2),
        "topic1pct": ({}, lambda df: df.where(F.col("topic") == summary["hot_topic"]).count(),
                      lambda n: 0.008 * records < n < 0.012 * records),
        "count": ({}, lambda df: df.count(), lambda n: n == records),
        "backlog": ({"topics": summary["hot_topic"], "startingOffsets": f"group:{summary['group']}"},
                    lambda df: df.count(), lambda n: n == backlog or (0 < n < backlog and records < 2e6)),
        "plan": ({}, plan, lambda n: n == 1),
    }


def measure(spec: dict) -> dict:
    os.environ["RMQSTORE_CACHE_DIR"] = spec["cache"]
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(spec["cache"]).parent / "kernels"))
    from rmqstore.spark import session
    from rmqstore.spark.jar import PROVIDER_CLASS

    store = Path(spec["store"])
    options, run, sane = queries(spec["summary"])[spec["query"]]
    started = time.perf_counter()
    spark = session("local[2]", "rmqstore-bench-growth", engine="jvm", spark__ui__enabled="false",
                    spark__ui__showConsoleProgress="false")
    session_s = time.perf_counter() - started
    jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    fmt = PROVIDER_CLASS if spec["engine"] == "jvm" else "rmqstore_python"

    def once() -> tuple[float, float, int]:
        cpu, start = tree_cpu_seconds(os.getpid()), time.perf_counter()
        reader = spark.read.format(fmt)
        for key, value in options.items():
            reader = reader.option(key, value)
        result = run(reader.load(str(store)))
        return time.perf_counter() - start, tree_cpu_seconds(os.getpid()) - cpu, result

    def baseline() -> float:
        spark.range(1).collect()
        times = []
        for _ in range(5):
            start = time.perf_counter()
            spark.range(1).collect()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    base = baseline()
    drop_page_cache(store)
    cold_s, cold_cpu, result = once()
    resident = resident_bytes(store)
    warm_s, warm_cpu, again = once()
    base = (base + baseline()) / 2
    workers = [pid for pid in _tree(jvm) if pid != jvm]
    out = {
        "engine": spec["engine"], "query": spec["query"], "result": result,
        "sane": sane(result) and again == result,
        "session_s": round(session_s, 2), "range1_s": round(base, 4),
        "cold_s": round(cold_s, 3), "warm_s": round(warm_s, 3),
        "cold_ratio": round(cold_s / base, 2), "warm_ratio": round(warm_s / base, 2),
        "cold_cpu_s": round(cold_cpu, 2), "warm_cpu_s": round(warm_cpu, 2),
        "resident": resident,
        "resident_log_share": round(resident.get("commitlog", 0) / spec["summary"]["log_bytes"], 5),
        "jvm_peak_rss": peak_rss(jvm), "worker_peak_rss": max((peak_rss(p) for p in workers), default=0),
        "driver_peak_rss": peak_rss(os.getpid()), "cache_bytes": dir_bytes(Path(spec["cache"])),
    }
    spark.stop()
    return out


if __name__ == "__main__":
    print("GROWTH " + json.dumps(measure(json.loads(sys.argv[1]))), flush=True)
