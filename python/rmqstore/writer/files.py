"""File helpers shared by the writers: pre-sized files and store file names (spec §1.2)."""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path

import numpy as np

_ZERO_RUN = 1 << 20


def offset_file_name(offset: int) -> str:
    """Segment name: the byte offset of its first byte as a 20-digit zero-padded decimal (§1.2)."""
    return f"{offset:020d}"


def index_file_name(epoch_ms: int) -> str:
    """IndexFile name: `yyyyMMddHHmmssSSS` of `epoch_ms` in the local time zone (§1.2)."""
    local = datetime.datetime.fromtimestamp(epoch_ms / 1000)
    return local.strftime("%Y%m%d%H%M%S") + f"{epoch_ms % 1000:03d}"


def write_presized(path: Path, data: bytes | bytearray | memoryview, size: int) -> None:
    """Write `data` at the start of a file of exactly `size` bytes; the rest reads as zeros.

    Like a broker's mapped file, the file has its full size from the start. Runs of zero bytes are
    skipped (left as holes) so large, mostly empty files cost no disk space and no write time.
    """
    if len(data) > size:
        raise ValueError(f"{path}: {len(data)} bytes do not fit a file of {size} bytes")
    view = memoryview(data).cast("B")
    with open(path, "wb") as out:
        out.truncate(size)
        for start in range(0, len(view), _ZERO_RUN):
            chunk = view[start : start + _ZERO_RUN]
            if np.frombuffer(chunk, dtype=np.uint8).any():
                out.seek(start)
                out.write(chunk)


def ensure_empty_store_dir(path: Path, store_entries: tuple[str, ...], overwrite: bool) -> None:
    """Create `path`, refusing a non-empty directory unless `overwrite`.

    With `overwrite`, only the store's own entries (`store_entries`) are removed; any other file
    in the directory is an error, so a wrong path never loses unrelated data.
    """
    path.mkdir(parents=True, exist_ok=True)
    existing = sorted(p.name for p in path.iterdir())
    if not existing:
        return
    if not overwrite:
        raise FileExistsError(f"{path} is not empty ({', '.join(existing[:5])}...); pass overwrite=True")
    foreign = [name for name in existing if name not in store_entries]
    if foreign:
        raise FileExistsError(f"{path} holds files that are not part of a store: {', '.join(foreign[:5])}")
    for name in existing:
        entry = path / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
