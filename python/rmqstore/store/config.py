"""Broker JSON config files under `config/` (§1.4), read with the broker's `.bak` fallback.

`ConfigManager.load()` falls back to `<name>.bak` when the main file is missing, empty or
unparseable; so do we. fastjson writes bare integer map keys, hence `parse_fastjson`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from rmqstore.format.brokerconfig import consumer_offsets, parse_fastjson, topic_configs
from rmqstore.io.base import StoreFileSystem
from rmqstore.store.errors import StoreCorruptionError, UnreadableFileError
from rmqstore.store.segments import read_small_file

CONFIG_DIR = "config"
CONSUMER_OFFSET_FILE = "consumerOffset.json"
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


def load_consumer_offsets(fs: StoreFileSystem, config_dir: str) -> dict[tuple[str, str], dict[int, int]]:
    """(topic, group) -> {queueId: next queue offset} from consumerOffset.json (or its .bak)."""
    return load_config_document(fs, config_dir, CONSUMER_OFFSET_FILE, consumer_offsets) or {}


def load_topic_configs(fs: StoreFileSystem, config_dir: str) -> dict[str, dict]:
    """topic -> TopicConfig fields from topics.json (or its .bak); empty when absent."""
    return load_config_document(fs, config_dir, TOPICS_FILE, topic_configs) or {}
