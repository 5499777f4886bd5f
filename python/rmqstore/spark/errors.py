"""rmqstore's own errors reach a Spark user with the cause on the first line.

Spark reports an exception raised while it creates or plans a Python source as
`[PYTHON_DATA_SOURCE_ERROR] ...: Traceback (most recent call last): ...`, the cause last. Spark's
worker formats the error without the traceback when `SPARK_HIDE_TRACEBACK` is set in its
environment (what `spark.sql.execution.pyspark.udf.hideTraceback.enabled` does), and the worker
process exits after reporting an error (`worker_run` ends in `sys.exit(-1)`; before pyspark 4.2 each
planning worker's `main` does). So for rmqstore's
own errors about the user's input (the message starts with "rmqstore") the variable is set in the
failing worker only, just before the error leaves rmqstore: nothing else runs in that process.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rmqstore.store.errors import StoreError

HIDE_TRACEBACK_ENV = "SPARK_HIDE_TRACEBACK"
_WORKER_RUNNER = ("worker_run", os.path.join("pyspark", "sql", "worker", "utils.py"))
_OLD_RUNNERS = (os.path.join("pyspark", "sql", "worker", ""),)
"""Where the `main` of a planning worker lives (pyspark 4.0-4.1). Not the streaming source runner's: when
`streamReader` raises, its `finally: reader.stop()` raises UnboundLocalError over the error (pyspark 4.3), and
only the traceback, chained, still shows rmqstore's message."""


@contextmanager
def cause_first() -> Iterator[None]:
    """Around source code that Spark's planning workers run: rmqstore input errors without traceback."""
    try:
        yield
    except (ValueError, StoreError) as exc:
        if str(exc).startswith("rmqstore") and _in_spark_worker():
            os.environ[HIDE_TRACEBACK_ENV] = "1"
        raise


def _in_spark_worker() -> bool:
    """True inside Spark's Python worker runner, which reports the error and exits the process."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == _WORKER_RUNNER[0] and code.co_filename.endswith(_WORKER_RUNNER[1]):
            return True
        if code.co_name == "main" and any(runner in code.co_filename for runner in _OLD_RUNNERS):
            return True
        frame = frame.f_back
    return False
