"""A ready local SparkSession for rmqstore."""

from __future__ import annotations

import os
import sys

from pyspark import SparkContext
from pyspark.sql import SparkSession

from rmqstore.spark.engine import SPARK_JARS, Engine, attach_engines, engine_jar, with_jar

SESSION_CONF: dict[str, str] = {
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
}
"""Settings the source wants: pushdown on (off is correct too, only slower), UTC timestamps."""


def session(master: str = "local[*]", app_name: str = "rmqstore", engine: Engine = "auto",
            **conf: str) -> SparkSession:
    """`getOrCreate()` a session with `SESSION_CONF` (plus `conf`, dots written as `__`).

    Sets PYSPARK_PYTHON to this interpreter when unset: Spark's default (`python3` on PATH) may
    be another Python, without rmqstore, and the workers would fail to import it.
    On an existing session the SQL settings are applied with `spark.conf.set`.
    `engine` picks the JVM connector or the Python source (`rmqstore.spark.engine`).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = {**SESSION_CONF, **{k.replace("__", "."): v for k, v in conf.items()}}
    jar = engine_jar(engine)
    if jar is not None:
        settings[SPARK_JARS] = with_jar(settings.get(SPARK_JARS), jar)
    created = SparkContext._active_spark_context is None
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    for key, value in settings.items():
        if key.startswith("spark.sql."):
            spark.conf.set(key, value)
    attach_engines(spark, jar, created)
    return spark
