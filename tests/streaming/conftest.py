"""Fixtures of the streaming suite: one Spark session, stores written by a broker stand-in, sink readers."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from live_broker import LiveBroker, message

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def spark() -> Iterator:
    from rmqstore.spark import RmqStoreDataSource
    from rmqstore.spark import session as rmq_session

    spark_session = rmq_session("local[2]", "rmqstore-streaming-tests", spark__ui__enabled="false",
                                spark__sql__shuffle__partitions="2")
    spark_session.sparkContext.setLogLevel("ERROR")
    spark_session.dataSource.register(RmqStoreDataSource)
    yield spark_session
    spark_session.stop()


def write_store(root: Path, count: int, *, segment_size: int = 2048, first: int = 0,
                broker: LiveBroker | None = None, close: bool = True) -> list[dict]:
    """Append `count` test messages at once (no pauses); returns their manifest entries."""
    broker = broker or LiveBroker(root, segment_size, piece_sleep=0)
    rng = random.Random(first)
    entries = [broker.append(*message(index, rng)) for index in range(first, first + count)]
    if close:
        broker.close(clean=True)
    return entries


class Appender:
    """`live_broker.py` in a separate process: appends slowly, in pieces, with segment roll-over."""

    def __init__(self, store: Path, manifest: Path, *, messages: int, segment_size: int, sleep: float,
                 torn_tail: bool) -> None:
        self.manifest = manifest
        args = [sys.executable, str(HERE / "live_broker.py"), "--store", str(store),
                "--manifest", str(manifest), "--messages", str(messages),
                "--segment-size", str(segment_size), "--sleep", str(sleep)]
        if torn_tail:
            args.append("--torn-tail")
        self.process = subprocess.Popen(args, env={**os.environ, "PYTHONPATH": str(HERE)})

    def written(self) -> list[dict]:
        if not self.manifest.exists():
            return []
        return [json.loads(line) for line in self.manifest.read_text().splitlines() if line.endswith("}")]

    def wait(self, timeout: float = 120) -> None:
        assert self.process.wait(timeout=timeout) == 0

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def appender() -> Iterator[Callable[..., Appender]]:
    started: list[Appender] = []

    def start(store: Path, manifest: Path, **kwargs) -> Appender:
        started.append(Appender(store, manifest, **kwargs))
        return started[-1]

    yield start
    for running in started:
        running.kill()


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
    """
    batches: dict[int, list[list[dict]]] = {}
    metadata = sink / "_spark_metadata"
    for entry in sorted((p for p in metadata.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        lines = entry.read_text().splitlines()[1:]  # line 0 is the log version
        files = [json.loads(line)["path"].removeprefix("file://") for line in lines]
        batches[int(entry.name)] = [pq.read_table(path).to_pylist() for path in files]
    return batches


def sink_rows(sink: Path) -> list[dict]:
    """Every committed row of a parquet file sink, batch by batch."""
    batches = sink_batches(sink) if (sink / "_spark_metadata").exists() else {}
    return [row for batch_id in sorted(batches) for rows in batches[batch_id] for row in rows]
