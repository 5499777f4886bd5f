"""Opening the stores a Spark read names, with errors that start with the cause.

A path that is not a usable store is a StoreLayoutError whose message starts with
`rmqstore: no RocketMQ store at '<path>': <reason>` and says what a store holds; `cause_first`
(rmqstore.spark.errors) lets Spark show it without the Python traceback.
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
                          max_message_size=options.max_message_size,
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
