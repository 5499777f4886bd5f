"""`StoreConfig`: the broker's own files beside the log (design §4.1): config under `config/` (§1.4),
JSON files read with the broker's `.bak` fallback, the consumer offsets of RocksDB metadata mode
(`config/consumerOffsets/`) and of the v2 config storage (`config/rdb/`, §4.8), and the `checkpoint` and
`abort` files (§6).

`ConfigManager.load()` falls back to `<name>.bak` when the main file is missing, empty or
unparseable; so do we. fastjson writes bare integer map keys, hence `parse_fastjson`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any, TypeVar

from rmqstore.format.brokerconfig import consumer_offsets, parse_fastjson, topic_configs
from rmqstore.format.checkpoint import Checkpoint, parse_checkpoint
from rmqstore.format.configstorage import (
    CONSUMER_OFFSETS_LOWER,
    CONSUMER_OFFSETS_UPPER,
    parse_consumer_offset,
)
from rmqstore.io.base import StoreFileSystem
from rmqstore.store.errors import StoreCorruptionError, UnknownNameError, UnreadableFileError
from rmqstore.store.rocksdb import is_rocksdb, local_rocksdb
from rmqstore.store.segments import read_small_file

CONFIG_DIR = "config"
CONSUMER_OFFSET_FILE = "consumerOffset.json"
CONSUMER_OFFSETS_ROCKSDB = "consumerOffsets"
"""`RocksDBConsumerOffsetManager`'s database: topic@group -> {"offsetTable": {queueId: offset}} (§4.8)."""
CONFIG_STORAGE_ROCKSDB = "rdb"
"""`ConfigStorage`'s database (configManagerVersion=v2): consumer offsets keyed by group, topic and queueId
(§4.8)."""
KV_DATA_VERSION_FAMILY = "kvDataVersion"
KV_DATA_VERSION_KEY = b"kvDataVersionKey"
TOPICS_FILE = "topics.json"
BACKUP_SUFFIX = ".bak"
CHECKPOINT_FILE = "checkpoint"
ABORT_FILE = "abort"
T = TypeVar("T")


def load_config_document(fs: StoreFileSystem, config_dir: str, name: str,
                         decode: Callable[[Any], T]) -> T | None:
    """`decode` of the parsed `config/<name>`, else of its `.bak`; None when neither exists or both
    are empty.

    Like `ConfigManager.load()`, a file that cannot be read, parsed or decoded (`decode` raises
    ValueError for values of the wrong type) falls back to the `.bak`. Raises StoreCorruptionError
    naming both files and why when what exists cannot be used.
    """
    failures: list[str] = []
    for path in (fs.join(config_dir, name), fs.join(config_dir, name + BACKUP_SUFFIX)):
        if fs.info(path) is None:
            continue
        try:
            text = read_small_file(fs, path).decode("utf-8", errors="replace")
        except UnreadableFileError as exc:
            failures.append(str(exc))
            continue
        if not text.strip():
            continue
        try:
            return decode(parse_fastjson(text))
        except ValueError as exc:
            failures.append(f"{path}: {exc}")
    if failures:
        raise StoreCorruptionError(fs.join(config_dir, name), 0, "unusable: " + "; ".join(failures))
    return None


def consumer_offsets_source(fs: StoreFileSystem, config_dir: str) -> str:
    """Where the broker's consumer offsets are: the v2 config storage `rdb/`, else the RocksDB
    `consumerOffsets/`, when there is one, else consumerOffset.json."""
    for name in (CONFIG_STORAGE_ROCKSDB, CONSUMER_OFFSETS_ROCKSDB):
        if is_rocksdb(fs, fs.join(config_dir, name)):
            return fs.join(config_dir, name)
    return fs.join(config_dir, CONSUMER_OFFSET_FILE)


def load_consumer_offsets(fs: StoreFileSystem, config_dir: str) -> dict[tuple[str, str], dict[int, int]]:
    """(topic, group) -> {queueId: next queue offset} (§4.8): from the v2 config storage `rdb/` alone when
    it is a RocksDB (`ConsumerOffsetManagerV2.load` reads nothing else; a consumerOffset.json is an older
    broker's), else from consumerOffset.json (or its .bak), or in RocksDB metadata mode from
    `consumerOffsets/` unless the JSON's dataVersion counter is higher."""
    rdb = fs.join(config_dir, CONFIG_STORAGE_ROCKSDB)
    if is_rocksdb(fs, rdb):
        return _config_storage_offsets(fs, rdb)
    from_json = load_config_document(fs, config_dir, CONSUMER_OFFSET_FILE,
                                     lambda doc: (_counter(doc), consumer_offsets(doc)))
    rocks = fs.join(config_dir, CONSUMER_OFFSETS_ROCKSDB)
    if not is_rocksdb(fs, rocks):
        return from_json[1] if from_json is not None else {}
    counter, table = _rocksdb_offset_table(fs, rocks)
    if from_json is not None and from_json[0] > counter:  # RocksDBConsumerOffsetManager.merge
        return from_json[1]
    try:
        return consumer_offsets({"offsetTable": table})
    except ValueError as exc:
        raise StoreCorruptionError(rocks, 0, str(exc)) from None


def _config_storage_offsets(fs: StoreFileSystem, path: str) -> dict[tuple[str, str], dict[int, int]]:
    """The consumer-offset table of the v2 config storage at `path`, LMQ offsets included (the broker's
    `queryOffset` reads those there); its other tables are skipped by key prefix. StoreCorruptionError
    naming the database and the key for a record that does not fit the layout."""
    db = local_rocksdb(fs, path, "config/rdb/ (v2 config storage)")
    try:
        table: dict[tuple[str, str], dict[int, int]] = {}
        for key, value in db.items("default", CONSUMER_OFFSETS_LOWER, CONSUMER_OFFSETS_UPPER):
            try:
                group, topic, queue_id, offset = parse_consumer_offset(key, value)
            except ValueError as exc:
                raise StoreCorruptionError(path, 0,
                                           f"consumer-offset record key {key.hex()}: {exc}") from None
            table.setdefault((topic, group), {})[queue_id] = offset
        return table
    finally:
        db.close()


def _rocksdb_offset_table(fs: StoreFileSystem, path: str) -> tuple[int, dict[str, Any]]:
    """(dataVersion counter, topic@group -> offsetTable) of a RocksDB `consumerOffsets/`."""
    db = local_rocksdb(fs, path, "config/consumerOffsets/ (RocksDB consumer offsets)")
    try:
        table = {}
        for key, value in db.items("default"):
            try:
                table[key.decode("utf-8")] = parse_fastjson(value.decode("utf-8")).get("offsetTable") or {}
            except (UnicodeDecodeError, ValueError, AttributeError) as exc:
                raise StoreCorruptionError(path, 0, f"entry {key!r} is not an offset table: {exc}") from None
        version = None
        if KV_DATA_VERSION_FAMILY in db.families:
            version = db.get(KV_DATA_VERSION_FAMILY, KV_DATA_VERSION_KEY)
        return (_version_counter(parse_fastjson(version.decode("utf-8"))) if version else 0), table
    finally:
        db.close()


def _counter(doc: Any) -> int:
    """A document's `dataVersion.counter` (0 when absent), which the broker compares to pick a table."""
    return _version_counter(doc.get("dataVersion") if isinstance(doc, dict) else None)


def _version_counter(version: Any) -> int:
    """A DataVersion's `counter` (0 when absent)."""
    counter = version.get("counter") if isinstance(version, dict) else None
    return counter if isinstance(counter, int) else 0


def load_topic_configs(fs: StoreFileSystem, config_dir: str) -> dict[str, dict]:
    """topic -> TopicConfig fields from topics.json (or its .bak); empty when absent."""
    return load_config_document(fs, config_dir, TOPICS_FILE, topic_configs) or {}


class StoreConfig:
    """The config, checkpoint and abort files of the store at `path` in `fs`."""

    def __init__(self, fs: StoreFileSystem, path: str) -> None:
        self.fs = fs
        self.path = path

    @property
    def _config_dir(self) -> str:
        return self.fs.join(self.path, CONFIG_DIR)

    def consumer_offsets(self) -> dict[tuple[str, str], dict[int, int]]:
        """(topic, group) -> {queueId: next queue offset} from config/consumerOffset.json (.bak fallback)
        or the RocksDB config/consumerOffsets/ or config/rdb/ (§4.8)."""
        return load_consumer_offsets(self.fs, self._config_dir)

    def group_offsets(self, group: str) -> dict[str, dict[int, int]]:
        """topic -> {queueId: next queue offset} that consumer `group` committed (`consumer_offsets`).

        UnknownNameError naming the group, the close and the known ones when it committed none.
        """
        table = self.consumer_offsets()
        found = {topic: dict(queues) for (topic, g), queues in table.items() if g == group}
        if not found:
            path = consumer_offsets_source(self.fs, self._config_dir)
            raise UnknownNameError("consumer group", group, sorted({g for _, g in table}),
                                   f"has no committed offsets in {path}")
        return found

    def topic_configs(self) -> dict[str, dict]:
        """topic -> TopicConfig fields from config/topics.json (.bak fallback); {} when absent."""
        return load_topic_configs(self.fs, self._config_dir)

    @cached_property
    def checkpoint(self) -> Checkpoint | None:
        """The `checkpoint` file (§6.1), None when the store has none."""
        path = self.fs.join(self.path, CHECKPOINT_FILE)
        if not self.fs.exists(path):
            return None
        try:
            return parse_checkpoint(read_small_file(self.fs, path))
        except ValueError as exc:
            raise StoreCorruptionError(path, 0, str(exc)) from None

    def crash_min_timestamp(self) -> int | None:
        """getMinTimestamp() of the checkpoint when `abort` exists, else None: where abnormal recovery
        starts (§6.3). 0 (recovery from the first segment) without a readable checkpoint."""
        if not self.abort_present:
            return None
        try:
            checkpoint = self.checkpoint
        except StoreCorruptionError:
            return 0
        return checkpoint.min_timestamp() if checkpoint else 0

    @property
    def abort_present(self) -> bool:
        """True when `abort` exists: the broker is running or did not shut down cleanly (§6.2)."""
        return self.fs.exists(self.fs.join(self.path, ABORT_FILE))
