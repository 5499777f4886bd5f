"""The broker's `config/` JSON files in fastjson's pretty form (spec §1.4).

topics.json, consumerOffset.json and delayOffset.json are written with tab indentation, fields in
fastjson's alphabetical order and bare integer keys for the queue-id / delay-level maps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmqstore.format.brokerconfig import encode_fastjson

PERM_READ_WRITE = 6
PERM_READ_WRITE_INHERIT = 7

SYSTEM_TOPIC_QUEUES: Mapping[str, int] = {
    "SCHEDULE_TOPIC_XXXX": 18,
    "RMQ_SYS_TRANS_HALF_TOPIC": 1,
    "RMQ_SYS_TRANS_OP_HALF_TOPIC": 1,
    "SELF_TEST_TOPIC": 1,
    "OFFSET_MOVED_EVENT": 1,
    "TBW102": 8,
}
"""Topics a broker creates for itself, with their queue counts (`TopicConfigManager`)."""


@dataclass(frozen=True)
class TopicConfig:
    """One `topicConfigTable` entry (`TopicConfig`)."""

    topic: str
    queue_nums: int
    multi_tag: bool = False
    order: bool = False
    perm: int = PERM_READ_WRITE

    def to_json(self) -> dict[str, Any]:
        return {
            "attributes": {},
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.queue_nums,
            "topicFilterType": "MULTI_TAG" if self.multi_tag else "SINGLE_TAG",
            "topicName": self.topic,
            "topicSysFlag": 0,
            "writeQueueNums": self.queue_nums,
        }


def _data_version(counter: int, timestamp_ms: int) -> dict[str, int]:
    return {"counter": counter, "stateVersion": 0, "timestamp": timestamp_ms}


def write_config_files(
    directory: Path,
    *,
    topics: Iterable[TopicConfig],
    consumer_offsets: Mapping[str, Mapping[int, int]],
    delay_offsets: Mapping[int, int],
    timestamp_ms: int,
    broker_name: str,
    cluster_name: str,
) -> None:
    """Write topics.json (written topics + the broker's own), consumerOffset.json, delayOffset.json."""
    directory.mkdir(parents=True, exist_ok=True)
    table = {name: TopicConfig(name, queues) for name, queues in SYSTEM_TOPIC_QUEUES.items()}
    table[broker_name] = TopicConfig(broker_name, 1, perm=PERM_READ_WRITE_INHERIT)
    table[cluster_name] = TopicConfig(cluster_name, 16, perm=PERM_READ_WRITE_INHERIT)
    table.update((config.topic, config) for config in topics)
    topics_doc = {
        "dataVersion": _data_version(len(table), timestamp_ms),
        "topicConfigTable": {name: table[name].to_json() for name in sorted(table)},
    }
    offsets_doc = {
        "dataVersion": _data_version(len(consumer_offsets), timestamp_ms),
        "offsetTable": {
            key: dict(sorted(queues.items())) for key, queues in sorted(consumer_offsets.items())
        },
    }
    delay_doc = {
        "dataVersion": _data_version(len(delay_offsets), timestamp_ms),
        "offsetTable": dict(sorted(delay_offsets.items())),
    }
    for name, doc in (
        ("topics.json", topics_doc),
        ("consumerOffset.json", offsets_doc),
        ("delayOffset.json", delay_doc),
    ):
        (directory / name).write_text(encode_fastjson(doc), encoding="utf-8")
