"""Helpers for the CLI tests: a store with known content and JSON-lines parsing.

Expectations come from what was written (specs and append results), not from a reader.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rmqstore.format.layout import COMPRESSION_LZ4, COMPRESSION_ZLIB, COMPRESSION_ZSTD
from rmqstore.writer import MessageSpec, StoreWriter

T0 = 1_700_000_000_000
SLOTS, ENTRIES = 11, 30
GEOMETRY_ARG = f"{SLOTS},{ENTRIES}"


@dataclass(frozen=True)
class Stored:
    """One record as written."""

    offset: int
    topic: str
    keys: tuple[str, ...]
    uniq_key: str | None
    store_ms: int
    born_ms: int
    body: bytes
    msg_id: str


@dataclass(frozen=True)
class KnownStore:
    path: Path
    records: list[Stored]

    def with_key(self, key: str, topic: str | None = None) -> list[int]:
        return [r.offset for r in self.records if key in r.keys and (topic is None or r.topic == topic)]


def _keys_of(spec: MessageSpec) -> tuple[str, ...]:
    value = spec.keys_property()
    return tuple(token for token in (value or "").split(" ") if token)


def write_known_store(path: Path) -> KnownStore:
    writer = StoreWriter(
        path,
        segment_size=8192,
        cq_segment_size=400,
        index_hash_slots=SLOTS,
        index_entries=ENTRIES,
        store_host="10.0.0.5:10911",
        seed=11,
    )
    records: list[Stored] = []
    clock = iter(range(T0, T0 + 10_000_000, 1000))

    def put(spec: MessageSpec) -> None:
        result = writer.append(spec)
        records.append(
            Stored(
                result.physical_offset,
                result.topic,
                _keys_of(spec),
                result.uniq_key,
                spec.store_timestamp,
                spec.born_timestamp,
                spec.body,
                result.msg_id,
            )
        )

    shapes: list[str | list[str]] = ["hot", ["hot", "x"], "a  hot", "hotter", "cold"]
    compressions = [None, COMPRESSION_ZLIB, COMPRESSION_LZ4, COMPRESSION_ZSTD]
    for i in range(120):
        ts = next(clock)
        put(
            MessageSpec(
                "TopicA",
                body=f"body-{i}".encode() * 5,
                keys=shapes[i % 5],
                tags="TagA",
                born_host="[2001:db8::7]:4000" if i % 3 else "10.1.1.1:5000",
                born_timestamp=ts - 5,
                store_timestamp=ts,
                compression=compressions[i % 4],
            )
        )
    for key in ("Aa", "BB", "Aa", "BB", "Aa"):  # "Aa" and "BB" have the same Java hash: index collisions
        ts = next(clock)
        put(MessageSpec("TopicA", body=key.encode(), keys=key, born_timestamp=ts - 1, store_timestamp=ts))
    for i in range(5):
        ts = next(clock)
        put(
            MessageSpec(
                "TopicB", body=b"b%d" % i, keys=["hot", "订单-😀"], born_timestamp=ts - 1, store_timestamp=ts
            )
        )
    writer.set_consumer_offset("TopicA", "cg", 0, 3)
    writer.close()
    return KnownStore(path, records)


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]
