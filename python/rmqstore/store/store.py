"""`Store`: one RocketMQ broker store, opened read-only (design §4.1).

A facade (design §1): it opens the store, builds the services in dependency order (config, cache
identity, index files, commit log, records, queues, coverage, lost units, timeline, side index),
delegates to them and pickles as its open arguments.

Never writes, locks, truncates or recovers anything: the bytes on disk are the same after any read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from rmqstore.format.checkpoint import Checkpoint
from rmqstore.format.compression import MAX_MESSAGE_SIZE, decompress_thread_count
from rmqstore.format.contract_layout import DLEDGER_ENTRY_HEADER
from rmqstore.format.points import PointReader
from rmqstore.io.local import LocalFileSystem
from rmqstore.io.location import is_uri, resolve_location
from rmqstore.store.cache_identity import CacheIdentity
from rmqstore.store.commitlog import CommitLog, LogEnd
from rmqstore.store.config import StoreConfig
from rmqstore.store.consumequeue import ConsumeQueueExt, UnitDamage
from rmqstore.store.contract_store import INDEX_TAIL_SCAN_LIMIT
from rmqstore.store.coverage import Coverage
from rmqstore.store.errors import (
    FAILFAST,
    StoreError,
    StoreLayoutError,
    UnreadableFileError,
)
from rmqstore.store.index import INDEX_DIR, IndexFileInfo, IndexFiles
from rmqstore.store.logend import LogEndCache
from rmqstore.store.lost_units import LostUnits
from rmqstore.store.queues import Queue, Queues
from rmqstore.store.records import DEFAULT_BATCH_ROWS, RecordReader
from rmqstore.store.segments import OpenFiles, Segment, list_entries, list_segments
from rmqstore.store.shape import (
    DLEDGER,
    Feature,
    Shape,
    UnsupportedShapeError,
    detect_shape,
    dledger_dirs,
)
from rmqstore.store.side_index import SideIndex, SideIndexParts
from rmqstore.store.stats import StoreStats
from rmqstore.store.timeline import Timeline

COMMITLOG_DIR = "commitlog"
MULTI_PATH_SPLITTER = ","
"""`storePathCommitLog` lists several directories separated by `,` (§1.1, `MixAll.MULTI_PATH_SPLITTER`)."""



def _split_dirs(commitlog_dirs: str | Sequence[str]) -> list[str]:
    parts = commitlog_dirs.split(MULTI_PATH_SPLITTER) if isinstance(commitlog_dirs, str) else commitlog_dirs
    return [p.strip() for p in parts if p.strip()]


class Store:
    """A broker store directory: commit log, consume queues, index files, checkpoint, config.

    Open with `Store.open`. Offsets are physical commit-log offsets unless named queue offsets. The
    methods without a docstring here delegate to the service of the same method name, where it is
    documented: `records` (RecordReader), `queues`, `coverage`, `lost_units`, `timeline`, `side_index`,
    `config`.
    """

    def __init__(self, location: str, *, index_geometry: tuple[int, int] | None = None,
                 commitlog_dirs: str | Sequence[str] | None = None,
                 filesystem: pafs.FileSystem | None = None, check_crc_at_end: bool = True,
                 index_tail_scan_limit: int = INDEX_TAIL_SCAN_LIMIT,
                 max_message_size: int = MAX_MESSAGE_SIZE,
                 storage_options: Mapping[str, str] | None = None,
                 decompress_threads: int | None = None) -> None:
        self._open_args: dict[str, Any] = {
            "index_geometry": index_geometry, "commitlog_dirs": commitlog_dirs, "filesystem": filesystem,
            "check_crc_at_end": check_crc_at_end, "index_tail_scan_limit": index_tail_scan_limit,
            "max_message_size": max_message_size, "storage_options": storage_options,
            "decompress_threads": decompress_threads,
        }
        if max_message_size <= 0:
            raise ValueError(f"max_message_size must be positive, got {max_message_size}")
        decompress_thread_count(decompress_threads)  # fails at open; None stays: each process uses its cores
        self.location = location
        self.stats = StoreStats()
        self.fs, self.path = resolve_location(location, filesystem=filesystem, stats=self.stats,
                                              storage_options=storage_options)
        if not self.fs.is_dir(self.path):
            raise StoreLayoutError(f"{location}: no such store directory")
        self.config = StoreConfig(self.fs, self.path)
        self.commitlog_dirs, lead = self._commitlog_dirs(commitlog_dirs)
        self._files = OpenFiles(self.fs)
        segments, self._layout_problems = list_segments(self.fs, self.commitlog_dirs)
        self.cache_identity = CacheIdentity.of(location, self.path, self.commitlog_dirs, segments,
                                               local=isinstance(self.fs, LocalFileSystem))
        if index_geometry is not None and (len(index_geometry) != 2 or min(index_geometry) <= 0):
            raise ValueError(f"index_geometry must be (hash slots, index entries) > 0: {index_geometry!r}")
        self.index = IndexFiles(self.fs, self.fs.join(self.path, INDEX_DIR), self._files,
                                 tuple(index_geometry) if index_geometry else None)
        self.log = CommitLog(segments, self._files, self.stats, check_crc_at_end=check_crc_at_end,
                             end_cache=LogEndCache.for_identity(self.cache_identity, check_crc_at_end),
                             last_indexed=self.index.last_indexed_offset,
                             crash_min_timestamp=self.config.crash_min_timestamp,
                             recovery_cache=LogEndCache.for_identity(self.cache_identity, check_crc_at_end,
                                                                     recovery=True),
                             lead=lead)
        self.queues = Queues(self.fs, self.path, self._files, self.log, self.config)
        self.records = RecordReader(self.log, self.stats, max_message_size=max_message_size,
                                    decompress_threads=decompress_threads)
        self.coverage = Coverage(self.log, self.records, self.queues, self.cache_identity)
        self.lost_units = LostUnits(self.records, self.coverage, self.index, self.queues)
        self.timeline = Timeline(self.log, self.records, self.cache_identity)
        self.side_index = SideIndex(self.log, self.records, self.index, self.coverage, self.cache_identity,
                                    location=location, tail_scan_limit=index_tail_scan_limit)

    @classmethod
    def open(cls, path_or_uri: str | os.PathLike[str], *, index_geometry: tuple[int, int] | None = None,
             commitlog_dirs: str | Sequence[str] | None = None, filesystem: pafs.FileSystem | None = None,
             check_crc_at_end: bool = True, index_tail_scan_limit: int = INDEX_TAIL_SCAN_LIMIT,
             max_message_size: int = MAX_MESSAGE_SIZE,
             storage_options: Mapping[str, str] | None = None,
             decompress_threads: int | None = None) -> Store:
        """Open a store read-only.

        `path_or_uri`: the store root (`storePathRootDir`): a local path, or a URI that
        `pyarrow.fs.FileSystem.from_uri` understands (s3://bucket/prefix, gs://, hdfs://). For S3
        test servers: `s3://bucket/store?endpoint_override=127.0.0.1:9000&scheme=http`; or pass a
        configured pyarrow `filesystem` and a path inside it.
        `commitlog_dirs`: the broker's `storePathCommitLog` when it is not `<root>/commitlog`: one
        directory or several, as a list or comma-separated like the broker config (read-only
        `readOnlyCommitLogStorePaths` too); relative entries are under the root. Listings merge and
        sort by segment name.
        `index_geometry`: (maxHashSlotNum, maxIndexNum) from broker.conf; detected per file if None.
        `check_crc_at_end`: check BODYCRC while finding the valid end, like `checkCRCOnRecover`.
        `index_tail_scan_limit`: see `side_index`.
        `max_message_size`: the largest decompressed body accepted; one inflating past it is corrupt
        (the producer refuses bodies over its `maxMessageSize` before compressing them; see
        `format.compression`).
        `storage_options`: `pyarrow.fs.S3FileSystem` arguments for an s3:// store (`access_key`,
        `secret_key`, `session_token`, `region`, `endpoint_override`, `scheme`); they travel with a
        pickled Store, so credentials given here reach every process that reads it.
        `decompress_threads`: threads that decompress a batch's compressed bodies (None: the machine's
        cores, at most 4; 1: the calling thread only; see `format.compression.decompress_bodies`).
        """
        return cls(os.fspath(path_or_uri), index_geometry=index_geometry, commitlog_dirs=commitlog_dirs,
                   filesystem=filesystem, check_crc_at_end=check_crc_at_end,
                   index_tail_scan_limit=index_tail_scan_limit, max_message_size=max_message_size,
                   storage_options=storage_options, decompress_threads=decompress_threads)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickles as its open arguments (Spark ships stores to executors); reopened on load.

        A valid end already found travels along: every task then reads the same snapshot of a
        live log, and none walks the active segment again to find it. So does the side index of a
        remote store (a local one's is in the cache directory): no task builds it again.
        """
        known_end = self.log.__dict__.get("end")
        side = None
        if self.side_index.parts is not None and not isinstance(self.fs, LocalFileSystem):
            side = replace(self.side_index.parts, note=None)
        return (_reopen, (self.location, self._open_args, known_end, side))

    @property
    def is_remote(self) -> bool:
        """The store is read by ranged requests (S3, ...), not through memory maps."""
        return not isinstance(self.fs, LocalFileSystem)

    def __repr__(self) -> str:
        return f"Store({self.location!r}, segments={len(self.segments)})"

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release open files (maps, remote handles, a RocksDB); arrays handed out stay valid."""
        self._files.close()
        self.queues.close()

    def _commitlog_dirs(self, commitlog_dirs: str | Sequence[str] | None) -> tuple[list[str], int]:
        """The commit-log directories and the entry framing of their log: `commitlog/` (or the given
        ones) and 0, or a DLedger log's data directory and its 48-byte entry header (§2.13)."""
        if commitlog_dirs is None:
            dirs = [self.fs.join(self.path, COMMITLOG_DIR)]
            dledger = dledger_dirs(self.fs, self.path)
            if dledger and self.fs.is_dir(dirs[0]) and list_entries(self.fs, dirs[0]):
                both = Feature(DLEDGER, f"{', '.join(dledger)} and {dirs[0]}")
                raise UnsupportedShapeError(self.location, both,
                                            f"reading it with the {COMMITLOG_DIR}/ it replaced")
            if len(dledger) > 1:
                raise StoreLayoutError(f"{self.location}: DLedger logs of several members "
                                       f"({', '.join(dledger)}); pass the one to read as commitlog_dirs")
            dirs = dledger or dirs
        else:
            dirs = [self._path_in_store_fs(d) for d in _split_dirs(commitlog_dirs)]
            if not dirs:
                raise ValueError("commitlog_dirs names no directory")
            dledger = dledger_dirs(self.fs, self.path, dirs)
            if dledger and len(dledger) != len(dirs):
                raise StoreLayoutError(f"{self.location}: commitlog_dirs mixes a DLedger log "
                                       f"({', '.join(dledger)}) with commit-log directories")
        for entry in filter(None, map(self.fs.info, dirs)):
            if entry.special is not None:
                raise UnreadableFileError(entry.path, entry.special)
        missing = [d for d in dirs if not self.fs.is_dir(d)]
        if missing:
            raise StoreLayoutError(
                f"{self.location}: commit-log directory {', '.join(missing)} does not exist (a store root "
                f"holds {COMMITLOG_DIR}/; for storePathCommitLog elsewhere pass commitlog_dirs)"
            )
        return dirs, DLEDGER_ENTRY_HEADER if dledger else 0

    @cached_property
    def shape(self) -> Shape:
        """The RocketMQ features this store's files show (§1.6; `rmqstore.store.shape`)."""
        try:
            configs = self.topic_configs()
        except StoreError:
            configs = {}
        return detect_shape(self.fs, self.path, configs, self.commitlog_dirs)

    def _path_in_store_fs(self, entry: str) -> str:
        if is_uri(entry):
            return resolve_location(entry)[1]
        return entry if os.path.isabs(entry) else self.fs.join(self.path, entry)

    # ---- commit log ---------------------------------------------------------------------------

    @property
    def segments(self) -> list[Segment]:
        """Every commit-log segment file, pre-allocated ones included, by base offset."""
        return self.log.segments

    @property
    def segment_size(self) -> int:
        return self.log.segment_size

    @property
    def min_offset(self) -> int:
        return self.log.min_offset

    @property
    def max_offset(self) -> int:
        """The valid end of the log (recovery rules, §2.12); see `log_end` for why it is there."""
        return self.log.max_offset

    @property
    def log_end(self) -> LogEnd:
        return self.log.end

    @property
    def problems(self) -> list[str]:
        """Everything odd found so far: layout, skipped records, bad topic names, unusable index files."""
        skipped = [str(place) for place in self.stats.skipped.values()]
        return (self._layout_problems + self.queues.layout_problems + skipped + self.queues.notes
                + self.index.problems)

    def scan(self, start: int | None = None, end: int | None = None, columns: Sequence[str] | None = None,
             *, check_crc: bool = False, mode: str = FAILFAST, decompress: bool = True,
             batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        return self.records.scan(start, end, columns, check_crc=check_crc, mode=mode, decompress=decompress,
                                 batch_rows=batch_rows)

    def scan_ranges(self, ranges: Iterable[tuple[int, int]], columns: Sequence[str] | None = None, *,
                    check_crc: bool = False, mode: str = FAILFAST,
                    decompress: bool = True) -> Iterator[pa.RecordBatch]:
        return self.records.scan_ranges(ranges, columns, check_crc=check_crc, mode=mode,
                                        decompress=decompress)

    def segment_spans(self) -> list[tuple[int, int]]:
        return self.records.segment_spans()

    def read_offsets(self, offsets: Iterable[int], columns: Sequence[str] | None = None, *,
                     mode: str = FAILFAST, decompress: bool = True, check_crc: bool = False,
                     strict: bool = True) -> pa.RecordBatch:
        return self.records.read_offsets(offsets, columns, mode=mode, decompress=decompress,
                                         check_crc=check_crc, strict=strict)

    def read_offsets_batches(self, offsets: Iterable[int], columns: Sequence[str] | None = None, *,
                             mode: str = FAILFAST, decompress: bool = True, check_crc: bool = False,
                             strict: bool = True,
                             batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[pa.RecordBatch]:
        return self.records.read_offsets_batches(offsets, columns, mode=mode, decompress=decompress,
                                                 check_crc=check_crc, strict=strict, batch_rows=batch_rows)

    @property
    def decompress_threads(self) -> int | None:
        return self.records.decompress_threads

    @property
    def point_reader(self) -> PointReader:
        return self.records.point_reader

    @point_reader.setter
    def point_reader(self, reader: PointReader) -> None:
        self.records.point_reader = reader

    # ---- lookups ------------------------------------------------------------------------------

    def last_indexed_offset(self) -> int | None:
        """endPhyOffset of the newest index file (None: no index), the last record the broker indexed."""
        return self.index.last_indexed_offset()

    @property
    def index_files(self) -> list[IndexFileInfo]:
        """Index files oldest first, each with its geometry, header and `problem` (None when usable)."""
        return self.index.infos

    def key_topics(self) -> list[str]:
        return self.side_index.key_topics()

    def index_candidates(self, value: str, topics: Iterable[str] | None = None) -> list[int]:
        return self.side_index.index_candidates(value, topics)

    def prefetch_index(self, keys: Sequence[str], topics: Iterable[str] | None = None) -> None:
        self.side_index.prefetch_index(keys, topics)

    # ---- consume queues -----------------------------------------------------------------------

    def topics(self) -> list[str]:
        return self.queues.topics()

    def queue_ids(self, topic: str) -> list[int]:
        return self.queues.queue_ids(topic)

    def consume_queue(self, topic: str, queue_id: int) -> Queue:
        return self.queues.consume_queue(topic, queue_id)

    def consume_queue_ext(self, topic: str, queue_id: int) -> ConsumeQueueExt:
        return self.queues.consume_queue_ext(topic, queue_id)

    def uncovered_ranges(self) -> list[tuple[int, int]]:
        return self.coverage.uncovered_ranges()

    def uncovered_ranges_of(self, topics: Iterable[str]) -> list[tuple[int, int]]:
        return self.coverage.uncovered_ranges_of(topics)

    def unindexed_ranges(self) -> list[tuple[int, int]]:
        return self.coverage.unindexed_ranges()

    def indexed_topics(self) -> list[str]:
        return self.coverage.indexed_topics()

    def uncovered_segments(self) -> list[Segment]:
        return self.coverage.uncovered_segments()

    def lost_at_end(self, topic: str, queue_id: int) -> list[UnitDamage]:
        return self.lost_units.lost_at_end(topic, queue_id)

    # ---- time ---------------------------------------------------------------------------------

    def seek_time(self, ts_ms: int) -> int:
        return self.timeline.seek_time(ts_ms)

    def time_ranges(self, begin_ms: int | None, end_ms: int | None) -> list[tuple[int, int]]:
        return self.timeline.time_ranges(begin_ms, end_ms)

    def unsummarized_spans(self) -> list[tuple[int, int]]:
        return self.timeline.unsummarized_spans()

    def walked_spans(self) -> list[tuple[int, int]]:
        return self.timeline.walked_spans()

    @property
    def summarized(self) -> list[tuple[int, int]]:
        return self.timeline.summarized

    def ask_summaries(self, spans: Sequence[tuple[int, int]]) -> None:
        self.timeline.ask_summaries(spans)

    # ---- metadata -----------------------------------------------------------------------------

    def consumer_offsets(self) -> dict[tuple[str, str], dict[int, int]]:
        return self.config.consumer_offsets()

    def group_offsets(self, group: str) -> dict[str, dict[int, int]]:
        return self.config.group_offsets(group)

    def topic_configs(self) -> dict[str, dict]:
        return self.config.topic_configs()

    @property
    def checkpoint(self) -> Checkpoint | None:
        return self.config.checkpoint

    @property
    def abort_present(self) -> bool:
        return self.config.abort_present


def _reopen(location: str, options: dict[str, Any], known_end: LogEnd | None = None,
            side_index: SideIndexParts | None = None) -> Store:
    store = Store(location, **options)
    if known_end is not None:
        store.log.end = known_end  # fills the cached_property: the end found where it was pickled
    store.side_index.parts = side_index
    return store
