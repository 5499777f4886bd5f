"""The `index/` directory: index files listed oldest -> newest by name (§1.2, §5.7), geometry, probes.

Each file's geometry (hash slots S, entries N) is detected from the file (`detect_geometry`) unless
the user gave it. A remote file is never read whole to probe it: the header, the sampled slots and
entries of the geometry check and, per probe, one slot and the entries of its chain are ranged reads
(pages of `CachedPages`; only a file of non-default size whose geometry the user did not give is
read whole, to detect it). A file that cannot be read as an index (undetectable geometry, size or
header that contradict the geometry) is listed with its `problem`; lookups then refuse to answer
(IndexUnavailableError) so the caller scans instead and no row is lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from rmqstore.format.indexfile import (
    INDEX_HEADER_SIZE,
    IndexFileView,
    IndexHeader,
    detect_geometry,
    geometry_problem,
    index_key,
    parse_index_header,
)
from rmqstore.format.javahash import index_key_hash
from rmqstore.io.base import FileEntry, StoreFileSystem
from rmqstore.io.remote import CachedPages
from rmqstore.store.errors import UnreadableFileError
from rmqstore.store.segments import OpenFiles, list_entries

INDEX_DIR = "index"
INDEX_NAME_DIGITS = 17
"""`timeMillisToHumanString`: yyyyMMddHHmmssSSS of the file's creation (§1.2)."""
_FAR_FUTURE_MS = (1 << 63) - 1
_REMOTE_VERDICTS: dict[tuple[str, int, bytes, tuple[int, int] | None], IndexFileInfo] = {}
"""`IndexFiles._check` of remote files by (path, size, header bytes, geometry given)."""


@dataclass(frozen=True)
class IndexFileInfo:
    """One index file and whether it can be used."""

    name: str
    path: str
    size: int
    geometry: tuple[int, int] | None
    """(hash slots S, index entries N), None when it could not be determined."""
    header: IndexHeader | None
    problem: str | None
    """Why the file cannot be used for lookups, None when it can."""


def _is_index_name(name: str) -> bool:
    return len(name) == INDEX_NAME_DIGITS and name.isascii() and name.isdigit()


class IndexFiles:
    """The index files of a store with lazily opened views."""

    def __init__(self, fs: StoreFileSystem, directory: str, files: OpenFiles,
                 geometry: tuple[int, int] | None) -> None:
        self._fs = fs
        self._directory = directory
        self._files = files
        self._geometry = geometry
        self._views: dict[str, IndexFileView] = {}

    @cached_property
    def _entries(self) -> list[FileEntry]:
        """Every 17-digit file in `index/`, oldest first (the broker sorts names the same way)."""
        return [e for e in list_entries(self._fs, self._directory) if not e.is_dir and _is_index_name(e.name)]

    @cached_property
    def infos(self) -> list[IndexFileInfo]:
        """Every index file (`_entries`) with its verdict.

        One that is not a regular file (FIFO, device, symlink loop) is listed, unopened, with that
        as its problem."""
        return [self._inspect(e.name, e.path, e.size) if e.special is None
                else IndexFileInfo(e.name, e.path, e.size, None, None, f"{e.special}, not an index file")
                for e in self._entries]

    def last_indexed_offset(self) -> int | None:
        """endPhyOffset of the newest index file: the physical offset of the last record the broker
        indexed (§5.5 step 7; a rolled-over file starts with its predecessor's, §5.7). One read of
        that file's header, no other file opened; None without index files or when the header cannot
        be read. Only a hint: the record there may be gone (an index outlives lost log pages, §6.3)."""
        if not self._entries or self._entries[-1].special is not None:
            return None
        try:
            head = self._files.get(self._entries[-1].path, random_access=True).read(0, INDEX_HEADER_SIZE)
            return parse_index_header(head).end_phy_offset
        except (UnreadableFileError, ValueError):
            return None

    def _inspect(self, name: str, path: str, size: int) -> IndexFileInfo:
        handle = self._files.get(path, random_access=True)  # probed, never scanned: no read-ahead
        if handle.zero_copy:  # the whole file as a zero-copy map
            data = handle.read(0, handle.size)
            info = self._check(name, path, size, data)
        else:
            # A remote file is a `ByteSource`: the checks read the header and the slots and entries
            # they sample (coalesced ranged reads), probes the slot and chain entries they walk
            # through pages kept for the next probe. A verdict is kept for the life of the process
            # while the file's header is the same (every put changes it: then the file is unchanged).
            key = (path, size, handle.read(0, INDEX_HEADER_SIZE).tobytes(), self._geometry)
            if key not in _REMOTE_VERDICTS:
                _REMOTE_VERDICTS[key] = self._check(name, path, size, handle)
            info, data = _REMOTE_VERDICTS[key], CachedPages(handle)
        if info.problem is None and info.geometry is not None:
            self._views[path] = IndexFileView(data, *info.geometry)
        return info

    def _check(self, name: str, path: str, size: int, data: Any) -> IndexFileInfo:
        """The file's header, geometry and problem (None when it can be used for lookups)."""
        try:
            header = parse_index_header(data)
        except ValueError as exc:
            return IndexFileInfo(name, path, size, None, None, str(exc))
        try:
            geometry = self._geometry or detect_geometry(size, data)
            IndexFileView(data, *geometry)
        except ValueError as exc:
            return IndexFileInfo(name, path, size, None, header, str(exc))
        problem = _header_problem(header, *geometry)
        if problem is None and self._geometry is not None:
            problem = geometry_problem(data, *geometry)  # detect_geometry validated a detected one
        return IndexFileInfo(name, path, size, geometry, header, problem)

    @property
    def problems(self) -> list[str]:
        return [f"{info.path}: {info.problem}" for info in self.infos if info.problem]

    def prefetch(self, topics: Sequence[str], keys: Sequence[str]) -> None:
        """Fetch together, in every usable remote file, the slots of `topic#key` for every pair and the
        entries they point at (kept in pages for the probes): two rounds of concurrent requests
        instead of a round trip per probe step. Nothing to do for local files."""
        hashes = [index_key_hash(index_key(topic, key)) for topic in topics for key in keys]
        _ = self.infos  # opens the views
        for view in self._views.values():
            view.prefetch(hashes)

    def candidates(self, topic: str, key: str) -> list[int]:
        """Hash-matching physical offsets for `topic#key` in every file, newest file first, no cap.

        Time bounds are not applied here: the index keeps 1-second times with a roll-over quirk
        (§5.5), so callers filter on the record's own store timestamp instead.
        """
        key_hash = index_key_hash(index_key(topic, key))
        found: list[int] = []
        for info in reversed(self.infos):
            view = self._views.get(info.path)
            if view is not None:
                found.extend(view.candidates_for_hash(key_hash, -_FAR_FUTURE_MS, _FAR_FUTURE_MS))
        return found


def _header_problem(header: IndexHeader, hash_slots: int, index_entries: int) -> str | None:
    """Header values that no index file with this geometry can have (§5.1, §5.2)."""
    if not 0 <= header.index_count <= index_entries:
        return f"indexCount {header.index_count} outside 0..{index_entries}"
    if not 0 <= header.used_slots <= hash_slots:
        return f"hashSlotCount {header.used_slots} outside 0..{hash_slots}"
    if header.entry_count and header.begin_phy_offset > header.end_phy_offset:
        return f"beginPhyOffset {header.begin_phy_offset} > endPhyOffset {header.end_phy_offset}"
    return None

