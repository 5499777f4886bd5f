"""Local files, memory-mapped read-only (mmap ACCESS_READ from an O_RDONLY descriptor) for scans; point
reads and many small scattered ranges are read with positioned reads from an O_RDONLY descriptor
advised `POSIX_FADV_RANDOM` instead (one compiled loop of `pread` calls): the kernel then reads just the
pages asked for, where a page fault in the map would read the read-ahead window around it. A file
opened with `random_access` has its map advised `MADV_RANDOM` (a fault reads the page it needs).

The map is never written, locked or extended; a broker may keep writing the file while we read it.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat
from collections.abc import Sequence

import numpy as np

from rmqstore.io.base import (
    FileEntry,
    IOStats,
    NotRegularFileError,
    RandomAccessFile,
    StoreFileSystem,
    check_range,
)
from rmqstore.speedups import NUMBA

if NUMBA:  # else every range is read by `os.preadv` (`LocalFile._read_rest`)
    from rmqstore.io.pread import pread_ranges

_EMPTY = np.zeros(0, dtype=np.uint8)
_EMPTY.flags.writeable = False


def special_kind(mode: int) -> str | None:
    """What a file of this `st_mode` is when it is neither a regular file nor a directory."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def open_regular(path: str) -> int:
    """An O_RDONLY descriptor of `path`, which must be a regular file (NotRegularFileError otherwise).

    Checked with stat before opening, so a FIFO is never opened (opening one blocks until a writer
    comes); opened non-blocking and checked again with fstat, so a file swapped in between cannot
    block either.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFileError(path, "a symbolic link loop") from None
        raise
    if stat.S_ISDIR(st.st_mode):
        raise NotRegularFileError(path, "a directory")
    what = special_kind(st.st_mode)
    if what is not None:
        raise NotRegularFileError(path, what)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    what = special_kind(os.fstat(fd).st_mode)
    if what is not None:
        os.close(fd)
        raise NotRegularFileError(path, what)
    return fd


def advise_random(fd: int) -> None:
    """Tell the kernel reads of this descriptor are random: no read-ahead (where the call exists)."""
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)


class LocalFile(RandomAccessFile):
    """A local file mapped once; `read` returns zero-copy views of the map (advised `MADV_RANDOM` with
    `random_access`), `read_at` and `read_ranges` fresh arrays filled by positioned reads."""

    zero_copy = True

    def __init__(self, path: str, stats: IOStats, *, random_access: bool = False) -> None:
        self.path = path
        self._stats = stats
        fd = open_regular(path)
        try:
            self.size = os.fstat(fd).st_size
            self._map = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if self.size else None
        finally:
            os.close(fd)
        if random_access and self._map is not None and hasattr(mmap, "MADV_RANDOM"):
            self._map.madvise(mmap.MADV_RANDOM)
        self._view = np.frombuffer(self._map, dtype=np.uint8) if self._map is not None else _EMPTY

    def read(self, offset: int, length: int) -> np.ndarray:
        check_range(offset, length)
        view = self._view[offset : offset + length]
        self._stats.record_read(self.path, len(view))
        return view

    def read_ranges(self, offsets: Sequence[int], lengths: Sequence[int]) -> np.ndarray:
        """`RandomAccessFile.read_ranges` by positioned reads (`pread`, one compiled loop) into one
        fresh array, from a descriptor advised random: only the pages of these ranges are read.

        For many small scattered ranges this is faster than touching the map: no page fault per
        touched page and nothing mapped to tear down.
        """
        starts, asked = (np.asarray(a, dtype=np.int64).reshape(-1) for a in (offsets, lengths))
        if len(starts) != len(asked):
            raise ValueError(f"{len(starts)} offsets but {len(asked)} lengths")
        bad = np.flatnonzero((starts < 0) | (asked < 0))
        if len(bad):
            check_range(int(starts[bad[0]]), int(asked[bad[0]]))
        wanted = np.minimum(asked, self.size - starts).clip(0)
        out = np.empty(int(wanted.sum()), dtype=np.uint8)
        fd = open_regular(self.path)
        try:
            advise_random(fd)
            got = pread_ranges(fd, starts, wanted, out) if NUMBA else -1
            if got < 0:
                self._read_rest(fd, starts, wanted, out, -1 - got)
        finally:
            os.close(fd)
        if len(starts):
            self._stats.record_read(self.path, len(out), len(starts))
        out.flags.writeable = False
        return out

    def _read_rest(self, fd: int, starts: np.ndarray, lengths: np.ndarray, out: np.ndarray,
                   first: int) -> None:
        """Ranges `first` on, where the compiled loop stopped, by `os.preadv` (which retries an
        interrupted read and raises the OSError of a failed one); a range the file no longer holds
        raises OSError naming the file and offset."""
        view, filled = memoryview(out), int(lengths[:first].sum())
        for o, n in zip(starts[first:].tolist(), lengths[first:].tolist(), strict=True):
            while n:
                got = os.preadv(fd, [view[filled : filled + n]], o)
                if got <= 0:
                    raise OSError(f"{self.path}: short read at offset {o}: file shrank below {self.size}")
                filled, o, n = filled + got, o + got, n - got

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
        """Entries sorted by name; entries that are special files or symlink loops come with `special`.

        Raises OSError for a directory that exists but cannot be listed (permissions, a loop).
        """
        try:
            with os.scandir(path) as entries:
                listed = [self._entry(e.name, e.path) for e in entries]
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted((e for e in listed if e is not None), key=lambda e: e.name)

    def info(self, path: str) -> FileEntry | None:
        return self._entry(os.path.basename(path.rstrip(os.sep)), path)

    def open(self, path: str, *, random_access: bool = False) -> LocalFile:
        return LocalFile(path, self.stats, random_access=random_access)

    @staticmethod
    def _entry(name: str, path: str) -> FileEntry | None:
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:  # a symlink loop (ELOOP), a name too long, no permission
            what = "a symbolic link loop" if exc.errno == errno.ELOOP else f"not readable ({exc.strerror})"
            return FileEntry(name=name, path=path, size=0, is_dir=False, special=what)
        is_dir = stat.S_ISDIR(st.st_mode)
        return FileEntry(name=name, path=path, size=0 if is_dir else st.st_size, is_dir=is_dir,
                         special=special_kind(st.st_mode))
