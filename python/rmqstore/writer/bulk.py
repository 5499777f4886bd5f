"""Production-shape stores written fast: broker-default geometry, many topics, gigabytes of log.

Each record is cut from one of a few templates (`encode_record`: a body size, producer and TAGS each)
tiled with numpy and patched field by field (queue id and offset, physical offset, times, the topic's
digits, KEYS and UNIQ_KEY digits, §2.2, §2.8); the consume queues (§4.1) and index files (§5.4, §5.5)
are built from the record table, not record by record. Every record is a plain message (no delay,
transaction or batch), so none of `StoreWriter`'s broker rewrites are needed. Deterministic per seed.

Record r: topic drawn with `hot_share` for topic 0 and a Zipf share for the others, queue uniform,
store time `start + r * 1000 // rate`, a UNIQ_KEY of its producer and one key: `o<r>` (12 digits), or
for every 16th record (template 0) `u<n>` with n = r / 16 mod G, G = records / 16 / `key_repeats`: each
`u` key is held by `key_repeats` records spread over the whole log.
"""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from rmqstore.format.checkpoint import Checkpoint, encode_checkpoint
from rmqstore.format.consumequeue import CQ_DTYPE, CQ_UNIT_SIZE, record_tags_code
from rmqstore.format.contract_layout import (
    BLANK_MAGIC,
    END_FILE_MIN_BLANK_LENGTH,
    INDEX_ENTRY_SIZE,
    INDEX_HEADER_SIZE,
    OFF_BORNTIMESTAMP,
    OFF_PHYSICALOFFSET,
    OFF_QUEUEID,
    OFF_QUEUEOFFSET,
)
from rmqstore.format.hosts import encode_host
from rmqstore.format.indexfile import INDEX_ENTRY_DTYPE, IndexHeader, index_file_size
from rmqstore.format.javahash import java_string_hashcode
from rmqstore.format.msgid import offset_msg_id
from rmqstore.format.record import PROPERTY_KEYS, PROPERTY_TAGS, PROPERTY_UNIQ_KEY, encode_record
from rmqstore.writer.config import TopicConfig, write_config_files
from rmqstore.writer.consumequeue import cq_segment_bytes
from rmqstore.writer.files import ensure_empty_store_dir, index_file_name, offset_file_name, write_presized
from rmqstore.writer.message import UniqKeyGenerator
from rmqstore.writer.store_writer import STORE_ENTRIES

STORE_HOST = "10.0.0.5:10911"
START_MS = 1_709_280_000_000
"""2024-03-01T08:00:00Z: store time of record 0 (a month has room for 24 days of records)."""
PRODUCERS = ("10.0.1.15:51234", "10.0.1.16:40022", "192.168.7.3:60111", "172.16.4.20:33333")
TAGS = ("created", "paid", "shipped", "cancelled", "view")
GROUP = "cg-bench"
"""The consumer group committed on the hot topic, `GROUP_LAG` messages behind on every queue."""
GROUP_LAG = 1000
_TEMPLATES = 16
_REPEATED_TEMPLATE = 0
"""Records of this template carry a `u` key that `key_repeats` records share."""
_TOPIC_DIGITS = 5
_KEY_DIGITS = 12
_UNIQ_VARYING = 12
"""Hex chars of a UNIQ_KEY after the producer prefix: ms since the month (8) and counter (4), §3.2."""
_STORE_TS_OFFSET = 56
"""STORETIMESTAMP after an IPv4 born host (§2.2)."""
_CHUNK_BYTES = 64 << 20
_HEX = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)


@dataclass(frozen=True)
class BulkShape:
    """What to write: sizes are the broker's config keys (defaults are the broker's, §1.3)."""

    target_bytes: int
    topics: int = 100
    queues: int = 8
    seed: int = 0
    segment_size: int = 1 << 30
    cq_units: int = 300_000
    index_hash_slots: int = 5_000_000
    index_entries: int = 20_000_000
    rate_per_s: int = 2000
    hot_share: float = 0.01
    key_repeats: int = 500
    body_sizes: tuple[int, int] = (100, 1000)


@dataclass(frozen=True)
class Sample:
    """One record the benchmarks look up (its physical offset, msgId, key, UNIQ_KEY and store time) and
    `repeated_key`, a key `key_repeats` records share."""

    record: int
    topic: str
    phy: int
    msg_id: str
    key: str
    repeated_key: str
    uniq_key: str
    store_timestamp: int


@dataclass(frozen=True)
class BulkSummary:
    """What was written: record count, log bytes, the hot topic, the group and a middle record."""

    records: int
    log_bytes: int
    topics: int
    queues: int
    hot_topic: str
    group: str
    first_timestamp: int
    last_timestamp: int
    key_groups: int
    middle: Sample
    index_files: int

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)


def topic_name(number: int) -> str:
    return f"bench-{number:0{_TOPIC_DIGITS}d}"


@dataclass(frozen=True)
class _Template:
    """One encoded record and where its varying fields sit in it."""

    data: bytes
    topic_at: int
    keys_at: int
    uniq_at: int
    born_lag_ms: int
    tags_code: int


class _Layout:
    """The per-store constants: templates, topic weights and hashes, the producers' UNIQ_KEY parts."""

    def __init__(self, shape: BulkShape) -> None:
        self.shape = shape
        rng = random.Random(shape.seed)
        low, high = shape.body_sizes
        producers = [UniqKeyGenerator(host, rng.randrange(1, 65536), rng.getrandbits(31))
                     for host in PRODUCERS]
        first = [gen.next(START_MS) for gen in producers]
        self.uniq_prefix = [uid[: -_UNIQ_VARYING] for uid in first]
        self.month_start = START_MS - int(first[0][-_UNIQ_VARYING:-4], 16)
        words = ("order", "paid", "user", "sku", "qty", "eu-west", "ok")
        pool = " ".join(rng.choices(words, k=high)).encode()
        self.templates = [self._template(t, rng.randrange(low, high + 1), pool) for t in range(_TEMPLATES)]
        self.sizes = np.array([len(t.data) for t in self.templates], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(self.sizes)])
        self.period = np.frombuffer(b"".join(t.data for t in self.templates), dtype=np.uint8)
        self.period_starts = starts[:-1]
        zipf = 1.0 / np.arange(1, shape.topics, dtype=np.float64)
        self.topic_weights = (np.concatenate([[shape.hot_share], zipf / zipf.sum() * (1 - shape.hot_share)])
                              if shape.topics > 1 else np.ones(1))
        self.topic_hash = np.array([java_string_hashcode(topic_name(i) + "#") & 0xFFFFFFFF
                                    for i in range(shape.topics)], dtype=np.uint64)
        average = float(self.sizes.mean())
        self.key_groups = max(1, int(shape.target_bytes / average) // _TEMPLATES // shape.key_repeats)
        self.key_char = np.array([ord(t.data[t.keys_at : t.keys_at + 1]) for t in self.templates], np.uint8)

    def _template(self, number: int, body_size: int, pool: bytes) -> _Template:
        producer = number % len(PRODUCERS)
        tags = TAGS[number % len(TAGS)]
        keys = ("u" if number == _REPEATED_TEMPLATE else "o") + "0" * _KEY_DIGITS
        uniq = self.uniq_prefix[producer] + "0" * _UNIQ_VARYING
        body = (b'{"n":%d,"d":"' % number + pool)[: body_size - 2] + b'"}'
        properties = {PROPERTY_KEYS: keys, PROPERTY_TAGS: tags, "WAIT": "true", PROPERTY_UNIQ_KEY: uniq,
                      "CLUSTER": "DefaultCluster"}
        data = encode_record(topic=topic_name(0), queue_id=0, body=body, properties=properties,
                             queue_offset=0, physical_offset=0, born_timestamp=0, store_timestamp=0,
                             born_host=PRODUCERS[producer], store_host=STORE_HOST)
        tail = 88 + len(body)  # BODY starts at 88 with IPv4 hosts (§2.2); then TOPICLENGTH, TOPIC
        return _Template(
            data=data,
            topic_at=tail + 1 + len("bench-"),
            keys_at=data.index(f"{PROPERTY_KEYS}\x01".encode(), tail) + len(PROPERTY_KEYS) + 1,
            uniq_at=data.index(f"{PROPERTY_UNIQ_KEY}\x01".encode(), tail) + len(PROPERTY_UNIQ_KEY) + 1
            + len(self.uniq_prefix[producer]),
            born_lag_ms=1 + number % 7,
            tags_code=record_tags_code(topic_name(0), properties, 0),
        )

    def offsets(self, template: np.ndarray, field: str) -> np.ndarray:
        """`field` of each record's template."""
        return np.array([getattr(t, field) for t in self.templates], dtype=np.int64)[template]


def _digits(values: np.ndarray, width: int) -> np.ndarray:
    """ASCII decimal digits of each value, zero-padded to `width` (one row per value)."""
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.uint64)
    return ((values.astype(np.uint64)[:, None] // powers) % 10 + 48).astype(np.uint8)


def _hex(values: np.ndarray, width: int) -> np.ndarray:
    """ASCII uppercase hex digits of each value, zero-padded to `width`."""
    shifts = np.arange(width - 1, -1, -1, dtype=np.uint64) * np.uint64(4)
    return _HEX[(values.astype(np.uint64)[:, None] >> shifts) & np.uint64(15)]


def _hash_tail(prefix_hash: np.ndarray, chars: np.ndarray) -> np.ndarray:
    """`index_key_hash` (§5.3, §7) of prefix + chars from the prefix's hash (uint32 values) and ASCII rows."""
    width = chars.shape[1]
    powers = np.array([pow(31, width - 1 - k, 1 << 32) for k in range(width)], dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = prefix_hash * np.uint64(pow(31, width, 1 << 32)) + (chars.astype(np.uint64) * powers).sum(axis=1)
    signed = (h & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32).astype(np.int64)
    return np.where(signed == -(1 << 31), 0, np.abs(signed)).astype(np.int32)


def _put(buf: np.ndarray, at: np.ndarray, rows: np.ndarray) -> None:
    buf[at[:, None] + np.arange(rows.shape[1])] = rows


def _put_be(buf: np.ndarray, at: np.ndarray, values: np.ndarray, dtype: str) -> None:
    _put(buf, at, values.astype(dtype).view(np.uint8).reshape(len(values), -1))


class _IndexFiles:
    """Index files filled in dispatch order and written when full or at the end (§5.4, §5.5, §5.7)."""

    def __init__(self, directory: Path, slots: int, entries: int) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory, self.slots, self.entries = directory, slots, entries
        self.pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.count = 0
        self.previous_end_ts = 0
        self.name_ms = 0
        self.full_end_timestamp = 0
        self.written = 0

    def add(self, hashes: np.ndarray, phys: np.ndarray, times: np.ndarray) -> None:
        capacity = self.entries - 1
        while len(hashes):
            take = min(capacity - self.count, len(hashes))
            self.pending.append((hashes[:take], phys[:take], times[:take]))
            self.count += take
            hashes, phys, times = hashes[take:], phys[take:], times[take:]
            if self.count == capacity:
                self.flush(full=True)

    def flush(self, *, full: bool) -> None:
        if not self.count:
            return
        hashes, phys, times = (np.concatenate(column) for column in zip(*self.pending, strict=True))
        self.pending, n = [], self.count
        self.count = 0
        slot = hashes.astype(np.int64) % self.slots
        order = np.argsort(slot, kind="stable")
        ordered = slot[order]
        same = ordered[1:] == ordered[:-1]
        prev = np.zeros(n, dtype=np.int64)
        prev[order[1:][same]] = order[:-1][same] + 1
        last = np.concatenate([~same, [True]])
        table = np.zeros(self.slots, dtype=">i4")
        table[ordered[last]] = order[last] + 1
        # Entry 1's time is relative to the previous file's end (0 in the first file), the rest to entry 1.
        begin = times[0]
        diffs = (times - begin) // 1000
        prev_end_ts = self.previous_end_ts
        diffs[0] = max(begin - prev_end_ts, 0) // 1000 if prev_end_ts > 0 else 0
        entries = np.zeros(n, dtype=INDEX_ENTRY_DTYPE)
        entries["key_hash"], entries["phy"], entries["time_diff"], entries["prev"] = hashes, phys, diffs, prev
        header = IndexHeader(int(begin), int(times[-1]), int(phys[0]), int(phys[-1]), int(last.sum()), n + 1)
        self.name_ms = max(int(begin), self.name_ms + 1)
        path = self.directory / index_file_name(self.name_ms)
        with open(path, "wb") as out:
            out.truncate(index_file_size(self.slots, self.entries))
            out.write(header.to_bytes())
            out.write(table.tobytes())
            out.seek(INDEX_HEADER_SIZE + 4 * self.slots + INDEX_ENTRY_SIZE)
            out.write(entries.tobytes())
        self.previous_end_ts = int(times[-1])
        if full:
            self.full_end_timestamp = int(times[-1])
        self.written += 1


class _BulkWriter:
    def __init__(self, path: Path, shape: BulkShape) -> None:
        self.path, self.shape = path, shape
        self.layout = _Layout(shape)
        self.rng = np.random.default_rng(shape.seed)
        queues = shape.topics * shape.queues
        self.queue_heads = np.zeros(queues, dtype=np.int64)
        self.queue_keys: list[np.ndarray] = []
        self.queue_phys: list[np.ndarray] = []
        self.queue_templates: list[np.ndarray] = []
        self.index = _IndexFiles(path / "index", shape.index_hash_slots, shape.index_entries)
        self.records = 0
        self.position = 0

    def write(self, progress: Callable[[int], None] | None) -> BulkSummary:
        (self.path / "commitlog").mkdir(parents=True)
        segment = 0
        while self.position < self.shape.target_bytes:
            written = self._segment(segment)
            if progress is not None:
                progress(written)
            segment += self.shape.segment_size
        self._open_segment(segment).close()  # the broker's pre-allocated next segment (§1.2)
        self.index.flush(full=False)
        self._write_queues()
        return self._finish()

    def _open_segment(self, start: int):
        handle = open(self.path / "commitlog" / offset_file_name(start), "wb")  # noqa: SIM115
        handle.truncate(self.shape.segment_size)
        return handle

    def _segment(self, start: int) -> int:
        """Fill the segment at `start` with whole records; a BLANK closes it unless the log ends in it
        (§2.6). Returns the bytes of records written."""
        size = self.shape.segment_size
        first, sizes = self.records, self.layout.sizes
        ends = np.cumsum(sizes[(first + np.arange(size // int(sizes.min()) + 1)) % _TEMPLATES])
        fits = int(np.searchsorted(ends, size - END_FILE_MIN_BLANK_LENGTH, side="right"))
        wanted = int(np.searchsorted(ends, self.shape.target_bytes - start, side="left")) + 1
        count = min(fits, wanted)
        if count == 0:
            raise ValueError(f"segment size {size} holds no record of {int(sizes.max())} bytes")
        run = max(1, int(_CHUNK_BYTES // sizes.mean()))
        with self._open_segment(start) as out:
            for done in range(0, count, run):
                at = int(ends[done - 1]) if done else 0
                out.seek(at)
                out.write(self._chunk(first + np.arange(done, min(done + run, count)), start + at).tobytes())
            used = int(ends[count - 1])
            if wanted > fits:
                out.seek(used)
                out.write(struct.pack(">iI", size - used, BLANK_MAGIC))
        self.records += count
        self.position = start + (size if wanted > fits else used)
        return used

    def _chunk(self, numbers: np.ndarray, phy0: int) -> np.ndarray:
        """The bytes of records `numbers` (consecutive) stored from physical offset `phy0`."""
        layout, shape = self.layout, self.shape
        template = numbers % _TEMPLATES
        lengths = layout.sizes[template]
        within = np.concatenate([[0], np.cumsum(lengths[:-1])])
        total = int(lengths.sum())
        rotated = np.roll(layout.period, -int(layout.period_starts[template[0]]))
        buf = np.tile(rotated, total // len(rotated) + 1)[:total]
        topic = self.rng.choice(shape.topics, size=len(numbers), p=layout.topic_weights)
        queue = self.rng.integers(0, shape.queues, size=len(numbers))
        queue_key = topic * shape.queues + queue
        queue_offset = self._queue_offsets(queue_key)
        phy = phy0 + within
        store_ts = START_MS + numbers * 1000 // shape.rate_per_s
        born_ts = store_ts - layout.offsets(template, "born_lag_ms")
        _put_be(buf, within + OFF_QUEUEID, queue, ">i4")
        _put_be(buf, within + OFF_QUEUEOFFSET, queue_offset, ">i8")
        _put_be(buf, within + OFF_PHYSICALOFFSET, phy, ">i8")
        _put_be(buf, within + OFF_BORNTIMESTAMP, born_ts, ">i8")
        _put_be(buf, within + _STORE_TS_OFFSET, store_ts, ">i8")
        _put(buf, within + layout.offsets(template, "topic_at"), _digits(topic, _TOPIC_DIGITS))
        values = np.where(template == _REPEATED_TEMPLATE, numbers // _TEMPLATES % layout.key_groups, numbers)
        key = np.hstack([layout.key_char[template][:, None], _digits(values, _KEY_DIGITS)])
        _put(buf, within + layout.offsets(template, "keys_at"), key)
        producer = template % len(PRODUCERS)
        counter = (numbers // len(PRODUCERS)) & 0xFFFF
        uniq = _hex(((born_ts - layout.month_start) << 16) | counter, _UNIQ_VARYING)
        _put(buf, within + layout.offsets(template, "uniq_at"), uniq)
        self._dispatch(topic, producer, key, uniq, phy, store_ts)
        self.queue_keys.append(queue_key.astype(np.int32))
        self.queue_phys.append(phy)
        self.queue_templates.append(template.astype(np.int8))
        return buf

    def _queue_offsets(self, queue_key: np.ndarray) -> np.ndarray:
        """Queue offsets in record order: each queue's head plus the record's rank in it (§4.1)."""
        order = np.argsort(queue_key, kind="stable")
        ordered = queue_key[order]
        starts = np.concatenate([[True], ordered[1:] != ordered[:-1]])
        group_start = np.maximum.accumulate(np.where(starts, np.arange(len(order)), 0))
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order)) - group_start
        offsets = self.queue_heads[queue_key] + rank
        self.queue_heads += np.bincount(queue_key, minlength=len(self.queue_heads))
        return offsets

    def _dispatch(self, topic: np.ndarray, producer: np.ndarray, key: np.ndarray, uniq: np.ndarray,
                  phy: np.ndarray, store_ts: np.ndarray) -> None:
        """Index entries in the broker's order (§5.4): `topic#UNIQ_KEY`, then the key (ASCII rows)."""
        layout = self.layout
        prefix = layout.topic_hash[topic]
        uniq_prefix = np.array([java_string_hashcode(p) & 0xFFFFFFFF for p in layout.uniq_prefix],
                               dtype=np.uint64)
        prefix_len = len(layout.uniq_prefix[0])
        with np.errstate(over="ignore"):
            uniq_hash_prefix = prefix * np.uint64(pow(31, prefix_len, 1 << 32)) + uniq_prefix[producer]
        uniq_hash_prefix &= np.uint64(0xFFFFFFFF)
        hashes = np.stack([_hash_tail(uniq_hash_prefix, uniq), _hash_tail(prefix, key)], axis=1).reshape(-1)
        self.index.add(hashes, np.repeat(phy, 2), np.repeat(store_ts, 2))

    def _write_queues(self) -> None:
        """Every queue's units in queue-offset order, in segments of `cq_units` units (§4.1, §4.3)."""
        keys = self.queue_of = np.concatenate(self.queue_keys)
        self.phys = np.concatenate(self.queue_phys)
        template = np.concatenate(self.queue_templates)
        self.queue_keys, self.queue_phys, self.queue_templates = [], [], []
        units = np.zeros(len(keys), dtype=CQ_DTYPE)
        units["phy"] = self.phys
        units["size"] = self.layout.sizes[template]
        units["tags_code"] = self.layout.offsets(template, "tags_code")
        order = np.argsort(keys, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(keys, minlength=len(self.queue_heads)))])
        segment = cq_segment_bytes(self.shape.cq_units * CQ_UNIT_SIZE)
        for queue_key in np.flatnonzero(self.queue_heads):
            data = units[order[bounds[queue_key] : bounds[queue_key + 1]]].tobytes()
            directory = self.path / "consumequeue" / topic_name(queue_key // self.shape.queues) / str(
                queue_key % self.shape.queues)
            directory.mkdir(parents=True)
            for at in range(0, len(data), segment):
                write_presized(directory / offset_file_name(at), data[at : at + segment], segment)

    def _finish(self) -> BulkSummary:
        shape, layout = self.shape, self.layout
        last_ts = START_MS + (self.records - 1) * 1000 // shape.rate_per_s
        last_phy = int(self.phys[-1])
        hot = topic_name(0)
        offsets = {f"{hot}@{GROUP}": {q: max(int(self.queue_heads[q]) - GROUP_LAG, 0)
                                      for q in range(shape.queues)}}
        write_config_files(self.path / "config",
                           topics=[TopicConfig(topic_name(i), shape.queues) for i in range(shape.topics)],
                           consumer_offsets=offsets, delay_offsets={}, timestamp_ms=last_ts,
                           broker_name="broker-a", cluster_name="DefaultCluster")
        checkpoint = Checkpoint(physic_msg_timestamp=last_ts, logics_msg_timestamp=last_ts,
                                index_msg_timestamp=self.index.full_end_timestamp,
                                confirm_phy_offset=last_phy)
        (self.path / "checkpoint").write_bytes(encode_checkpoint(checkpoint))
        (self.path / "lock").write_bytes(b"lock")
        return BulkSummary(records=self.records, log_bytes=self.position, topics=shape.topics,
                           queues=shape.queues, hot_topic=hot, group=GROUP, first_timestamp=START_MS,
                           last_timestamp=last_ts,
                           key_groups=layout.key_groups, middle=self._sample(self.records // 2 | 1),
                           index_files=self.index.written)

    def _sample(self, record: int) -> Sample:
        layout, shape = self.layout, self.shape
        phy = int(self.phys[record])
        store_ts = START_MS + record * 1000 // shape.rate_per_s
        template = record % _TEMPLATES
        born_ts = store_ts - layout.templates[template].born_lag_ms
        counter = (record // len(PRODUCERS)) & 0xFFFF
        varying = ((born_ts - layout.month_start) << 16) | counter
        return Sample(
            record=record,
            topic=topic_name(int(self.queue_of[record]) // shape.queues),
            phy=phy,
            msg_id=offset_msg_id(encode_host(STORE_HOST), phy),
            key=f"o{record:0{_KEY_DIGITS}d}",
            repeated_key=f"u{record // _TEMPLATES % layout.key_groups:0{_KEY_DIGITS}d}",
            uniq_key=layout.uniq_prefix[template % len(PRODUCERS)] + f"{varying:0{_UNIQ_VARYING}X}",
            store_timestamp=store_ts,
        )


def create_bulk_store(
    path: str | Path,
    shape: BulkShape,
    *,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
) -> BulkSummary:
    """Write a production-shape store of about `shape.target_bytes` of commit log under `path`.

    `progress` is called with the commit-log bytes of each segment as it is written.
    """
    path = Path(path)
    ensure_empty_store_dir(path, STORE_ENTRIES, overwrite)
    return _BulkWriter(path, shape).write(progress)
