"""Which engine serves a query (`served_by`), the quickstart's fallback to the Python engine when the
connector jar cannot be built, and both engines over Spark Connect (rmqstore.spark.engine)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from rmqstore.spark.engine import FALLBACK_NOTE, scan_engines, served_by
from rmqstore.spark.jar import JAR_GLOB, PROVIDER_CLASS

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "conformance" / "fixtures" / "rmq-5.5.0"


@pytest.fixture(scope="module")
def rmqstore_engine(spark: SparkSession) -> str:
    """The engine Spark resolves `format("rmqstore")` to in the shared session (which has the jar):
    the JVM connector once its short name is "rmqstore", the Python source before."""
    found = spark._jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(
        "rmqstore", spark._jsparkSession.sessionState().conf())
    return "jvm" if found.getName() == PROVIDER_CLASS else "python"


def test_served_by_names_the_engine_and_the_jar(spark: SparkSession, engine: str, engine_format: str,
                                                small_store: Path) -> None:
    df = spark.read.format(engine_format).load(str(small_store)).where(F.col("key") == "k1")
    assert scan_engines(df) == [engine]
    if engine == "jvm":
        assert served_by(df).startswith("served by the JVM engine (rmqstore-spark-4.0_2.13-")
        assert served_by(df).endswith(".jar)")
    else:
        assert served_by(df) == "served by the Python engine"


def test_served_by_a_query_over_both_engines(spark: SparkSession, small_store: Path) -> None:
    jvm = spark.read.format(PROVIDER_CLASS).load(str(small_store)).select("commitLogOffset")
    python = spark.read.format("rmqstore_python").load(str(small_store)).select("commitLogOffset")
    joined = jvm.join(python, "commitLogOffset")
    assert sorted(scan_engines(joined)) == ["jvm", "python"]
    assert served_by(joined).count("engine") == 2
    with pytest.raises(ValueError, match="reads no rmqstore table"):
        served_by(spark.range(3))


def test_rmqstore_is_served_by_the_engine_spark_resolves_it_to(spark: SparkSession, rmqstore_engine: str,
                                                               small_store: Path) -> None:
    """Before the connector takes the short name "rmqstore" that is the Python engine, after it the JVM."""
    assert scan_engines(spark.read.format("rmqstore").load(str(small_store))) == [rmqstore_engine]


def _shadow_path(tmp_path: Path, without: str) -> str:
    """A PATH of one directory linking every program of the current PATH except `without`."""
    shadow = tmp_path / "bin"
    shadow.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            target = shadow / entry.name
            if entry.name != without and not target.exists() and os.access(entry.path, os.X_OK):
                target.symlink_to(entry.path)
    return str(shadow)


def test_quickstart_without_java_for_sbt_falls_back_to_the_python_engine(small_store: Path,
                                                                         tmp_path: Path) -> None:
    """A checkout without a built jar, on a machine whose PATH has no `java` (Spark itself finds one
    through JAVA_HOME): building the jar fails, the quickstart says why in one line and is served by
    the auto-registered Python source under `format("rmqstore")`."""
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "python", checkout / "python",
                    ignore=shutil.ignore_patterns("__pycache__", "jars", "*.egg-info"))
    for name in ("build.sbt", ".ci/sbt", "project/build.properties"):
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, checkout / name)
    (checkout / "connector").mkdir()
    java = shutil.which("java")
    assert java is not None
    sbt_cache = tmp_path / "sbt-cache"  # the launcher jar only, so no download is tried
    sbt_cache.mkdir()
    home_cache = Path(os.environ.get("SBT_BOOT_CACHE", Path.home() / ".cache" / "rmqstore-sbt"))
    for launcher in home_cache.glob("sbt-launch-*.jar"):
        (sbt_cache / launcher.name).symlink_to(launcher)
    env = {**os.environ, "PATH": _shadow_path(tmp_path, "java"), "PYTHONPATH": str(checkout / "python"),
           "JAVA_HOME": os.environ.get("JAVA_HOME") or str(Path(java).resolve().parents[1]),
           "SBT_BOOT_CACHE": str(sbt_cache), "RMQSTORE_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    done = subprocess.run([sys.executable, str(REPO / "examples" / "quickstart.py"), str(small_store)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "quickstart served by the Python engine"
    notes = [line for line in done.stderr.splitlines() if FALLBACK_NOTE in line]
    assert len(notes) == 1, done.stderr[-3000:]
    assert notes[0].startswith(f"rmqstore: {FALLBACK_NOTE}: `.ci/sbt connector/package` failed (exit 127): ")
    assert "java" in notes[0]
    assert not list((checkout / "python" / "rmqstore").glob(f"jars/{JAR_GLOB}"))


CONNECT_SCRIPT = textwrap.dedent("""
    import json, sys
    from rmqstore.spark import session
    from rmqstore.spark.engine import scan_engines
    spark = session(remote="local[2]", engine="jvm")
    result = {}
    for fmt in sys.argv[2:]:
        df = spark.read.format(fmt).load(sys.argv[1])
        rows = [r.asDict(recursive=True) for r in df.orderBy("commitLogOffset").collect()]
        key = next(r["key"] for r in rows if r["key"])
        keyed = df.where(df.key == key).select("commitLogOffset").collect()
        result[fmt] = {"engines": scan_engines(df), "rows": rows, "keyed": [r[0] for r in keyed]}
    spark.stop()
    print("RESULT " + json.dumps(result, default=repr, sort_keys=True))
""")


def test_both_engines_over_spark_connect(rmqstore_engine: str, tmp_path: Path) -> None:
    """`session(remote=...)` sends the jar with addArtifacts and registers `rmqstore_python` over
    Connect: both engines read a RocketMQ 5.5.0 fixture identically (every column, and a key lookup)."""
    formats = ["rmqstore_python", PROVIDER_CLASS, "rmqstore"]
    env = {**os.environ, "RMQSTORE_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    done = subprocess.run([sys.executable, "-c", CONNECT_SCRIPT, str(FIXTURE / "store"), *formats],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert [result[f]["engines"] for f in formats] == [["python"], ["jvm"], [rmqstore_engine]]
    oracle = json.loads((FIXTURE / "oracle.json").read_text())
    python = result["rmqstore_python"]
    offsets = [r["commitLogOffset"] for r in python["rows"]]
    assert offsets == sorted(r["commitLogOffset"] for r in oracle["records"]) and python["keyed"]
    for fmt in formats[1:]:
        assert result[fmt]["rows"] == python["rows"]
        assert result[fmt]["keyed"] == python["keyed"]
