"""The shape of a store: the RocketMQ features that changed its files (§1.6), told from the files.

One place for the names and the wording: `detect_shape` finds the features, `refuse` raises for those
rmqstore cannot read yet, naming the feature, the files that show it, what cannot be read and what to
do (connector/.../store/Shape.scala says the same words).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rmqstore.io.base import FileEntry, StoreFileSystem
from rmqstore.store.errors import StoreLayoutError

DLEDGER = "dledger"
ROCKSDB_CONSUME_QUEUE = "rocksdb-consumequeue"
ROCKSDB_OFFSETS = "rocksdb-offsets"
BATCH_CONSUME_QUEUE = "batchcq"
LMQ = "lmq"
CONSUME_QUEUE_EXT = "cqext"
COMPACTION = "compaction"
TIMER = "timer"
NO_INDEX = "no-index"

TITLES = {
    DLEDGER: "DLedger commit log",
    ROCKSDB_CONSUME_QUEUE: "RocksDB consume queue",
    ROCKSDB_OFFSETS: "RocksDB consumer offsets",
    BATCH_CONSUME_QUEUE: "BatchCQ topics",
    LMQ: "LMQ queues",
    CONSUME_QUEUE_EXT: "consume-queue ext",
    COMPACTION: "compaction logs",
    TIMER: "timer",
    NO_INDEX: "no index",
}
"""Every feature, in the order `info` lists them."""

ADVICE = {
    DLEDGER: "rmqstore reads a DLedger log (docs/format.md §2.13), but not together with the commitlog/ "
             "a store switched to DLedger keeps below dividedCommitlogOffset; read the records of both "
             "through a broker started on this store (enableDLegerCommitLog=true)",
}
"""What rmqstore cannot do with a feature and what to do instead: the features it refuses."""

DLEDGER_PREFIX = "dledger-"
DLEDGER_DATA = "data"
_ROCKSDB_MARKERS = ("CURRENT", "IDENTITY")
_LMQ_PREFIX = "%LMQ%"
_QUEUE_TYPE = "queue.type"


@dataclass(frozen=True)
class Feature:
    """One feature: `key` (a name above), and the store files that show it."""

    key: str
    evidence: str

    @property
    def title(self) -> str:
        return TITLES[self.key]

    def __str__(self) -> str:
        return f"{self.title} ({self.evidence})"


@dataclass(frozen=True)
class Shape:
    """The features a store shows; none is RocketMQ's default shape."""

    features: tuple[Feature, ...] = ()

    def get(self, key: str) -> Feature | None:
        return next((f for f in self.features if f.key == key), None)

    @property
    def name(self) -> str:
        return ", ".join(f.key for f in self.features) or "default"

    def describe(self) -> str:
        """One line for `info`: "default" or every feature with its evidence."""
        return "; ".join(map(str, self.features)) or "default"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.describe(),
            "features": [{"feature": f.key, "title": f.title, "evidence": f.evidence} for f in self.features],
        }


class UnsupportedShapeError(StoreLayoutError):
    """A store whose shape rmqstore cannot read for what was asked: names the feature, its files, the
    reader refused and what to do (`ADVICE`)."""

    def __init__(self, location: str, feature: Feature, reader: str) -> None:
        super().__init__(f"{location}: {feature}: {reader} refused: {ADVICE[feature.key]}")
        self.feature = feature


def refuse(location: str, shape: Shape, key: str, reader: str) -> None:
    """UnsupportedShapeError when `shape` has the feature `key` (one of `ADVICE`)."""
    feature = shape.get(key)
    if feature is not None:
        raise UnsupportedShapeError(location, feature, reader)


def dledger_dirs(fs: StoreFileSystem, root: str, commitlog_dirs: list[str] | None = None) -> list[str]:
    """The data directories of a DLedger commit log (§2.13): the given commit-log directories that are
    `dledger-<selfId>/data/` directories (`storePathDLedgerCommitLog`), else those under the root."""
    if commitlog_dirs is not None:
        return [d for d in commitlog_dirs if _is_dledger_data(d)]
    return [fs.join(e.path, DLEDGER_DATA) for e in _entries(fs, root)
            if e.is_dir and e.name.startswith(DLEDGER_PREFIX) and fs.is_dir(fs.join(e.path, DLEDGER_DATA))]


def dledger_feature(fs: StoreFileSystem, root: str,
                    commitlog_dirs: list[str] | None = None) -> Feature | None:
    """The DLedger commit log of a store, with its data directories as evidence (`dledger_dirs`)."""
    found = dledger_dirs(fs, root, commitlog_dirs)
    return Feature(DLEDGER, ", ".join(_relative(d, root) for d in found)) if found else None


def _relative(path: str, root: str) -> str:
    inside = path.startswith(root.rstrip("/") + "/")
    return (path[len(root.rstrip("/")) + 1:] if inside else path).rstrip("/") + "/"


def _is_dledger_data(directory: str) -> bool:
    path = directory.rstrip("/")
    return posixpath.basename(path) == DLEDGER_DATA and posixpath.basename(
        posixpath.dirname(path)).startswith(DLEDGER_PREFIX)


def detect_shape(fs: StoreFileSystem, root: str, topic_configs: Mapping[str, Mapping[str, Any]],
                 commitlog_dirs: list[str] | None = None) -> Shape:
    """Every feature the store's files show (§1.6); `topic_configs` from config/topics.json."""
    top = {e.name: e for e in _entries(fs, root)}
    found: list[Feature] = []
    dledger = dledger_feature(fs, root, commitlog_dirs) or dledger_feature(fs, root)
    if dledger:
        found.append(dledger)
    queues = _entries(fs, fs.join(root, "consumequeue"))
    rocks = [e.name for e in queues if not e.is_dir and _is_rocksdb_file(e.name)]
    separate = top.get("consumequeue_rocksdb")
    if rocks or (separate and separate.is_dir):
        found.append(Feature(ROCKSDB_CONSUME_QUEUE, "consumequeue_rocksdb/" if not rocks else
                             f"consumequeue/ is a RocksDB database ({', '.join(sorted(rocks)[:3])})"))
    config = fs.join(root, "config")
    rocks_offsets = [f"config/{name}/" for name in ("consumerOffsets", "rdb")
                     if any(_is_rocksdb_file(e.name) for e in _entries(fs, fs.join(config, name)))]
    if rocks_offsets:
        found.append(Feature(ROCKSDB_OFFSETS, ", ".join(rocks_offsets)))
    batch = sorted(t for t, c in topic_configs.items() if _queue_type(c) == "BatchCQ")
    if batch or "batchconsumequeue" in top:
        found.append(Feature(BATCH_CONSUME_QUEUE, ", ".join(
            (["batchconsumequeue/"] if "batchconsumequeue" in top else [])
            + ([f"queue.type=BatchCQ in config/topics.json: {', '.join(batch[:5])}"] if batch else []))))
    lmq = [e.name for e in queues if e.is_dir and e.name.startswith(_LMQ_PREFIX)]
    if lmq:
        found.append(Feature(LMQ, f"{len(lmq)} {_LMQ_PREFIX} queue(s) in consumequeue/"))
    if "consumequeue_ext" in top:
        found.append(Feature(CONSUME_QUEUE_EXT, "consumequeue_ext/"))
    if any(e.is_dir and e.name == "compactionLog" for e in _entries(fs, fs.join(root, "compaction"))):
        found.append(Feature(COMPACTION, "compaction/compactionLog/"))
    timer = [name for name in ("timerlog/", "timerwheel") if name.rstrip("/") in top]
    if timer:
        found.append(Feature(TIMER, ", ".join(timer)))
    index = top.get("index")
    if index is None or not _entries(fs, index.path):
        found.append(Feature(NO_INDEX, "no index files"))
    return Shape(tuple(found))


def _is_rocksdb_file(name: str) -> bool:
    return name in _ROCKSDB_MARKERS or name.startswith("MANIFEST-") or name.endswith(".sst")


def _queue_type(config: Mapping[str, Any]) -> str | None:
    attributes = config.get("attributes")
    if not isinstance(attributes, Mapping):
        return None
    value = attributes.get(_QUEUE_TYPE, attributes.get("+" + _QUEUE_TYPE))
    return value if isinstance(value, str) else None


def _entries(fs: StoreFileSystem, directory: str) -> list[FileEntry]:
    """The entries of a directory; none when it does not exist or cannot be listed."""
    try:
        return fs.list_dir(directory) if fs.is_dir(directory) else []
    except OSError:
        return []
