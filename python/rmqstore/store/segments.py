"""Segment files: listing (several directories merge, §1.1), and one open-file cache per store.

Commit-log and consume-queue segments are named by the offset of their first byte (§1.2); the
listing of every directory is merged and sorted by that offset, like `MultiPathMappedFileQueue`.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from rmqstore.io.base import FileEntry, NotRegularFileError, RandomAccessFile, StoreFileSystem
from rmqstore.store.errors import StoreLayoutError, UnreadableFileError
from rmqstore.store.names import JAVA_LONG_MAX, parse_segment_name


@dataclass(frozen=True)
class Segment:
    """One segment file: its first byte is at `base_offset` of the log's address space."""

    base_offset: int
    path: str
    size: int
    mtime_ns: int | None = field(default=None, compare=False)
    """A remote file's listed modification time (`FileEntry.mtime_ns`), None for local files."""

    @property
    def end_offset(self) -> int:
        """One past the last byte of the file."""
        return self.base_offset + self.size

    def contains(self, offset: int) -> bool:
        return self.base_offset <= offset < self.end_offset


def list_segments(fs: StoreFileSystem, directories: Sequence[str], *,
                  skip_unreadable: bool = False) -> tuple[list[Segment], list[str]]:
    """Segments of every directory, sorted by base offset, and the problems found on the way.

    Files not named by 20 digits are ignored; zero-length files are left out (the broker deletes an
    empty last file, §1.2) and reported; so are files whose last byte would lie past Long.MAX_VALUE
    (no broker writes them; its `Long.parseLong` of the name fails). The same name in two
    directories is a StoreLayoutError. A segment-named entry that is not a regular file (FIFO,
    socket, device, symbolic link loop) is an UnreadableFileError, or with `skip_unreadable`
    reported and left out.
    """
    found: dict[int, Segment] = {}
    problems: list[str] = []
    for directory in directories:
        for entry in list_entries(fs, directory):
            base = parse_segment_name(entry.name)
            if base is None or entry.is_dir:
                continue
            if entry.special is not None:
                if not skip_unreadable:
                    raise UnreadableFileError(entry.path, entry.special)
                problems.append(f"{entry.path}: {entry.special}, not a segment file; ignored")
                continue
            if base + max(entry.size, 1) - 1 > JAVA_LONG_MAX:
                problems.append(f"{entry.path}: ends past Long.MAX_VALUE ({JAVA_LONG_MAX}); ignored")
                continue
            if entry.size == 0:
                problems.append(f"{entry.path}: empty segment file ignored")
                continue
            if base in found:
                raise StoreLayoutError(
                    f"segment {entry.name} exists twice: {found[base].path} and {entry.path}"
                )
            found[base] = Segment(base, entry.path, entry.size, entry.mtime_ns)
    segments = [found[base] for base in sorted(found)]
    return segments, problems + _layout_problems(segments)


def common_segment_size(segments: Sequence[Segment]) -> int:
    """The size most segments have (all of them, in a healthy store); 0 without segments."""
    if not segments:
        return 0
    return Counter(s.size for s in segments).most_common(1)[0][0]


def _layout_problems(segments: Sequence[Segment]) -> list[str]:
    problems = []
    size = common_segment_size(segments)
    for seg in segments:
        if seg.size != size:
            problems.append(f"{seg.path}: {seg.size} bytes, the other segments have {size}")
    for prev, seg in pairwise(segments):
        if prev.end_offset > seg.base_offset:
            raise StoreLayoutError(f"{prev.path} ({prev.size} bytes) overlaps {seg.path}")
        if prev.end_offset < seg.base_offset:
            problems.append(f"missing segment(s) between {prev.path} and {seg.path}")
    return problems


def find_segment(segments: Sequence[Segment], offset: int) -> Segment | None:
    """The segment holding byte `offset`, by binary search; None when no file covers it."""
    lo, hi = 0, len(segments)
    while lo < hi:
        mid = (lo + hi) // 2
        if segments[mid].base_offset <= offset:
            lo = mid + 1
        else:
            hi = mid
    if lo == 0:
        return None
    seg = segments[lo - 1]
    return seg if seg.contains(offset) else None


def segment_indexes(segments: Sequence[Segment], offsets: np.ndarray) -> np.ndarray:
    """The index of the segment holding each byte offset (`find_segment` for many), -1 where no file
    covers it."""
    if not segments:
        return np.full(len(offsets), -1, dtype=np.int64)
    bases = np.asarray([seg.base_offset for seg in segments], dtype=np.int64)
    ends = np.asarray([seg.end_offset for seg in segments], dtype=np.int64)
    index = np.searchsorted(bases, offsets, side="right") - 1
    return np.where((index >= 0) & (offsets < ends[np.maximum(index, 0)]), index, -1)


def _cause(exc: OSError) -> str:
    if isinstance(exc, NotRegularFileError):
        return exc.what
    return exc.strerror or str(exc)


def list_entries(fs: StoreFileSystem, directory: str) -> list[FileEntry]:
    """`fs.list_dir`, with a directory that exists but cannot be listed as an UnreadableFileError."""
    try:
        return fs.list_dir(directory)
    except OSError as exc:
        raise UnreadableFileError(directory, _cause(exc)) from None


def read_small_file(fs: StoreFileSystem, path: str) -> bytes:
    """`fs.read_bytes`, with a file that cannot be read (special, looping, a directory) as an
    UnreadableFileError."""
    try:
        return fs.read_bytes(path)
    except OSError as exc:
        raise UnreadableFileError(path, _cause(exc)) from None


MAX_OPEN_FILES = 256
"""Files `OpenFiles` keeps open at most: a local file's map holds a descriptor (CPython's mmap keeps a
duplicate), so a store of 24,000 consume-queue files planned with every file kept would pass a process's
open-files limit (`ulimit -n`)."""


class OpenFiles:
    """Files opened on first use and kept for the life of a Store (memory maps or remote handles), the
    `MAX_OPEN_FILES` most recently used: the least recently used beyond them is dropped from the cache,
    not closed (a reader still holding it keeps reading it; it is released with its last reference)."""

    def __init__(self, fs: StoreFileSystem, max_open: int = MAX_OPEN_FILES) -> None:
        self.fs = fs
        self._max_open = max_open
        self._files: OrderedDict[str, RandomAccessFile] = OrderedDict()

    def get(self, path: str, *, random_access: bool = False) -> RandomAccessFile:
        """The file, opened on first use (`random_access` then, as `StoreFileSystem.open` says)."""
        handle = self._files.get(path)
        if handle is not None:
            self._files.move_to_end(path)
            return handle
        try:
            handle = self._files[path] = self.fs.open(path, random_access=random_access)
        except OSError as exc:
            raise UnreadableFileError(path, _cause(exc)) from None
        if len(self._files) > self._max_open:
            self._files.popitem(last=False)
        return handle

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._files.clear()
