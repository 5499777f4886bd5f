"""The random-access read interface every store file goes through.

A `StoreFileSystem` lists directories and opens files; a `RandomAccessFile` hands out byte ranges as
read-only numpy uint8 arrays (zero-copy views for local memory maps, fresh buffers for remote ranged
reads). Nothing here can write, lock or create a file.

Two access patterns (design §4.5), chosen by the caller that knows which it makes: `read` for scans (a
local file's map, which the kernel reads ahead of the pages touched) and `read_at` / `read_ranges` for
point and planning reads (a record, a header, a probe: a local file is read by positioned reads of just
those bytes, since a page fault in a map reads the whole read-ahead window around the page, megabytes).
Files only ever probed (index files) are opened with `random_access`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass
class IOStats:
    """Counters of what the I/O layer really read; tests use them to prove pushdown."""

    bytes_read: int = 0
    """Bytes handed out by `RandomAccessFile.read` (views of a local map count as read); for a remote
    file, the bytes downloaded (coalesced ranged requests include the small holes between ranges)."""
    read_calls: int = 0
    """Reads; for a remote file, ranged requests."""
    paths_read: set[str] = field(default_factory=set)
    """Every file a byte was read from."""
    bytes_by_path: dict[str, int] = field(default_factory=dict)
    """`bytes_read` per file."""

    def record_read(self, path: str, length: int, calls: int = 1) -> None:
        self.bytes_read += length
        self.read_calls += calls
        self.paths_read.add(path)
        self.bytes_by_path[path] = self.bytes_by_path.get(path, 0) + length

    def reset(self) -> None:
        """Zero every counter (the object stays shared with the file system that updates it)."""
        for name, value in vars(type(self)()).items():
            setattr(self, name, value)


@dataclass(frozen=True)
class FileEntry:
    """One directory entry."""

    name: str
    path: str
    size: int
    is_dir: bool
    special: str | None = None
    """Why this is neither a regular file nor a directory ("a FIFO", "a symbolic link loop"...);
    None for regular files and directories. Special entries are never opened."""
    mtime_ns: int | None = None
    """Last modification of a remote file as listed (an S3 object's upload time); None for local files
    (whose mtime is read when needed: it changes while a broker writes) and when not listed."""


class NotRegularFileError(OSError):
    """A path that is not a regular file (FIFO, socket, device, symlink loop): never opened for reading."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(f"{path}: {what}, not a regular file")
        self.path = path
        self.what = what


class RandomAccessFile(ABC):
    """A file opened for positioned reads."""

    path: str
    size: int
    zero_copy: bool
    """True when `read` returns views of a memory map: large reads cost nothing until touched."""

    def __len__(self) -> int:
        """The file's size: with `read_ranges`, a file is a `format.indexfile.ByteSource`."""
        return self.size

    @abstractmethod
    def read(self, offset: int, length: int) -> np.ndarray:
        """Bytes [offset, offset + length) clipped to the end of the file, as a read-only uint8 array.

        Raises ValueError for a negative offset or length.
        """

    def read_at(self, offset: int, length: int) -> np.ndarray:
        """`read` for a point read: just these bytes, nothing read ahead around them (`read_ranges`)."""
        return self.read_ranges([offset], [length])

    def read_ranges(self, offsets: Sequence[int], lengths: Sequence[int]) -> np.ndarray:
        """The bytes of several ranges, each clipped like `read`, concatenated into one array; no more
        than these ranges is read (point reads: module docstring)."""
        if not len(offsets):
            return np.zeros(0, dtype=np.uint8)
        return np.concatenate([self.read(o, n) for o, n in zip(offsets, lengths, strict=True)])

    @abstractmethod
    def close(self) -> None:
        """Release the file; arrays handed out earlier stay valid."""


class StoreFileSystem(ABC):
    """Directory listing and read-only file access, local or remote."""

    stats: IOStats

    @abstractmethod
    def join(self, base: str, *names: str) -> str:
        """`base/name/...` in this file system's path syntax."""

    @abstractmethod
    def list_dir(self, path: str) -> list[FileEntry]:
        """Entries of a directory sorted by name; an empty list when it does not exist."""

    @abstractmethod
    def info(self, path: str) -> FileEntry | None:
        """The entry for `path`, None when nothing is there."""

    @abstractmethod
    def open(self, path: str, *, random_access: bool = False) -> RandomAccessFile:
        """Open a file for positioned reads; FileNotFoundError naming the path when it is missing,
        NotRegularFileError (without opening it) when it is a FIFO, socket, device or directory.
        `random_access`: the file is only probed, never scanned, so even `read` reads nothing ahead."""

    def exists(self, path: str) -> bool:
        return self.info(path) is not None

    def is_dir(self, path: str) -> bool:
        entry = self.info(path)
        return entry is not None and entry.is_dir

    def size(self, path: str) -> int:
        entry = self.info(path)
        if entry is None or entry.is_dir:
            raise FileNotFoundError(f"{path}: no such file")
        return entry.size

    def read_bytes(self, path: str) -> bytes:
        """The whole file as bytes (for small files: checkpoint, JSON config)."""
        handle = self.open(path)
        try:
            return handle.read(0, handle.size).tobytes()
        finally:
            handle.close()


def check_range(offset: int, length: int) -> None:
    if offset < 0 or length < 0:
        raise ValueError(f"invalid read range: offset {offset}, length {length}")
