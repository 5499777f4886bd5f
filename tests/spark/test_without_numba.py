"""A numba-less install (`rmqstore.speedups`): the reference reader (`format/reference.py`) stands in for
the compiled kernels, says so once, and gives the same answers: `rmqstore --version`, `rmqstore info`,
`Store.scan` and a Spark read on the Python engine, in processes where `import numba` fails (a
sitecustomize on PYTHONPATH, which Spark's Python workers inherit)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
from chispa import assert_df_equality
from pyspark.sql import SparkSession

from helpers.spark_expected import store_rows
from rmqstore import Store, __version__
from rmqstore.cli.info import collect
from rmqstore.format.reference import SLOW_NOTE

READS = textwrap.dedent("""
    import sys
    import pyarrow as pa
    from rmqstore import Store
    from rmqstore.spark import session
    store, out, key = sys.argv[1:]
    with Store.open(store) as opened:
        table = pa.Table.from_batches(list(opened.scan()))
    with pa.OSFile(f"{out}/scan.arrow", "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    spark = session(engine="python")  # under PYSPARK_SUBMIT_ARGS="--master local[1] pyspark-shell"
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.format("rmqstore_python").option("maxBytesPerPartition", "16k").load(store)
    df.write.parquet(f"{out}/all")
    df.where(f"key = '{key}'").write.parquet(f"{out}/key")
""")


def _without_numba(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    blocker = tmp_path / "no-numba"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['numba'] = None  # import fails\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")]),
           "PYSPARK_SUBMIT_ARGS": "--master local[1] pyspark-shell",
           "RMQSTORE_CACHE_DIR": str(tmp_path / "c")}
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=600)


def test_the_command_without_numba(small_store: Path, tmp_path: Path) -> None:
    done = _without_numba(tmp_path, "-m", "rmqstore", "--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"rmqstore {__version__}\n", "")
    done = _without_numba(tmp_path, "-m", "rmqstore", "info", str(small_store), "--json")
    assert done.returncode == 0 and done.stderr == f"rmqstore: {SLOW_NOTE}\n"
    with Store.open(small_store) as store:
        assert json.loads(done.stdout) == json.loads(json.dumps(collect(store)))


def test_store_and_spark_reads_without_numba(spark: SparkSession, small_store: Path, tmp_path: Path) -> None:
    key = next(r["key"] for r in store_rows(small_store) if r["key"])
    script = tmp_path / "reads.py"
    script.write_text(READS)
    done = _without_numba(tmp_path, str(script), str(small_store), str(tmp_path), key)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr.count(SLOW_NOTE) == 2, done.stderr[-3000:]  # the driver's scan, the Spark application
    with Store.open(small_store) as store:
        expected = pa.Table.from_batches(list(store.scan()))
    with pa.memory_map(str(tmp_path / "scan.arrow")) as source:
        assert pa.ipc.open_file(source).read_all().equals(expected)
    for name, where in (("all", "true"), ("key", f"key = '{key}'")):
        compiled = spark.read.format("rmqstore_python").load(str(small_store)).where(where)  # fresh: no reuse
        got = spark.read.schema(compiled.schema).parquet(str(tmp_path / name)).orderBy("commitLogOffset")
        assert_df_equality(got, compiled.orderBy("commitLogOffset"))
