"""A ready SparkSession for rmqstore."""

from __future__ import annotations

import os
import sys

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession
from pyspark.sql.utils import is_remote

from rmqstore.spark.engine import SPARK_JARS, Engine, attach_engines, engine_jar, with_jar
from rmqstore.spark.guard import record_master

SESSION_CONF: dict[str, str] = {
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
}
"""Settings the source wants: pushdown on (off is correct too, only slower), UTC timestamps."""

DEFAULT_MASTER = "local[*]"


def session(master: str | None = None, app_name: str = "rmqstore", engine: Engine = "auto",
            remote: str | None = None, **conf: str) -> SparkSession:
    """`getOrCreate()` a session with `SESSION_CONF` (plus `conf`, dots written as `__`).

    `master`: when None, the master already chosen wins (spark-submit's `--master`, the pyspark
    shell, `spark.master` in spark-defaults.conf or PYSPARK_SUBMIT_ARGS, a running SparkContext);
    only when nothing chose one is it `local[*]`.
    Sets PYSPARK_PYTHON to this interpreter when unset, before Spark's JVM starts (it picks the
    Python of auto-registered sources then): Spark's default (`python3` on PATH) may be another
    Python, without rmqstore, and the workers would fail to import it. On a cluster set
    PYSPARK_PYTHON (or `spark.pyspark.python`) to the executors' Python: see the README.
    On an existing session the SQL settings are applied with `spark.conf.set`.
    Records the master for the Python engine's planning (`rmqstore.spark.guard.record_master`: no
    filter pushdown on a cluster master).
    `engine` picks the JVM connector or the Python source (`rmqstore.spark.engine`).
    `remote`: a Spark Connect session instead (`sc://host:15002`, or `local[2]` for a server in
    this process): the jar goes to the server with `addArtifacts`, for this session only.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = {**SESSION_CONF, **{k.replace("__", "."): v for k, v in conf.items()}}
    jar = engine_jar(engine)
    created = remote is not None or SparkContext._active_spark_context is None
    if remote is not None:
        builder = SparkSession.builder.remote(remote)
    else:
        if jar is not None:
            settings[SPARK_JARS] = with_jar(settings.get(SPARK_JARS), jar)
        master = master or settings.get("spark.master") or _chosen_master(settings) or DEFAULT_MASTER
        builder = SparkSession.builder.master(master)
    builder = builder.appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    for key, value in settings.items():
        if key.startswith("spark.sql."):
            spark.conf.set(key, value)
    attach_engines(spark, jar, created)
    if remote is None and not is_remote():
        record_master(spark.sparkContext.master)
    return spark


def _chosen_master(settings: dict[str, str]) -> str | None:
    """The master set before this call: a running context's, else the launching JVM's `spark.master`."""
    active = SparkContext._active_spark_context
    if active is not None:
        return active.master
    # Starts (or joins, under spark-submit) the JVM exactly as getOrCreate() would, with the same
    # settings: the driver's class path (spark.jars) is fixed when the JVM starts. Its system
    # properties then hold --master / spark-defaults.conf / PYSPARK_SUBMIT_ARGS settings.
    launch = SparkConf(loadDefaults=False)
    for key, value in settings.items():
        launch.set(key, value)
    SparkContext._ensure_initialized(conf=launch)
    return SparkConf().get("spark.master", None)
