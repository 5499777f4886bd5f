"""Which engine answers `format("rmqstore")`: the JVM DataSource V2 connector or the Python source.

Spark resolves a format name to a JVM source first and to a Python data source only when no JVM
class has the name (design §7.3). The JVM engine is therefore chosen by putting the connector jar
on the classpath, which is fixed when the session's JVM starts: `spark.jars` on a new session,
`spark.addArtifacts` on Spark Connect. The Python engine is also registered as `rmqstore_python`,
so both engines can be used side by side in one session; `format(PROVIDER_CLASS)` always means
the JVM engine.

Both engines are named "rmqstore" (`RmqStoreProvider.ShortName` in the connector), so `auto` (and
`jvm`) serve `format("rmqstore")` and `readStream.format("rmqstore")` from the JVM.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path
from typing import Literal

from pyspark.sql import DataFrame, SparkSession

from rmqstore.notes import note_once
from rmqstore.spark.compat import has_data_source_api, require_python_engine
from rmqstore.spark.jar import PROVIDER_CLASS, ConnectorJarError, connector_jar

Engine = Literal["auto", "jvm", "python"]
ENGINES: tuple[str, ...] = ("auto", "jvm", "python")
SPARK_JARS = "spark.jars"
FALLBACK_NOTE = "using the Python engine (the JVM connector is unavailable)"
NO_JAR = "this installation ships no connector jar"
PYTHON_SCAN = "(Python)"
"""How Spark describes a Python data source's scan in a plan (`PythonScan.description`)."""

_warned: set[str] = set()


def engine_jar(engine: str) -> Path | None:
    """The jar to put on a new session's classpath for `engine` (None: Python engine only).

    `jvm` and `auto` take the shipped jar, or build it from a checkout when missing or stale;
    `jvm` raises ConnectorJarError when that fails, `auto` says why in one line on stderr and
    falls back to the Python engine. The Python engine on a pyspark without its API raises
    PysparkTooOldError (`rmqstore.spark.compat`)."""
    if engine not in ENGINES:
        raise ValueError(f"rmqstore: engine {engine!r} is not one of {', '.join(ENGINES)}")
    if engine == "python":
        require_python_engine()
        return None
    try:
        jar = connector_jar()
        if jar is None:
            raise ConnectorJarError(f"rmqstore: {NO_JAR}; use engine='python' or install a build with "
                                    "the jar", NO_JAR)
    except ConnectorJarError as exc:
        if engine == "jvm":
            raise
        require_python_engine()
        note_once(f"{FALLBACK_NOTE}: {exc.reason}")
        return None
    return jar


def with_jar(current: str | None, jar: Path) -> str:
    """`spark.jars` with the connector appended to what the user set."""
    entries = [e.strip() for e in (current or "").split(",") if e.strip()]
    return ",".join([*entries, str(jar)]) if str(jar) not in entries else ",".join(entries)


def attach_engines(spark: SparkSession, jar: Path | None, created: bool) -> None:
    """Register the `rmqstore_python` alias (where pyspark has the Python engine's API); on Spark Connect
    add the jar as a session artifact; on a session that existed before without the jar, warn once how
    to add it."""
    if has_data_source_api():
        from rmqstore.spark.source import RmqStorePythonDataSource

        spark.dataSource.register(RmqStorePythonDataSource)
    if jar is None:
        return
    if _is_connect(spark):
        spark.addArtifacts(str(jar))
        return
    if not created and not has_connector(spark) and str(jar) not in _warned:
        _warned.add(str(jar))
        warnings.warn(f"rmqstore: the Spark session already existed without the JVM connector, so "
                      f"format('rmqstore') uses the Python engine. Start the session with "
                      f"spark.jars={jar} (or rmqstore.spark.session() before any other session), or run "
                      f"spark.sql(\"ADD JAR '{jar}'\") (current thread only) / spark.addArtifacts on "
                      f"Spark Connect.", stacklevel=3)


def has_connector(spark: SparkSession) -> bool:
    """True when the session's driver can load the JVM connector."""
    return connector_location(spark) is not None


def connector_location(spark: SparkSession) -> str | None:
    """Where the driver loads the JVM connector from (its jar's URL), None when it cannot load it
    (or cannot tell: Spark Connect, whose artifacts live in the server's session class loader)."""
    if _is_connect(spark):
        return None
    jvm = spark._jvm
    try:
        provider = jvm.java.lang.Class.forName(PROVIDER_CLASS, False,
                                               jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader())
    except Exception:
        return None
    return str(provider.getProtectionDomain().getCodeSource().getLocation().toString())


def scan_engines(df: DataFrame) -> list[str]:
    """The engine ("jvm" or "python") of every rmqstore scan in `df`'s physical plan, in plan order.

    Read from the plan `df.explain()` prints (the same on Spark Connect): Spark describes a Python
    data source's BatchScan as "(Python)"; any other BatchScan of a table the connector names
    "rmqstore <paths>" is the JVM engine."""
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        df.explain()
    engines = []
    for line in text.getvalue().splitlines():
        scan = line.partition("BatchScan ")[2]
        if f"] {PYTHON_SCAN}" in scan:  # after the scan's output columns
            engines.append("python")
        elif scan.startswith("rmqstore "):
            engines.append("jvm")
    return engines


def served_by(df: DataFrame) -> str:
    """"served by the JVM engine (<jar>)" / "served by the Python engine": which engine reads `df`."""
    engines = scan_engines(df)
    if not engines:
        raise ValueError("rmqstore: the DataFrame reads no rmqstore table")
    names = []
    for engine in dict.fromkeys(engines):
        location = connector_location(df.sparkSession) if engine == "jvm" else None
        jar = f" ({location.rsplit('/', 1)[-1]})" if location else ""
        names.append(f"the JVM engine{jar}" if engine == "jvm" else "the Python engine")
    return "served by " + " and ".join(names)


def _is_connect(spark: SparkSession) -> bool:
    from pyspark.sql.utils import is_remote

    return is_remote() or not hasattr(spark, "_jvm")
