"""Builds small RocketMQ stores byte by byte from the format layer (no writer needed) and guards them.

`StoreBuilder` lays records out like the broker: BLANK at a segment end when a record does not fit
with 8 spare bytes (§2.6), consume-queue units at queueOffset*20 (§4.1), index keys UNIQ_KEY then KEYS
tokens with roll-over to a new file when one is full (§5.4-§5.7). Every built store is hashed; after
each test the `unchanged_stores` guard checks that nothing in it changed or appeared.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from rmqstore.format.brokerconfig import encode_fastjson
from rmqstore.format.checkpoint import Checkpoint, encode_checkpoint
from rmqstore.format.consumequeue import CQ_UNIT_SIZE, encode_unit
from rmqstore.format.indexfile import IndexFileBuilder, index_key
from rmqstore.format.javahash import tags_code
from rmqstore.format.layout import END_FILE_MIN_BLANK_LENGTH, SYSFLAG_TRANSACTION_MASK, TRANSACTION_ROLLBACK
from rmqstore.format.record import encode_blank, encode_record

BASE_TS = 1_700_000_000_000
STORE_HOST = "127.0.0.1:10911"
_GUARDED: list[tuple[str, str]] = []


def tree_digest(root: str) -> str:
    """Hash of every file name and byte under root."""
    digest = hashlib.sha256()
    for directory, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(directory, name)
            digest.update(os.path.relpath(path, root).encode())
            with open(path, "rb") as fh:
                digest.update(hashlib.sha256(fh.read()).digest())
    return digest.hexdigest()


@dataclass
class Written:
    """What the builder put at one physical offset (the truth tests compare against)."""

    offset: int
    size: int
    topic: str
    queue_id: int
    queue_offset: int
    keys: str | None
    uniq_key: str | None
    tags: str | None
    store_ts: int
    body: bytes


@dataclass
class StoreBuilder:
    root: str
    segment_size: int = 4096
    cq_units_per_segment: int = 16
    hash_slots: int = 8
    index_entries: int = 32
    first_offset: int = 0
    commitlog_dirs: list[str] | None = None
    written: list[Written] = field(default_factory=list)
    segments: dict[int, bytearray] = field(default_factory=dict)
    queues: dict[tuple[str, int], list[bytes]] = field(default_factory=dict)
    index_files: list[IndexFileBuilder] = field(default_factory=list)
    consumer_offsets: dict[str, dict[int, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.cursor = self.first_offset
        self._ts = BASE_TS

    def append(self, topic: str, body: bytes = b"body", *, keys: str | None = None, tags: str | None = None,
               uniq_key: str | None = None, queue_id: int = 0, store_ts: int | None = None,
               sys_flag: int = 0, properties: dict[str, str] | None = None) -> Written:
        props = dict(properties or {})
        for name, value in (("KEYS", keys), ("TAGS", tags), ("UNIQ_KEY", uniq_key)):
            if value is not None:
                props[name] = value
        if store_ts is None:
            self._ts += 7
            store_ts = self._ts
        queue = self.queues.setdefault((topic, queue_id), [])
        kwargs = dict(topic=topic, queue_id=queue_id, body=body, properties=props, queue_offset=len(queue),
                      born_timestamp=store_ts - 1, store_timestamp=store_ts, born_host="10.0.0.1:50000",
                      store_host=STORE_HOST, sys_flag=sys_flag)
        size = len(encode_record(physical_offset=0, **kwargs))
        seg_base = self.cursor - self.cursor % self.segment_size
        left = seg_base + self.segment_size - self.cursor
        if size + END_FILE_MIN_BLANK_LENGTH > left:
            self._put(self.cursor, encode_blank(left))
            self.cursor = seg_base + self.segment_size
        data = encode_record(physical_offset=self.cursor, **kwargs)
        self._put(self.cursor, data)
        rec = Written(self.cursor, size, topic, queue_id, len(queue), keys, uniq_key, tags, store_ts, body)
        queue.append(encode_unit(self.cursor, size, tags_code(tags)))
        if sys_flag & SYSFLAG_TRANSACTION_MASK != TRANSACTION_ROLLBACK:
            index_keys = ([uniq_key] if uniq_key else []) + [k for k in (keys or "").split(" ") if k]
            for key in index_keys:
                self._index_put(index_key(topic, key), self.cursor, store_ts)
        self.cursor += size
        self.written.append(rec)
        return rec

    def _put(self, offset: int, data: bytes) -> None:
        base = offset - offset % self.segment_size
        seg = self.segments.setdefault(base, bytearray(self.segment_size))
        seg[offset - base : offset - base + len(data)] = data

    def _index_put(self, key: str, phy: int, ts: int) -> None:
        if not self.index_files or not self.index_files[-1].put_key(key, phy, ts):
            prev = self.index_files[-1].header if self.index_files else None
            builder = IndexFileBuilder(self.hash_slots, self.index_entries,
                                       prev.end_phy_offset if prev else 0, prev.end_timestamp if prev else 0)
            self.index_files.append(builder)
            assert builder.put_key(key, phy, ts)

    def commitlog_path(self, base: int) -> str:
        dirs = self.commitlog_dirs or [os.path.join(self.root, "commitlog")]
        index = (base // self.segment_size) % len(dirs)
        return os.path.join(dirs[index], f"{base:020d}")

    def finish(self, *, preallocate: bool = True, checkpoint: bool = True, guard: bool = True) -> str:
        """Write every file; `preallocate` adds the all-zero next segment like the broker (§1.2)."""
        if not self.segments:
            self.segments[self.first_offset] = bytearray(self.segment_size)
        if preallocate:
            self.segments.setdefault(max(self.segments) + self.segment_size, bytearray(self.segment_size))
        for base, data in self.segments.items():
            _write(self.commitlog_path(base), bytes(data))
        cq_size = self.cq_units_per_segment * CQ_UNIT_SIZE
        for (topic, qid), units in self.queues.items():
            raw = b"".join(units)
            for start in range(0, max(len(raw), 1), cq_size):
                chunk = raw[start : start + cq_size]
                _write(os.path.join(self.root, "consumequeue", topic, str(qid), f"{start:020d}"),
                       chunk + bytes(cq_size - len(chunk)))
        for number, builder in enumerate(self.index_files):
            _write(os.path.join(self.root, "index", f"{20240101000000000 + number}"), builder.to_bytes())
        if checkpoint:
            last = self.written[-1].store_ts if self.written else 0
            _write(os.path.join(self.root, "checkpoint"), encode_checkpoint(Checkpoint(last, last, 0)))
        if self.consumer_offsets:
            _write(os.path.join(self.root, "config", "consumerOffset.json"),
                   encode_fastjson({"offsetTable": self.consumer_offsets}).encode())
        os.makedirs(os.path.join(self.root, "commitlog"), exist_ok=True)
        if guard:
            _GUARDED.append((self.root, tree_digest(self.root)))
        return self.root


def _write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)


def fill(b: StoreBuilder, count: int, *, topics: tuple[str, ...] = ("TopicA", "TopicB"),
         queues: int = 2) -> list[Written]:
    """`count` varied records: keys (some multi-key), tags, uniq keys, bodies of varying length."""
    out = []
    for i in range(count):
        keys = f"k{i % 7}" + (f" shared k{i}" if i % 3 == 0 else "")
        out.append(b.append(topics[i % len(topics)], b"x" * (i * 37 % 300), keys=keys, tags=f"Tag{i % 3}",
                            uniq_key=f"{i:032X}", queue_id=i % queues))
    return out
