"""Where rmqstore keeps caches of its own (compiled kernels, consume-queue coverage), and how old
marker files go.

Never inside a store directory: stores are opened read-only.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

CACHE_DIR_ENV = "RMQSTORE_CACHE_DIR"
SWEEP_STAMP = ".swept"
SWEEP_EVERY_S = 3600


def cache_root() -> Path:
    """`$RMQSTORE_CACHE_DIR`, else `$XDG_CACHE_HOME/rmqstore`, else `~/.cache/rmqstore`."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rmqstore"


def remove_old_entries(directory: Path, max_age_s: float, every_s: float = SWEEP_EVERY_S) -> None:
    """Delete the entries (files or trees) of `directory` not modified for `max_age_s`.

    Sweeps at most once per `every_s`: the mtime of `directory/.swept` records the last sweep, so a
    call costs one stat, not one per entry (directories of per-query markers hold thousands)."""
    stamp = directory / SWEEP_STAMP
    now = time.time()
    try:
        if now - stamp.stat().st_mtime < every_s:
            return
    except FileNotFoundError:
        pass
    try:
        stamp.touch()
        entries = list(directory.iterdir())
    except OSError:
        return  # no directory, or not writable: nothing to sweep
    cutoff = now - max_age_s
    for entry in entries:
        try:
            if entry.name == SWEEP_STAMP or entry.lstat().st_mtime >= cutoff:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink()
        except OSError:
            continue
