"""The default engine on a real cluster: a standalone master and two workers on loopback, each with
its own work and local directories (as separate hosts have), and a fresh driver started with
`rmqstore.spark.session(master=...)`. `format("rmqstore")` is served by the JVM engine, which plans a
new scan for every query, so the reuses that hit the Spark 4.1–4.3 stale-reader bug with the Python
engine (issue #10: 19 of 181,255 rows on this deployment) return every row. The Python engine pushes
no filter there (issue #18: a filtered `collect()` then `count()` returned 1 of 3,000 rows), and
where the master is unknown (a session not made by `rmqstore.spark.session()`) it refuses the pushed
read's tasks rather than risk a stale reader's rows."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyspark
import pytest

from helpers.spark_expected import store_rows
from helpers.spark_stores import write_store

pytestmark = pytest.mark.spark

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
LOOPBACK = "127.0.0.1"
WORKERS = 2
STARTUP_SECONDS = 180.0
PARTITIONS = 4
"""`minPartitions` of the reads, so each query's tasks run on both single-core executors."""


@dataclass
class Cluster:
    master: str
    webui_port: int
    processes: list[subprocess.Popen]
    worker_dirs: list[Path]
    logs: list[Path]

    def log_tails(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-2000:]}" for log in self.logs)

    def wait_alive(self) -> None:
        """Until the master's web UI lists every worker ALIVE (its JSON, not a sleep)."""
        deadline = time.monotonic() + STARTUP_SECONDS
        while _alive_workers(self.webui_port) < WORKERS:
            assert time.monotonic() < deadline, f"{WORKERS} workers not alive in time\n{self.log_tails()}"
            assert all(p.poll() is None for p in self.processes), f"a daemon exited\n{self.log_tails()}"
            time.sleep(0.5)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def _alive_workers(webui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{webui_port}/json", timeout=5) as response:
            state = json.load(response)
    except OSError:
        return 0
    return sum(1 for worker in state.get("workers", []) if worker.get("state") == "ALIVE")


def _stop(process: subprocess.Popen) -> None:
    """Ends the process group `process` leads: a worker's executors and their children too."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=20)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # whatever outlived a clean shutdown
    process.wait()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A standalone master and two 1-core workers started with pyspark's `bin/spark-class`; not yet
    up (`wait_alive`), so the test prepares its store while they start."""
    port, webui = _free_port(), _free_port()
    master = f"spark://{LOOPBACK}:{port}"
    env = {**os.environ, "SPARK_LOCAL_IP": LOOPBACK, "PYSPARK_PYTHON": sys.executable}
    processes: list[subprocess.Popen] = []
    logs: list[Path] = []
    worker_dirs: list[Path] = []

    def start(name: str, args: list[str], extra_env: dict[str, str]) -> None:
        log = tmp_path / f"{name}.log"
        logs.append(log)
        with log.open("wb") as out:
            processes.append(subprocess.Popen([str(SPARK_CLASS), *args], env={**env, **extra_env},
                                              stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path,
                                              start_new_session=True))

    try:
        start("master", ["org.apache.spark.deploy.master.Master", "--host", LOOPBACK, "--port", str(port),
                         "--webui-port", str(webui)], {})
        for i in range(WORKERS):
            work, local = tmp_path / f"worker{i}" / "work", tmp_path / f"worker{i}" / "local"
            work.mkdir(parents=True)
            local.mkdir()
            worker_dirs.append(work)
            start(f"worker{i}", ["org.apache.spark.deploy.worker.Worker", "--host", LOOPBACK, "--port", "0",
                                 "--webui-port", "0", "--cores", "1", "--memory", "1g",
                                 "--work-dir", str(work), master],
                  {"SPARK_WORKER_DIR": str(work), "SPARK_LOCAL_DIRS": str(local)})
        yield Cluster(master, webui, processes, worker_dirs, logs)
    finally:
        for process in reversed(processes):
            _stop(process)


DRIVER = textwrap.dedent("""
    import contextlib, io, json, sys, time
    from pyspark.sql import SparkSession, functions as F
    from rmqstore.spark import served_by, session
    from rmqstore.spark.engine import engine_jar
    from rmqstore.spark.source import RmqStorePythonDataSource

    master, store, key, partitions, wait = sys.argv[1:5] + [float(sys.argv[5])]
    conf = {"spark.executor.memory": "512m", "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
            "spark.task.maxFailures": "1", "spark.sql.python.filterPushdown.enabled": "true",
            "spark.jars": str(engine_jar("jvm"))}
    builder = SparkSession.builder.master(master).appName("rmqstore-cluster-test")
    for name, value in conf.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()  # not rmqstore's session(): the Python engine cannot know the master
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(RmqStorePythonDataSource)
    jsc = spark.sparkContext._jsc.sc()
    deadline = time.monotonic() + wait
    while jsc.getExecutorMemoryStatus().size() < 3:  # the driver and one executor per worker
        if time.monotonic() > deadline:
            sys.exit("the executors did not register in time")
        time.sleep(0.2)
    result = {}

    def python_read():
        return spark.read.format("rmqstore_python").option("minPartitions", partitions).load(store)

    try:
        python_read().where(F.col("key") == key).collect()
        result["p_unknown"] = "no error"
    except Exception as exc:
        result["p_unknown"] = str(exc)

    spark = session(master=master)  # the same session, its master now recorded for the Python engine
    df = python_read()
    result["p_served_by"] = served_by(df)
    explained = io.StringIO()
    with contextlib.redirect_stdout(explained):
        python_read().where(F.col("key") == key).explain()
    result["p_explain"] = explained.getvalue()
    result["p_filtered"] = len(df.where(F.col("key") == key).collect())
    result["p_count"] = df.count()
    result["p_filtered_again"] = python_read().where(F.col("key") == key).count()

    def read():
        return spark.read.format("rmqstore").option("minPartitions", partitions).load(store)

    df = read()
    result["served_by"] = served_by(df)
    result["a_filtered"] = len(df.where(F.col("key") == key).collect())
    result["a_count"] = df.count()

    spark.sql(f"CREATE OR REPLACE TEMP VIEW v USING rmqstore "
              f"OPTIONS (path '{store}', minPartitions '{partitions}')")
    result["b_served_by"] = served_by(spark.table("v"))
    result["b_explain"] = spark.sql(f"EXPLAIN FORMATTED SELECT * FROM v WHERE key = '{key}'").first()[0]
    result["b_count"] = spark.sql("SELECT count(*) FROM v").first()[0]
    result["b_filtered"] = spark.sql(f"SELECT count(*) FROM v WHERE key = '{key}'").first()[0]

    filtered = spark.read.format("rmqstore").load(store).where(f"key = '{key}'")
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        filtered.show()
    result["c_show"] = shown.getvalue()
    result["c_count"] = filtered.count()

    jsc.listenerBus().waitUntilEmpty()
    executors = jsc.statusStore().executorList(True)
    result["tasks"] = {e.id(): e.totalTasks() for e in (executors.apply(i) for i in range(executors.size()))
                       if e.id() != "driver"}
    spark.stop()
    print("RESULT " + json.dumps(result))
""")


def test_reused_dataframe_and_view_on_a_standalone_cluster_return_every_row(cluster: Cluster,
                                                                            tmp_path: Path) -> None:
    store = tmp_path / "store"
    write_store(store, 3000, seed=10)
    rows = store_rows(store)
    key, matching = Counter(r["key"] for r in rows if r["key"]).most_common(1)[0]
    total = len(rows)
    assert 0 < matching < total

    cluster.wait_alive()
    env = {**os.environ, "SPARK_LOCAL_IP": LOOPBACK, "RMQSTORE_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    done = subprocess.run([sys.executable, "-c", DRIVER, cluster.master, str(store), key, str(PARTITIONS),
                           str(STARTUP_SECONDS)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:] + cluster.log_tails()
    result = json.loads(done.stdout.split("RESULT ", 1)[1])

    # (p) the Python engine: refused while the master is unknown, then no pushdown and every row
    assert "runs on a cluster executor" in result["p_unknown"], result["p_unknown"]
    assert result["p_served_by"] == "served by the Python engine"
    assert "(Python)" in result["p_explain"] and f"EqualTo(key,{key})" not in result["p_explain"], \
        result["p_explain"]
    assert total == 3000  # the measured case: a filtered collect() then count() on one DataFrame
    assert (result["p_filtered"], result["p_count"], result["p_filtered_again"]) == (matching, 3000, matching)
    note = "the Python engine pushes no filters on the cluster master " + cluster.master
    assert done.stderr.count(note) == 1, done.stderr[-3000:]
    assert result["served_by"].startswith("served by the JVM engine")
    assert result["b_served_by"].startswith("served by the JVM engine")
    # (a) a filtered collect() and then count() on the same DataFrame
    assert (result["a_filtered"], result["a_count"]) == (matching, total)
    # (b) EXPLAIN FORMATTED of a filtered query on a view (the filter reaches the scan), then count(*)
    assert f"PushedFilters: [IsNotNull(key), EqualTo(key,{key})]" in result["b_explain"], result["b_explain"]
    assert (result["b_count"], result["b_filtered"]) == (total, matching)
    # (c) the README's first snippet, show() then count() on one filtered DataFrame
    shown = [line for line in result["c_show"].splitlines() if line.startswith("|")][1:]
    assert len(shown) == min(matching, 20), result["c_show"]
    assert result["c_count"] == matching
    # (d) both executors, one per worker, ran tasks
    assert len(result["tasks"]) == WORKERS and all(n > 0 for n in result["tasks"].values()), result["tasks"]
    for work in cluster.worker_dirs:
        assert len([d for app in work.iterdir() for d in app.iterdir() if d.is_dir()]) == 1, work
