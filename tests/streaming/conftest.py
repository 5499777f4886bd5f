"""Fixtures of the streaming suite: one Spark session, stores written by a broker stand-in, sink readers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent


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
        path = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)
        self.process = subprocess.Popen(args, env={**os.environ, "PYTHONPATH": path})

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
