"""Opening the stores a Spark read names, with errors that start with the cause.

Spark shows an error raised while it creates or plans a Python source after a prefix of its own
(`[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: ...`), followed by the
Python traceback. So the error is raised here, from one frame, without a chained cause: the
traceback is then two lines and the message states the problem and what a store looks like.
"""

from __future__ import annotations

from rmqstore.spark.options import RmqOptions
from rmqstore.store import Store
from rmqstore.store.errors import StoreLayoutError

STORE_LAYOUT_HINT = "a broker store directory holds commitlog/, and usually consumequeue/, index/ and config/"


def open_store(options: RmqOptions, path: str) -> Store:
    """`Store.open` of one of the read's paths with its options; StoreLayoutError naming the path."""
    try:
        return Store.open(path, index_geometry=options.index_geometry,
                          storage_options=options.storage_options_for(path))
    except StoreLayoutError as exc:
        reason = str(exc).removeprefix(f"{path}: ")
        hint = "" if "commitlog/" in reason else f" ({STORE_LAYOUT_HINT})"
        problem = f"rmqstore: no RocketMQ store at '{path}': {reason}{hint}"
    except OSError as exc:  # permissions, remote access (never carries credentials)
        problem = f"rmqstore: cannot read the store at '{path}': {exc}"
    raise StoreLayoutError(problem)


def check_stores(options: RmqOptions) -> None:
    """Open and close every store of a read, so that a wrong path fails when the DataFrame is made."""
    for path in options.paths:
        open_store(options, path).close()
