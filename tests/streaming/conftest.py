"""Fixtures of the streaming suite: one Spark session, stores written by a broker stand-in, sink readers."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

LIVE_BROKER = Path(__file__).parents[1] / "helpers" / "live_broker.py"


class Appender:
    """`live_broker.py` in a separate process: appends slowly, in pieces, with segment roll-over."""

    def __init__(self, store: Path, manifest: Path, *, messages: int, segment_size: int, sleep: float,
                 torn_tail: bool) -> None:
        self.manifest = manifest
        args = [sys.executable, str(LIVE_BROKER), "--store", str(store),
                "--manifest", str(manifest), "--messages", str(messages),
                "--segment-size", str(segment_size), "--sleep", str(sleep)]
        if torn_tail:
            args.append("--torn-tail")
        self.process = subprocess.Popen(args)

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
