"""Where rmqstore keeps caches of its own (compiled kernels, consume-queue coverage), and how old
marker files go.

Never inside a store directory: stores are opened read-only.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

CACHE_DIR_ENV = "RMQSTORE_CACHE_DIR"
SWEEP_STAMP = ".swept"
SWEEP_EVERY_S = 3600


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """The rule both engines follow (the JVM's `SegmentCache.rootFor`): `$RMQSTORE_CACHE_DIR`, else
    `$XDG_CACHE_HOME/rmqstore`, else `$HOME/.cache/rmqstore`, else the account's home directory (the
    JVM's `user.home`) `/.cache/rmqstore`; unset or empty variables do not count. `environ`: this
    process's environment unless given."""
    env = os.environ if environ is None else environ
    if env.get(CACHE_DIR_ENV):
        return Path(env[CACHE_DIR_ENV])
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"], "rmqstore")
    return Path(env.get("HOME") or _account_home(), ".cache", "rmqstore")


def _account_home() -> str:
    """The home directory of this process's user account, as the JVM's `user.home` (not `$HOME`)."""
    import pwd

    return pwd.getpwuid(os.getuid()).pw_dir


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
