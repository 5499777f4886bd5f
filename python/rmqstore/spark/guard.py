"""Stale-reader guard for the Spark 4.1–4.3 pushdown cache bug (design §7.3).

Spark caches the reader built by `pushFilters` on the DataFrame's source object. A later query on
the same DataFrame or view that pushes no filter (`df.count()` after `df.filter(...).count()`)
silently reuses that reader, whose partitions only hold the earlier query's rows. Reader state
cannot tell which query runs it, so the guard detects the reuse instead:

- `pushFilters` gives every reader that consumed filters a fresh plan token. Each planning of a
  filtered query calls pushFilters again, so a token belongs to one planned query.
- `read()` claims (token, partition) with a marker file in a temp directory outside the store,
  recording the SQL execution (root) id of the running query. Every job of that query (a range
  partitioner's sampling job, AQE stages), task retries and speculative copies pass; a read of
  the same token by another execution is a reuse, and the read fails with `StaleReaderError`.

Markers live on each machine, so the guard is sound only where every task runs on the planning
host: in local mode. Elsewhere no filter is pushed (issue #18):
- `record_master` (called by `rmqstore.spark.session()` on the driver) writes the session's master
  under the application's key, the driver's `SparkFiles` root directory (one per SparkContext, the
  same in the driver, its planning workers and, in local mode only, its tasks' workers);
  `cluster_master` reads it in a planning worker: on a non-local master the source pushes nothing;
- where no master was recorded (a session not made by rmqstore), filters are pushed and `claim`
  refuses a task that runs outside the planning driver (`StaleReaderError`): never stale rows.

Limits (Python cannot see which query runs a task, so reuse is all it can detect):
- re-running an action that keeps its planned query (`dff.collect()` or `toPandas()` twice on the
  same filtered DataFrame; `count()`/`show()` re-plan and pass) is refused too: `.cache()` the
  DataFrame or rebuild it;
- not detected: planning a filtered query without running it (`df.where(...).explain()`), then an
  unfiltered query on the same DataFrame or view: its first read of the token looks legitimate.
`staleReaderCheck=false` turns the guard off.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
from pathlib import Path

from rmqstore.cachedir import cache_root, remove_old_entries

MARKER_ROOT = Path(tempfile.gettempdir()) / f"rmqstore-plan-markers-{os.getuid()}"
MARKER_MAX_AGE_S = 24 * 3600
MASTER_MAX_AGE_S = 7 * 24 * 3600


class StaleReaderError(RuntimeError):
    """A filtered reader was reused by another query; its rows would be wrong."""


def new_plan_token() -> str:
    """A fresh token for a reader whose pushFilters consumed filters; clears day-old markers (one
    sweep an hour: a pushed query must not pay a stat per marker of every earlier query)."""
    remove_old_entries(MARKER_ROOT, MARKER_MAX_AGE_S)
    return uuid.uuid4().hex


def application_key() -> str | None:
    """The running Spark application's `SparkFiles` root directory (None outside Spark)."""
    from pyspark import SparkFiles

    try:
        return SparkFiles.getRootDirectory()
    except Exception:  # no SparkContext here (or a Spark Connect client): no application to name
        return None


def record_master(master: str) -> None:
    """Driver side: note `master` for this application's planning workers (`cluster_master`)."""
    key = application_key()
    if key is None:
        return
    marker = _master_marker(key)
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(master)
    except OSError:
        return  # unrecorded: filters are pushed and `claim` refuses tasks off the driver
    remove_old_entries(marker.parent, MASTER_MAX_AGE_S)


def cluster_master() -> str | None:
    """In a planning worker: the recorded master of this application when it is not local mode."""
    key = application_key()
    try:
        master = _master_marker(key).read_text().strip() if key else ""
    except OSError:
        return None
    return master if master and not is_local_master(master) else None


def is_local_master(master: str) -> bool:
    """`local`, `local[N]`, `local[*]`, `local[N,F]`: every task runs in the driver's JVM."""
    return master == "local" or master.startswith("local[")


def _master_marker(key: str) -> Path:
    return cache_root() / "masters" / hashlib.sha256(key.encode()).hexdigest()[:32]


def claim(token: str, partition_index: int, filters_text: str, plan_key: str | None = None) -> None:
    """Record that the running query reads (token, partition); raise on a read by another query, or
    on a task running outside the application's driver that planned it (`plan_key`)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:  # read() called outside a Spark task (unit tests): nothing to guard
        return
    if plan_key is not None and application_key() != plan_key:
        raise StaleReaderError(
            "rmqstore: this read pushed filters (" + filters_text + ") to the Python engine, and its task "
            "runs on a cluster executor, where Spark 4.1-4.3 may reuse the reader for a later query on the "
            "same DataFrame or view (wrong rows) and no check can catch it. Start the session with "
            "rmqstore.spark.session() (the Python engine then pushes no filters on a cluster), use the JVM "
            "engine (format('rmqstore') with the connector jar), or set the option pushdown=false.")
    execution = _execution_id(context)
    directory = MARKER_ROOT / token
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / f"p{partition_index}"
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        first = marker.read_text().strip()
        if first in ("", execution):  # a racing writer, or another job / retry of the same query
            return
        raise StaleReaderError(
            "rmqstore: this read plan (pushed filters: " + filters_text + ") was already used by another "
            "Spark query. Spark 4.1-4.3 reuse a filtered DataFrame's reader for later queries on the same "
            "DataFrame or view (fixed upstream in 5.0), which would return wrong rows. Build a fresh "
            "DataFrame with spark.read.format('rmqstore')...load(...) (or re-run the SQL) for each query; "
            "to repeat an action on a filtered DataFrame, rebuild it. Set the option "
            "staleReaderCheck=false to disable this check at your own risk.") from None
    with os.fdopen(fd, "w") as f:
        f.write(execution)


def _execution_id(context: object) -> str:
    """The query running this task: its SQL (root) execution id, else its stage."""
    for key in ("spark.sql.execution.root.id", "spark.sql.execution.id"):
        value = context.getLocalProperty(key)
        if value:
            return f"sql-{value}"
    return f"stage-{context.stageId()}"
