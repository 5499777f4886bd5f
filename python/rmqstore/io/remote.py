"""Remote file systems through pyarrow.fs (s3://, gs://, hdfs://, ...) with ranged reads.

Files are opened with `open_input_file` and read with `read_at`, so a lookup reads a few kilobytes
of a 1 GiB segment, not the segment. Many scattered ranges (`read_ranges`) are coalesced: ranges
less than `COALESCE_GAP` apart share one request (the hole is downloaded too), no request grows past
`MAX_COALESCED` unless one range is that long, and the requests run `CONCURRENT_REQUESTS` at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow.fs as pafs

from rmqstore.io.base import FileEntry, IOStats, RandomAccessFile, StoreFileSystem, check_range

COALESCE_GAP = 8 << 10
"""Ranges closer than this are fetched by one request (Arrow's `CacheOptions.hole_size_limit`)."""
MAX_COALESCED = 8 << 20
"""Ranges are merged into one request up to this size (`REMOTE_WINDOW` of the commit log)."""
CONCURRENT_REQUESTS = 8


def coalesce(offsets: Sequence[int], lengths: Sequence[int], gap: int = COALESCE_GAP,
             limit: int = MAX_COALESCED) -> list[tuple[int, int]]:
    """The requests [start, end) that fetch the given non-empty ranges: sorted, merged where less than
    `gap` apart while a request stays within `limit` bytes."""
    requests: list[tuple[int, int]] = []
    for start, end in sorted((o, o + n) for o, n in zip(offsets, lengths, strict=True) if n > 0):
        last_start, last_end = requests[-1] if requests else (0, -gap)
        if start - last_end < gap and max(end, last_end) - last_start <= limit:
            requests[-1] = (last_start, max(end, last_end))
        else:
            requests.append((start, end))
    return requests


class ArrowFile(RandomAccessFile):
    """A remote file read with positioned ranged reads; every `read` is one request."""

    zero_copy = False

    def __init__(self, handle: pafs.NativeFile, path: str, size: int, stats: IOStats) -> None:
        self.path = path
        self.size = size
        self._handle = handle
        self._stats = stats

    def read(self, offset: int, length: int) -> np.ndarray:
        check_range(offset, length)
        data = self._fetch(offset, length)
        self._stats.record_read(self.path, len(data))
        return data

    def _fetch(self, offset: int, length: int) -> np.ndarray:
        """One ranged request (clipped to the file), not counted: safe to run on several threads."""
        length = max(0, min(length, self.size - offset))
        data = self._handle.read_at(length, offset) if length else b""
        if len(data) != length:
            raise OSError(f"{self.path}: short read at offset {offset}: {len(data)} of {length} bytes")
        return np.frombuffer(data, dtype=np.uint8)

    def read_ranges(self, offsets: Sequence[int], lengths: Sequence[int]) -> np.ndarray:
        """`RandomAccessFile.read_ranges` in few requests (`coalesce`), run concurrently."""
        for o, n in zip(offsets, lengths, strict=True):
            check_range(o, n)
        spans = [(o, max(0, min(n, self.size - o))) for o, n in zip(offsets, lengths, strict=True)]
        requests = coalesce([o for o, _ in spans], [n for _, n in spans])
        if len(requests) > 1:
            with ThreadPoolExecutor(min(CONCURRENT_REQUESTS, len(requests))) as pool:
                fetched = list(pool.map(lambda r: self._fetch(r[0], r[1] - r[0]), requests))
        else:
            fetched = [self._fetch(a, b - a) for a, b in requests]
        for data in fetched:
            self._stats.record_read(self.path, len(data))
        starts = [a for a, _ in requests]
        parts = []
        for o, n in spans:
            if n:
                i = int(np.searchsorted(starts, o, side="right")) - 1
                parts.append(fetched[i][o - starts[i] : o - starts[i] + n])
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)

    def close(self) -> None:
        self._handle.close()


class CachedPages(RandomAccessFile):
    """A remote file whose small reads go through aligned pages of `PAGE_SIZE` bytes that are kept (up
    to `MAX_PAGES`, the oldest dropped first): for random reads that come back near each other, like
    index chain walks (entries of one key a few hundred entries apart share a page). The missing pages
    of one `read_ranges` call are fetched together (`ArrowFile.read_ranges`); ranges longer than
    `BYPASS_BYTES` are read directly."""

    PAGE_SIZE = 4096
    MAX_PAGES = 16384
    """64 MiB: the pages of a few thousand probes (a slot and an entry each)."""
    BYPASS_BYTES = 64 << 10

    def __init__(self, inner: RandomAccessFile) -> None:
        self.path = inner.path
        self.size = inner.size
        self.zero_copy = inner.zero_copy
        self._inner = inner
        self._pages: dict[int, np.ndarray] = {}

    def read(self, offset: int, length: int) -> np.ndarray:
        return self.read_ranges([offset], [length])

    def read_ranges(self, offsets: Sequence[int], lengths: Sequence[int]) -> np.ndarray:
        page = self.PAGE_SIZE
        spans = []
        for o, n in zip(offsets, lengths, strict=True):
            check_range(o, n)
            spans.append((o, max(0, min(n, self.size - o))))
        small = [(o, n) for o, n in spans if 0 < n <= self.BYPASS_BYTES]
        big = [(o, n) for o, n in spans if n > self.BYPASS_BYTES]
        for old in list(self._pages)[: max(0, len(self._pages) - self.MAX_PAGES)]:
            del self._pages[old]
        wanted = {p for o, n in small for p in range(o // page, (o + n - 1) // page + 1)}
        missing = sorted(wanted - self._pages.keys())
        if missing:
            data = self._inner.read_ranges([p * page for p in missing], [page] * len(missing))
            at = 0
            for p in missing:
                length = min(page, self.size - p * page)
                self._pages[p] = data[at : at + length]
                at += length
        direct = self._inner.read_ranges([o for o, _ in big], [n for _, n in big]) if big else None
        parts, at = [], 0
        for o, n in spans:
            if n > self.BYPASS_BYTES:
                parts.append(direct[at : at + n])
                at += n
            elif n:
                first, last = o // page, (o + n - 1) // page
                joined = np.concatenate([self._pages[p] for p in range(first, last + 1)])
                parts.append(joined[o - first * page : o - first * page + n])
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)

    def close(self) -> None:
        """Drop the pages; the inner file stays open (it belongs to whoever opened it)."""
        self._pages.clear()


class ArrowFileSystem(StoreFileSystem):
    """Any `pyarrow.fs.FileSystem`; paths are that file system's paths (for S3: `bucket/key`)."""

    def __init__(self, filesystem: pafs.FileSystem, stats: IOStats | None = None) -> None:
        self.filesystem = filesystem
        self.stats = stats if stats is not None else IOStats()

    def join(self, base: str, *names: str) -> str:
        return "/".join([base.rstrip("/"), *names]) if base else "/".join(names)

    def list_dir(self, path: str) -> list[FileEntry]:
        selector = pafs.FileSelector(path, allow_not_found=True, recursive=False)
        entries = [self._entry(info) for info in self.filesystem.get_file_info(selector)]
        return sorted(entries, key=lambda e: e.name)

    def info(self, path: str) -> FileEntry | None:
        found = self.filesystem.get_file_info(path)
        return None if found.type == pafs.FileType.NotFound else self._entry(found)

    def open(self, path: str, *, random_access: bool = False) -> ArrowFile:
        """`StoreFileSystem.open`: every read is a ranged request of what it asks, `random_access` or not."""
        entry = self.info(path)
        if entry is None or entry.is_dir:
            raise FileNotFoundError(f"{path}: no such file")
        return ArrowFile(self.filesystem.open_input_file(path), path, entry.size, self.stats)

    @staticmethod
    def _entry(info: pafs.FileInfo) -> FileEntry:
        is_dir = info.type == pafs.FileType.Directory
        return FileEntry(name=info.base_name, path=info.path, size=0 if is_dir else int(info.size or 0),
                         is_dir=is_dir, mtime_ns=None if is_dir else info.mtime_ns)
