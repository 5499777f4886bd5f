"""Where rmqstore keeps caches of its own (compiled kernels, consume-queue coverage).

Never inside a store directory: stores are opened read-only.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_ENV = "RMQSTORE_CACHE_DIR"


def cache_root() -> Path:
    """`$RMQSTORE_CACHE_DIR`, else `$XDG_CACHE_HOME/rmqstore`, else `~/.cache/rmqstore`."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rmqstore"
