"""Shared by the examples: the demo store location (created on first use) and a Spark session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rmqstore.writer.demo import DEMO_SCENARIO

DEMO_STORE = Path(os.environ.get("RMQSTORE_DEMO_STORE",
                                 Path.home() / ".cache" / "rmqstore" / f"demo-store-v{DEMO_SCENARIO}"))
DEMO_BYTES = 64 * 1024 * 1024


def demo_store(path: Path = DEMO_STORE) -> str:
    """The demo store path, writing a 64 MiB demo store there first if it does not exist (the path names the
    scenario version, so a store an older rmqstore wrote is not taken for today's)."""
    if not (path / "commitlog").is_dir():
        from tqdm import tqdm

        from rmqstore.writer.demo import create_demo_store

        print(f"creating a {DEMO_BYTES >> 20} MiB demo store in {path} (once) ...", file=sys.stderr)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tqdm(total=DEMO_BYTES, unit="B", unit_scale=True, unit_divisor=1024, desc="demo store",
                  file=sys.stderr) as bar:
            create_demo_store(path, target_bytes=DEMO_BYTES, seed=1, progress=bar.update)
    return str(path)


def store_from_argv() -> str:
    """The store given as the first argument, else the demo store."""
    return sys.argv[1] if len(sys.argv) > 1 else demo_store()
