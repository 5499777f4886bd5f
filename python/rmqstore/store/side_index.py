"""A side index of the records the broker's index lacks (design §3.4; spec §5.3, §5.4, §5.7).

`lacking_ranges` finds what the broker's index lacks (design §3.4: ROLLBACK records, the log past the
newest file's end, the records of index files lost in recovery, with the rule for the records at a
file's beginPhyOffset and endPhyOffset); the side index holds, for every record in those ranges, the
entries the broker writes (§5.4) as (hash of `topic#key`, physical offset), sorted by hash, per segment.
It is built once per segment from a scan of only those ranges and cached outside the store
(`segment_cache` kind `side-index`, the entries in a `.npy` file beside the cache's JSON; design §8). A
remote store keeps its side index per Store.
"""

from __future__ import annotations

import logging
import os
import secrets
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rmqstore.format.indexfile import index_key
from rmqstore.format.javahash import index_key_hash
from rmqstore.format.layout import MAGIC_V1, MAGIC_V2
from rmqstore.store.cache_identity import CacheIdentity
from rmqstore.store.commitlog import CommitLog
from rmqstore.store.contract_store import SIDE_INDEX_CACHE_KIND, SIDE_INDEX_CACHE_VERSION
from rmqstore.store.coverage import Coverage
from rmqstore.store.errors import PERMISSIVE, IndexUnavailableError
from rmqstore.store.index import IndexFiles
from rmqstore.store.ranges import Range, clip_ranges, merge_ranges
from rmqstore.store.records import RecordReader
from rmqstore.store.segment_cache import SegmentCache
from rmqstore.store.segments import Segment

log = logging.getLogger("rmqstore.store")

ARRAY_SUFFIX = ".npy"
_BUILD_COLUMNS = ["commitLogOffset", "topic", "keys", "uniqKey"]
_HEAD = struct.Struct(">iI")
"""TOTALSIZE and MAGICCODE, the first 8 bytes of a record (§2.2)."""


@dataclass(frozen=True)
class SideIndexParts:
    """Entries for the records the broker's index lacks.

    `parts`: per segment an int64 array of shape (2, n): key hashes (ascending), physical offsets.
    `note`: what was built while opening it, for the user (None when everything came from the cache);
    the same text each time, so a note printed once per application says it once.
    """

    parts: tuple[np.ndarray, ...]
    topics: tuple[str, ...]
    note: str | None

    def candidates(self, topic: str, key: str) -> list[int]:
        """Physical offsets of entries whose hash is that of `topic#key` (to be confirmed)."""
        key_hash = index_key_hash(index_key(topic, key))
        found: list[int] = []
        for part in self.parts:
            lo, hi = np.searchsorted(part[0], [key_hash, key_hash + 1])
            found.extend(part[1, lo:hi].tolist())
        return found


class IndexedLog(Protocol):
    """What `index_holes` and `lacking_ranges` read: a log, its index files and its coverage."""

    @property
    def log(self) -> CommitLog: ...
    @property
    def index(self) -> IndexFiles: ...
    @property
    def coverage(self) -> Coverage: ...


class SideIndex:
    """Key lookups over the broker's index files and the side index of what they lack (module
    docstring); refuses (IndexUnavailableError) when the index lacks more than `tail_scan_limit` bytes
    besides ROLLBACK records."""

    def __init__(self, log: CommitLog, records: RecordReader, index: IndexFiles, coverage: Coverage,
                 cache_identity: CacheIdentity, *, location: str, tail_scan_limit: int) -> None:
        self.log = log
        self.records = records
        self.index = index
        self.coverage = coverage
        self.cache_identity = cache_identity
        self.location = location
        self.tail_scan_limit = tail_scan_limit
        self.parts: SideIndexParts | None = None
        """The side index once opened (a pickled remote store carries it along)."""

    def __call__(self) -> SideIndexParts:
        """The side index of the records the broker's index lacks (module docstring), built from a scan
        of only those ranges the first time and cached outside the store; once per store.
        Its `note` says what was built (None when it came from the cache).

        Raises IndexUnavailableError when an index file is damaged, or when the index lacks more than
        `tail_scan_limit` bytes besides ROLLBACK records (e.g. no index at all): scan instead.
        """
        if self.parts is None:
            problems = self.index.problems
            if problems:
                raise IndexUnavailableError("index files unusable: " + "; ".join(problems))
            holes = index_holes(self)
            lacking = sum(end - start for start, end in holes)
            if lacking > self.tail_scan_limit:
                raise IndexUnavailableError(
                    f"the index lacks {lacking} bytes of the log in {len(holes)} range(s) from physical "
                    f"offset {holes[0][0]} (records past its end or of lost index files; limit "
                    f"{self.tail_scan_limit}): scan instead"
                )
            self.parts = open_side_index(self, lacking_ranges(self))
        return self.parts

    def key_topics(self) -> list[str]:
        """The topics a key or uniqKey lookup without topics probes, sorted: `indexed_topics` and the
        topics of the side index's records."""
        return sorted(set(self.coverage.indexed_topics()).union(self().topics))

    def index_candidates(self, value: str, topics: Iterable[str] | None = None) -> list[int]:
        """Physical offsets, ascending, that the index holds under `topic#value` for each of `topics`
        (None: every topic a lookup probes, `key_topics`): the broker's index files and the side index
        of what they lack (the side index: ROLLBACK records, records past the index's end, lost index
        files). `value` is a KEYS token or a UNIQ_KEY (the broker indexes both alike, §5.4).

        Candidates only: hashes collide, index times are whole seconds, and an entry may point outside
        the valid log or at no record; `rmqstore.plan` reads and confirms them (finding records by key
        is `rmqstore.plan.lookup`). Raises IndexUnavailableError when the index cannot answer
        completely (see `__call__`).
        """
        side = self()
        candidates: set[int] = set()
        for topic in self.key_topics() if topics is None else sorted(set(topics)):
            self.records.stats.index_files_probed += len(self.index.infos)
            candidates.update(self.index.candidates(topic, value))
            candidates.update(side.candidates(topic, value))
        return sorted(candidates)

    def prefetch_index(self, keys: Sequence[str], topics: Iterable[str] | None = None) -> None:
        """Before probing many values (`index_candidates` with the same `topics`) in a remote store:
        fetch the slots and first entries of all their probes together, instead of a round trip per
        probe step. Nothing happens for a local store."""
        self.index.prefetch(sorted(self.coverage.indexed_topics() if topics is None else set(topics)), keys)


def lacking_ranges(store: IndexedLog) -> list[Range]:
    """The commit-log ranges whose records may be missing from the broker's index (module
    docstring), sorted and disjoint, inside [min_offset, max_offset)."""
    return merge_ranges([*store.coverage.unindexed_ranges(), *index_holes(store)])


def index_holes(store: IndexedLog) -> list[Range]:
    """The parts of [min_offset, max_offset) outside every usable index file's span: records past
    the newest file's end or of lost files (module docstring), sorted and disjoint."""
    spans = sorted((info.header.begin_phy_offset, info.header.end_phy_offset,
                    info.geometry is not None and info.header.index_count >= info.geometry[1])
                   for info in store.index.infos
                   if info.problem is None and info.header is not None and info.header.entry_count > 0)
    holes: list[Range] = []
    position, end = store.log.min_offset + store.log.lead, store.log.max_offset  # the first record (§2.13)
    previous: tuple[int, int] | None = None  # the last file's endPhyOffset and where the next record starts
    for begin, last, full in spans:
        if previous is not None and begin == previous[1]:
            position = max(position, begin)  # the last file's last record was whole: the next one begins here
        whole = begin <= position if previous is None else begin in previous
        start = begin if whole else _after_record(store, begin)
        if start > position:
            holes.append((position, min(start, end)))
        previous = (last, _after_record(store, last))
        position = max(position, last if full else previous[1])
    if position < end:
        holes.append((position, end))
    return [(a, b) for a, b in holes if a < b]


def _after_record(store: IndexedLog, offset: int) -> int:
    """Where the record after the one at `offset` (a file's beginPhyOffset or endPhyOffset) starts, from
    its TOTALSIZE and MAGICCODE (§2.2) and the log's entry framing (§2.13); `offset` itself when no
    message starts there (a hole then starts with it)."""
    seg = store.log.segment_at(offset)
    if seg is None or offset >= store.log.max_offset:
        return offset
    head = store.log.read_at(seg, offset - seg.base_offset, _HEAD.size)
    total, magic = _HEAD.unpack(head.tobytes().ljust(8))
    fits = 0 < total <= min(seg.end_offset, store.log.max_offset) - offset
    return offset + total + store.log.lead if fits and magic in (MAGIC_V1, MAGIC_V2) else offset


def open_side_index(side: SideIndex, ranges: Sequence[Range]) -> SideIndexParts:
    """The side index of `ranges` (`lacking_ranges`), from the cache where it still holds."""
    live = [s for s in side.log.segments if s.base_offset < side.log.max_offset]
    needed = {seg.base_offset: list(clip_ranges(ranges, seg.base_offset, seg.end_offset)) for seg in live}
    needed = {base: parts for base, parts in needed.items() if parts}
    cache = SegmentCache.for_store(side, SIDE_INDEX_CACHE_KIND, SIDE_INDEX_CACHE_VERSION)
    known = cache.load(side.log, live) if cache else {}
    entries: list[tuple[Segment, list]] = []
    parts: list[np.ndarray] = []
    topics: set[str] = set()
    built_ranges: list[Range] = []
    built_entries = 0
    for seg in live:
        wanted = needed.get(seg.base_offset)
        if not wanted:
            continue
        entry = known.get(seg.base_offset)
        part = _load(cache, entry) if entry and _inside(wanted, entry[0]) else None
        if part is None or entry is None:
            part, seg_topics = _build(side.records, wanted)
            built_ranges += wanted
            built_entries += part.shape[1]
            entry = [wanted, sorted(seg_topics), _save_array(cache, seg, part)]
        parts.append(part)
        topics.update(entry[1])
        entries.append((seg, entry))
    note = None
    if built_ranges:
        where = f", cached in {_array_dir(cache)}" if cache else " (remote store: kept per Store)"
        note = ("built a side index of the records the broker's index lacks (transaction ROLLBACK records, "
                f"records past the index's end or of lost index files) from a scan of only those{where}")
        log.info("%s: %s: %d key entries from %d commit-log range(s), %d bytes", side.location, note,
                 built_entries, len(built_ranges), sum(b - a for a, b in built_ranges))
    referenced = {entry[2] for _, entry in entries}
    if cache and (built_ranges or _unreferenced(cache, referenced)):
        cache.save(side.log, entries)
        for name in _unreferenced(cache, referenced):
            _remove(cache, name)
    return SideIndexParts(tuple(p for p in parts if p.shape[1]), tuple(sorted(topics)), note)


def _build(records: RecordReader, ranges: Sequence[Range]) -> tuple[np.ndarray, set[str]]:
    """Entries (hashes ascending, offsets) of the records in `ranges`, and their topics."""
    chunks: list[np.ndarray] = [np.empty((2, 0), dtype=np.int64)]
    topics: set[str] = set()
    for batch in records.scan_ranges(ranges, _BUILD_COLUMNS, mode=PERMISSIVE, decompress=False):
        rows = batch.to_pydict()
        hashes: list[int] = []
        offsets: list[int] = []
        for offset, topic, keys, uniq_key in zip(rows["commitLogOffset"], rows["topic"], rows["keys"],
                                                 rows["uniqKey"], strict=True):
            topics.add(topic)
            for key in ([] if uniq_key is None else [uniq_key]) + (keys or []):
                hashes.append(index_key_hash(index_key(topic, key)))
                offsets.append(offset)
        chunks.append(np.array([hashes, offsets], dtype=np.int64).reshape(2, -1))
    part = np.concatenate(chunks, axis=1)
    return np.ascontiguousarray(part[:, np.argsort(part[0], kind="stable")]), topics


def _inside(wanted: Sequence[Range], covered: Sequence[Sequence[int]]) -> bool:
    """Every range of `wanted` lies inside one of `covered` (both sorted and disjoint)."""
    i = 0
    for start, end in wanted:
        while i < len(covered) and covered[i][1] <= start:
            i += 1
        if i == len(covered) or not covered[i][0] <= start < end <= covered[i][1]:
            return False
    return True


def _array_dir(cache: SegmentCache | None) -> str:
    return os.path.splitext(cache.path)[0] if cache else ""


def _load(cache: SegmentCache | None, entry: list) -> np.ndarray | None:
    """A cached segment's entries (memory-mapped), None when its file is gone or unreadable."""
    try:
        part = np.load(os.path.join(_array_dir(cache), entry[2]), mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, TypeError):
        return None
    ok = part.dtype == np.int64 and part.ndim == 2 and part.shape[0] == 2
    return part if ok else None


def _save_array(cache: SegmentCache | None, seg: Segment, part: np.ndarray) -> str:
    """Write a segment's entries next to the cache (failures only logged); the file's name."""
    name = f"{os.path.basename(seg.path)}-{secrets.token_hex(8)}{ARRAY_SUFFIX}"
    if cache is None:
        return name
    directory = _array_dir(cache)
    try:
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".{name}.tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, part, allow_pickle=False)
        os.replace(tmp, os.path.join(directory, name))
    except OSError as exc:
        log.debug("side index %s not written: %s", name, exc)
    return name


def _unreferenced(cache: SegmentCache, referenced: set[str]) -> list[str]:
    """The arrays of segments rebuilt or gone (retention), by name."""
    try:
        names = os.listdir(_array_dir(cache))
    except OSError:
        return []
    return [name for name in names if name.endswith(ARRAY_SUFFIX) and name not in referenced]


def _remove(cache: SegmentCache, name: str) -> None:
    """Delete one array (a reader that still maps it keeps its pages)."""
    try:
        os.unlink(os.path.join(_array_dir(cache), name))
    except OSError:
        return
