"""Demo stores the benchmarks write once and keep (only read afterwards)."""

from __future__ import annotations

from pathlib import Path


def cached_demo_store(directory: Path, target_bytes: int, seed: int) -> Path:
    """`directory/store`, a demo store of about `target_bytes` of log, written on first use."""
    if not (directory / "store.done").exists():
        from rmqstore.writer.demo import create_demo_store

        create_demo_store(directory / "store", target_bytes=target_bytes, seed=seed, overwrite=True)
        (directory / "store.done").write_text("ok")
    return directory / "store"
