"""Demo stores the benchmarks write once and keep (only read afterwards)."""

from __future__ import annotations

import json
from pathlib import Path

from rmqstore.writer.bulk import BulkShape


def cached_demo_store(directory: Path, target_bytes: int, seed: int) -> Path:
    """`directory/store`, a demo store of about `target_bytes` of log, written on first use."""
    if not (directory / "store.done").exists():
        from rmqstore.writer.demo import create_demo_store

        create_demo_store(directory / "store", target_bytes=target_bytes, seed=seed, overwrite=True)
        (directory / "store.done").write_text("ok")
    return directory / "store"


def cached_bulk_store(directory: Path, shape: BulkShape) -> tuple[Path, dict]:
    """`directory/store`, a production-shape store (`rmqstore.writer.bulk`) written on first use, and the
    summary of what was written (`directory/summary.json`: record count, hot topic, a middle record)."""
    summary = directory / "summary.json"
    if not summary.exists():
        from rmqstore.writer.bulk import create_bulk_store

        written = create_bulk_store(directory / "store", shape, overwrite=True)
        summary.write_text(written.to_json())
    return directory / "store", json.loads(summary.read_text())
