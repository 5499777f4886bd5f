"""Local files, memory-mapped read-only (mmap ACCESS_READ from an O_RDONLY descriptor).

The map is never written, locked or extended; a broker may keep writing the file while we read it.
"""

from __future__ import annotations

import mmap
import os
import stat

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
