"""Which engine answers `format("rmqstore")`: the JVM DataSource V2 connector or the Python source.

Spark resolves a format name to a JVM source first and to a Python data source only when no JVM
class has the name (facts file §3). The JVM engine is therefore chosen by putting the connector jar
on the classpath, which is fixed when the session's JVM starts: `spark.jars` on a new session,
`spark.addArtifacts` on Spark Connect. The Python engine is also registered as `rmqstore_python`,
so both engines can be used side by side in one session; `format(PROVIDER_CLASS)` always means
the JVM engine.

Until the JVM engine passes the whole contract suite (tests/contract) its short name is
"rmqstore_jvm" (`RmqStoreProvider.ShortName` in the connector), so `format("rmqstore")` stays the
Python engine even with the jar loaded; renaming it "rmqstore" is the one-line switch that makes
`auto` (and `jvm`) serve `format("rmqstore")` from the JVM.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Literal

from pyspark.sql import SparkSession

from rmqstore.spark.jar import PROVIDER_CLASS, connector_jar
from rmqstore.spark.source import RmqStorePythonDataSource

Engine = Literal["auto", "jvm", "python"]
ENGINES: tuple[str, ...] = ("auto", "jvm", "python")
SPARK_JARS = "spark.jars"

_warned: set[str] = set()


def engine_jar(engine: str) -> Path | None:
    """The jar to put on a new session's classpath for `engine` (None: Python engine only).

    `jvm` needs the jar (built from a checkout if need be); `auto` takes it when it is shipped or
    already built and up to date."""
    if engine not in ENGINES:
        raise ValueError(f"rmqstore: engine {engine!r} is not one of {', '.join(ENGINES)}")
    if engine == "python":
        return None
    return connector_jar(build=engine == "jvm")


def with_jar(current: str | None, jar: Path) -> str:
    """`spark.jars` with the connector appended to what the user set."""
    entries = [e.strip() for e in (current or "").split(",") if e.strip()]
    return ",".join([*entries, str(jar)]) if str(jar) not in entries else ",".join(entries)


def attach_engines(spark: SparkSession, jar: Path | None, created: bool) -> None:
    """Register the `rmqstore_python` alias; on Spark Connect add the jar as a session artifact;
    on a session that existed before without the jar, warn once how to add it."""
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
    if _is_connect(spark):
        return False
    try:
        spark._jvm.java.lang.Class.forName(PROVIDER_CLASS, False,
                                           spark._jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader())
    except Exception:
        return False
    return True


def _is_connect(spark: SparkSession) -> bool:
    from pyspark.sql.utils import is_remote

    return is_remote() or not hasattr(spark, "_jvm")
