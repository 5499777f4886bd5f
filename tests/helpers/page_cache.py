"""The page cache of store files, for tests and benchmarks of cold reads (design §4.5): drop a file's
pages (`posix_fadvise(DONTNEED)` after `fsync`, no root needed) and count the bytes resident (`mincore`
over a map that is never touched, so mapping it reads nothing)."""

from __future__ import annotations

import ctypes
import mmap
import os
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def store_files(root: Path) -> list[Path]:
    """Every regular file under `root`."""
    return sorted(p for p in root.rglob("*") if p.is_file())


def drop_page_cache(paths: Iterable[Path]) -> None:
    """Write back and evict every page of these files from the page cache."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # dirty pages are not dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def page_cache_droppable(directory: Path) -> bool:
    """False on a file system that keeps its files in memory (tmpfs): no page cache to drop there."""
    with tempfile.NamedTemporaryFile(dir=directory) as scratch:
        scratch.write(b"x" * mmap.PAGESIZE)
        scratch.flush()
        drop_page_cache([Path(scratch.name)])
        return resident_bytes([Path(scratch.name)]) == 0


def drop_store_cache(store: Path, spark) -> None:
    """Drop every page of the store's files. Pages a JVM still maps cannot be dropped: a map the JVM no
    longer uses goes with a garbage collection (Java 17 cannot unmap), so collect and retry for a while."""
    files = store_files(store)
    for _ in range(20):
        spark._jvm.java.lang.System.gc()
        drop_page_cache(files)
        if not resident_bytes(files):
            return
        time.sleep(0.25)
    raise AssertionError(f"{resident_bytes(files)} bytes of {store} stay in the page cache (mapped)")


def resident_bytes(paths: Iterable[Path]) -> int:
    """Bytes of these files in the page cache (whole pages, clipped to each file's size)."""
    total = 0
    for path in paths:
        size = os.path.getsize(path)
        if not size:
            continue
        with open(path, "rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            pages = np.zeros((size + mmap.PAGESIZE - 1) // mmap.PAGESIZE, dtype=np.uint8)
            view = np.frombuffer(mapped, dtype=np.uint8)
            failed = _LIBC.mincore(view.ctypes.data, size, pages.ctypes.data)
            del view
            if failed:
                raise OSError(ctypes.get_errno(), f"{path}: mincore failed")
        finally:
            mapped.close()
        total += min(int(np.count_nonzero(pages & 1)) * mmap.PAGESIZE, size)
    return total
