"""Broker JSON config files under `config/` (§1.4), read with the broker's `.bak` fallback.

`ConfigManager.load()` falls back to `<name>.bak` when the main file is missing, empty or
unparseable; so do we. fastjson writes bare integer map keys, hence `parse_fastjson`.
"""

from __future__ import annotations

from typing import Any

from rmqstore.format.brokerconfig import consumer_offsets, parse_fastjson, topic_configs
from rmqstore.io.base import StoreFileSystem
from rmqstore.store.errors import StoreCorruptionError

CONFIG_DIR = "config"
CONSUMER_OFFSET_FILE = "consumerOffset.json"
TOPICS_FILE = "topics.json"
BACKUP_SUFFIX = ".bak"


def load_config_document(fs: StoreFileSystem, config_dir: str, name: str) -> Any | None:
    """The parsed `config/<name>`, else its `.bak`; None when neither exists or both are empty.

    Raises StoreCorruptionError naming both files when what exists cannot be parsed.
    """
    failures: list[str] = []
    for path in (fs.join(config_dir, name), fs.join(config_dir, name + BACKUP_SUFFIX)):
        entry = fs.info(path)
        if entry is None or entry.is_dir:
            continue
        text = fs.read_bytes(path).decode("utf-8", errors="replace")
        if not text.strip():
            continue
        try:
            return parse_fastjson(text)
        except ValueError as exc:
            failures.append(f"{path}: {exc}")
    if failures:
        raise StoreCorruptionError(fs.join(config_dir, name), 0, "unparseable: " + "; ".join(failures))
    return None


def load_consumer_offsets(fs: StoreFileSystem, config_dir: str) -> dict[tuple[str, str], dict[int, int]]:
    """(topic, group) -> {queueId: next queue offset} from consumerOffset.json (or its .bak)."""
    doc = load_config_document(fs, config_dir, CONSUMER_OFFSET_FILE)
    return {} if doc is None else consumer_offsets(doc)


def load_topic_configs(fs: StoreFileSystem, config_dir: str) -> dict[str, dict]:
    """topic -> TopicConfig fields from topics.json (or its .bak); empty when absent."""
    doc = load_config_document(fs, config_dir, TOPICS_FILE)
    return {} if doc is None else topic_configs(doc)
