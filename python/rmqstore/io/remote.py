"""Remote file systems through pyarrow.fs (s3://, gs://, hdfs://, ...) with ranged reads.

Files are opened with `open_input_file` and read with `read_at`, so a lookup reads a few kilobytes
of a 1 GiB segment, not the segment.
"""

from __future__ import annotations

import numpy as np
import pyarrow.fs as pafs

from rmqstore.io.base import FileEntry, IOStats, RandomAccessFile, StoreFileSystem, check_range


class ArrowFile(RandomAccessFile):
    """A remote file read with positioned ranged reads; every `read` is one request."""

    zero_copy = False

    def __init__(self, handle: pafs.NativeFile, path: str, size: int, stats: IOStats) -> None:
        self.path = path
        self.size = size
        self._handle = handle
        self._stats = stats
        stats.files_opened += 1

    def read(self, offset: int, length: int) -> np.ndarray:
        check_range(offset, length)
        length = max(0, min(length, self.size - offset))
        data = self._handle.read_at(length, offset) if length else b""
        if len(data) != length:
            raise OSError(f"{self.path}: short read at offset {offset}: {len(data)} of {length} bytes")
        self._stats.record_read(self.path, length)
        return np.frombuffer(data, dtype=np.uint8)

    def close(self) -> None:
        self._handle.close()


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

    def open(self, path: str) -> ArrowFile:
        entry = self.info(path)
        if entry is None or entry.is_dir:
            raise FileNotFoundError(f"{path}: no such file")
        return ArrowFile(self.filesystem.open_input_file(path), path, entry.size, self.stats)

    @staticmethod
    def _entry(info: pafs.FileInfo) -> FileEntry:
        is_dir = info.type == pafs.FileType.Directory
        return FileEntry(name=info.base_name, path=info.path, size=0 if is_dir else int(info.size or 0),
                         is_dir=is_dir)
