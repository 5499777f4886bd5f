"""Demo stores the benchmarks write once and keep (only read afterwards)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from rmqstore.writer.bulk import BulkShape


def cached_demo_store(directory: Path, target_bytes: int, seed: int, segment_size: int | None = None) -> Path:
    """`directory/store`, a demo store of about `target_bytes` of log (segments of `segment_size`, else
    the demo's default), written on first use."""
    if not (directory / "store.done").exists():
        from rmqstore.writer.demo import create_demo_store

        create_demo_store(directory / "store", target_bytes=target_bytes, seed=seed,
                          segment_size=segment_size, overwrite=True)
        (directory / "store.done").write_text("ok")
    return directory / "store"


def sample_order_event(store: Path) -> tuple[str, datetime]:
    """The single key of an order event from the middle of a demo store's log (a plain message: no
    transaction half, no delayed copy, no send-back copies, no space-separated key list; one match), and
    its storeTimestamp."""
    from rmqstore.plan.lookup import find_by_key
    from rmqstore.store import Store

    def matches(opened: Store, key: str) -> int:
        return sum(found == key for batch in opened.read_offsets_batches(find_by_key(opened, key), ["key"])
                   for found in batch.column("key").to_pylist())

    with Store.open(str(store)) as opened:
        middle = (opened.min_offset + opened.max_offset) // 2
        batch = next(opened.scan(middle, middle + (1 << 20), ["topic", "key", "keys", "storeTimestamp"]))
        row = next(r for r in batch.to_pylist() if r["topic"] == "OrderEvents" and r["keys"] == [r["key"]]
                   and matches(opened, r["key"]) == 1)
    return row["key"], row["storeTimestamp"]


def cached_bulk_store(directory: Path, shape: BulkShape) -> tuple[Path, dict]:
    """`directory/store`, a production-shape store (`rmqstore.writer.bulk`) written on first use, and the
    summary of what was written (`directory/summary.json`: record count, hot topic, a middle record)."""
    summary = directory / "summary.json"
    if not summary.exists():
        from rmqstore.writer.bulk import create_bulk_store

        written = create_bulk_store(directory / "store", shape, overwrite=True)
        summary.write_text(written.to_json())
    return directory / "store", json.loads(summary.read_text())
