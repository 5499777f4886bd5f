"""Expected rows straight from the Store API (no Spark), for differential tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rmqstore.store import Store

ROW_COLUMNS = ["commitLogOffset", "topic", "queueId", "queueOffset", "key", "keys", "tags", "uniqKey",
               "msgId", "storeTimestamp"]


def store_rows(path: Path) -> list[dict]:
    """Every message of the store as a dict of ROW_COLUMNS (timestamps as datetimes)."""
    with Store.open(str(path)) as store:
        return [row for batch in store.scan(columns=ROW_COLUMNS) for row in batch.to_pylist()]


def expected_offsets(rows: list[dict], predicate: Callable[[dict], bool]) -> list[int]:
    return sorted(r["commitLogOffset"] for r in rows if predicate(r))
