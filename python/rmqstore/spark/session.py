"""A ready local SparkSession for rmqstore."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

SESSION_CONF: dict[str, str] = {
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
}
"""Settings the source wants: pushdown on (off is correct too, only slower), UTC timestamps."""


def session(master: str = "local[*]", app_name: str = "rmqstore", **conf: str) -> SparkSession:
    """`getOrCreate()` a session with `SESSION_CONF` (plus `conf`, dots written as `__`).

    Sets PYSPARK_PYTHON to this interpreter when unset: Spark's default (`python3` on PATH) may
    be another Python, without rmqstore, and the workers would fail to import it.
    On an existing session the SQL settings are applied with `spark.conf.set`.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = {**SESSION_CONF, **{k.replace("__", "."): v for k, v in conf.items()}}
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    for key, value in settings.items():
        if key.startswith("spark.sql."):
            spark.conf.set(key, value)
    return spark
