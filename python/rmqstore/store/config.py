"""Broker config under `config/` (§1.4): JSON files read with the broker's `.bak` fallback, and the
consumer offsets of RocksDB metadata mode (`config/consumerOffsets/`, §4.8).

`ConfigManager.load()` falls back to `<name>.bak` when the main file is missing, empty or
unparseable; so do we. fastjson writes bare integer map keys, hence `parse_fastjson`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from rmqstore.format.brokerconfig import consumer_offsets, parse_fastjson, topic_configs
from rmqstore.io.base import StoreFileSystem
from rmqstore.store.errors import StoreCorruptionError, UnreadableFileError
from rmqstore.store.rocksdb import is_rocksdb, local_rocksdb
from rmqstore.store.segments import read_small_file
from rmqstore.store.shape import ROCKSDB_OFFSETS, Feature, UnsupportedShapeError

CONFIG_DIR = "config"
CONSUMER_OFFSET_FILE = "consumerOffset.json"
CONSUMER_OFFSETS_ROCKSDB = "consumerOffsets"
"""`RocksDBConsumerOffsetManager`'s database: topic@group -> {"offsetTable": {queueId: offset}} (§4.8)."""
CONFIG_STORAGE_ROCKSDB = "rdb"
"""`ConfigStorage`'s database (configManagerVersion=v2): not read, refused (§4.8)."""
KV_DATA_VERSION_FAMILY = "kvDataVersion"
KV_DATA_VERSION_KEY = b"kvDataVersionKey"
TOPICS_FILE = "topics.json"
BACKUP_SUFFIX = ".bak"
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
    """Where the broker's consumer offsets are: the RocksDB `consumerOffsets/` when there is one, else
    consumerOffset.json."""
    rocks = fs.join(config_dir, CONSUMER_OFFSETS_ROCKSDB)
    return rocks if is_rocksdb(fs, rocks) else fs.join(config_dir, CONSUMER_OFFSET_FILE)


def load_consumer_offsets(fs: StoreFileSystem, config_dir: str) -> dict[tuple[str, str], dict[int, int]]:
    """(topic, group) -> {queueId: next queue offset} from consumerOffset.json (or its .bak), or in
    RocksDB metadata mode from `consumerOffsets/` (§4.8); refused when the v2 config storage `rdb/` holds
    them (a stale consumerOffset.json would be read otherwise)."""
    rdb = fs.join(config_dir, CONFIG_STORAGE_ROCKSDB)
    if is_rocksdb(fs, rdb):
        raise UnsupportedShapeError(rdb, Feature(ROCKSDB_OFFSETS, "config/rdb/"), "reading consumer offsets")
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
