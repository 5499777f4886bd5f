"""Local files, memory-mapped read-only (mmap ACCESS_READ from an O_RDONLY descriptor); many small
scattered ranges are read with positioned reads from an O_RDONLY descriptor instead.

The map is never written, locked or extended; a broker may keep writing the file while we read it.
"""

from __future__ import annotations

import mmap
import os
import stat
from collections.abc import Sequence

import numpy as np

from rmqstore.io.base import FileEntry, IOStats, RandomAccessFile, StoreFileSystem, check_range

_EMPTY = np.zeros(0, dtype=np.uint8)
_EMPTY.flags.writeable = False


class LocalFile(RandomAccessFile):
    """A local file mapped once; `read` returns zero-copy views of the map."""

    zero_copy = True

    def __init__(self, path: str, stats: IOStats) -> None:
        self.path = path
        self._stats = stats
        fd = os.open(path, os.O_RDONLY)
        try:
            self.size = os.fstat(fd).st_size
            self._map = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if self.size else None
        finally:
            os.close(fd)
        self._view = np.frombuffer(self._map, dtype=np.uint8) if self._map is not None else _EMPTY
        stats.files_opened += 1

    def read(self, offset: int, length: int) -> np.ndarray:
        check_range(offset, length)
        view = self._view[offset : offset + length]
        self._stats.record_read(self.path, len(view))
        return view

    def read_ranges(self, offsets: Sequence[int], lengths: Sequence[int]) -> np.ndarray:
        """`RandomAccessFile.read_ranges` by positioned reads (`preadv`) into one fresh array.

        For many small scattered ranges this is about twice as fast as slicing the map: it takes
        no page fault per touched page and leaves nothing mapped to tear down.
        """
        for o, n in zip(offsets, lengths, strict=True):
            check_range(o, n)
        out = bytearray(sum(max(0, min(n, self.size - o)) for o, n in zip(offsets, lengths, strict=True)))
        view, filled = memoryview(out), 0
        fd = os.open(self.path, os.O_RDONLY)
        try:
            for o, n in zip(offsets, lengths, strict=True):
                n = max(0, min(n, self.size - o))
                while n:
                    got = os.preadv(fd, [view[filled : filled + n]], o)
                    if got <= 0:
                        raise OSError(f"{self.path}: short read at offset {o}: file shrank below {self.size}")
                    filled, o, n = filled + got, o + got, n - got
        finally:
            os.close(fd)
        self._stats.bytes_read += filled
        self._stats.read_calls += len(offsets)
        if len(offsets):
            self._stats.paths_read.add(self.path)
        data = np.frombuffer(out, dtype=np.uint8)
        data.flags.writeable = False
        return data

    def close(self) -> None:
        # Views handed out keep the map alive; dropping our references lets it unmap when they go.
        self._view = _EMPTY
        self._map = None


class LocalFileSystem(StoreFileSystem):
    """Plain directories on this machine."""

    def __init__(self, stats: IOStats | None = None) -> None:
        self.stats = stats if stats is not None else IOStats()

    def join(self, base: str, *names: str) -> str:
        return os.path.join(base, *names)

    def list_dir(self, path: str) -> list[FileEntry]:
        try:
            with os.scandir(path) as entries:
                listed = [self._entry(e.name, e.path) for e in entries]
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted((e for e in listed if e is not None), key=lambda e: e.name)

    def info(self, path: str) -> FileEntry | None:
        return self._entry(os.path.basename(path.rstrip(os.sep)), path)

    def open(self, path: str) -> LocalFile:
        return LocalFile(path, self.stats)

    @staticmethod
    def _entry(name: str, path: str) -> FileEntry | None:
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        is_dir = stat.S_ISDIR(st.st_mode)
        return FileEntry(name=name, path=path, size=0 if is_dir else st.st_size, is_dir=is_dir)
