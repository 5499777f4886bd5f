"""Helpers of the streaming tests: stores written at once, waiting, and reading a parquet sink."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq

from helpers.live_broker import LiveBroker, message


def write_store(root: Path, count: int, *, segment_size: int = 2048, first: int = 0,
                broker: LiveBroker | None = None, close: bool = True) -> list[dict]:
    """Append `count` test messages at once (no pauses); returns their manifest entries."""
    broker = broker or LiveBroker(root, segment_size, piece_sleep=0)
    rng = random.Random(first)
    entries = [broker.append(*message(index, rng)) for index in range(first, first + count)]
    if close:
        broker.close(clean=True)
    return entries


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


def sink_batches(sink: Path) -> dict[int, list[list[dict]]]:
    """Rows of a parquet file sink by micro-batch id: a list of files, each file's rows in file order.

    The sink's `_spark_metadata/<batch>` log lists the files each committed batch wrote; files not
    listed there (from an interrupted batch) are not part of the output, exactly as Spark reads it.
    Every 10th batch Spark writes `<batch>.compact` instead, listing the files of all batches so
    far: that batch's own files are the ones no earlier batch listed.
    """
    batches: dict[int, list[list[dict]]] = {}
    seen: set[str] = set()
    metadata = sink / "_spark_metadata"
    logs = [p for p in metadata.iterdir() if p.name.removesuffix(".compact").isdigit()]
    for entry in sorted(logs, key=lambda p: int(p.name.removesuffix(".compact"))):
        lines = entry.read_text().splitlines()[1:]  # line 0 is the log version
        files = [json.loads(line)["path"].removeprefix("file://") for line in lines]
        own = [path for path in files if path not in seen]
        seen.update(own)
        batches[int(entry.name.removesuffix(".compact"))] = [pq.read_table(path).to_pylist() for path in own]
    return batches


def sink_rows(sink: Path) -> list[dict]:
    """Every committed row of a parquet file sink, batch by batch."""
    batches = sink_batches(sink) if (sink / "_spark_metadata").exists() else {}
    return [row for batch_id in sorted(batches) for rows in batches[batch_id] for row in rows]
