"""`StoreWriter`: writes a broker store directory byte for byte as a broker would.

It plays producer and broker at once: producer-side fields (UNIQ_KEY, compression, KEYS, TAGS,
DELAY, TIMER_DELIVER_MS) and the broker's rewrites (schedule and timer topics, consumer send-backs to
retry and dead-letter topics, transaction half/commit/op records §2.10, batches split into
consecutive records §2.11), then dispatches every record to the consume queues
(§4.1) and index files (§5.4-5.7), and on close writes the checkpoint (§6.1), `config/` JSON
(§1.4) and, for a clean shutdown, no `abort` file (§6.2).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rmqstore.format.checkpoint import Checkpoint, encode_checkpoint
from rmqstore.format.compression import compress_body
from rmqstore.format.consumequeue import record_tags_code
from rmqstore.format.hosts import encode_host
from rmqstore.format.layout import (
    COMPRESSION_TYPE_SHIFT,
    SYSFLAG_COMPRESSED,
    SYSFLAG_MULTI_TAGS,
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_COMMIT,
    TRANSACTION_NOT_TYPE,
)
from rmqstore.format.msgid import offset_msg_id
from rmqstore.format.record import (
    DLQ_PREFIX,
    PROPERTY_DELAY,
    PROPERTY_KEYS,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_REAL_QID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_TAGS,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TIMER_OUT_MS,
    PROPERTY_UNIQ_KEY,
    RETRY_PREFIX,
    SCHEDULE_TOPIC,
    TIMER_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    decode_record,
    encode_record,
)
from rmqstore.writer.commitlog import CommitLogWriter
from rmqstore.writer.config import SYSTEM_TOPIC_QUEUES, TopicConfig, write_config_files
from rmqstore.writer.consumequeue import ConsumeQueueWriter
from rmqstore.writer.files import ensure_empty_store_dir
from rmqstore.writer.indexes import IndexWriter
from rmqstore.writer.message import AppendResult, MessageSpec, UniqKeyGenerator

PROPERTY_WAIT = "WAIT"
PROPERTY_CLUSTER = "CLUSTER"
PROPERTY_TRAN_MSG = "TRAN_MSG"
PROPERTY_PRODUCER_GROUP = "PGROUP"
DEFAULT_MAX_RECONSUME_TIMES = 16
"""`SubscriptionGroupConfig.retryMaxTimes`; a 3.4.9+ consumer sends its own `maxReconsumeTimes`."""
PROPERTY_TIMER_DELAY_MS = "TIMER_DELAY_MS"
PROPERTY_TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
PROPERTY_TIMER_ENQUEUE_MS = "TIMER_ENQUEUE_MS"
PROPERTY_TIMER_DEQUEUE_MS = "TIMER_DEQUEUE_MS"
TIMER_PRECISION_MS = 1000
"""`timerPrecisionMs`: a timer message's TIMER_OUT_MS is its delivery time cut to this grid."""
TIMER_MAX_DELAY_MS = 3 * 24 * 3_600_000
"""`timerMaxDelaySec` (3 days): the broker refuses timer messages due later."""
_TIMER_REQUESTS = (PROPERTY_TIMER_DELIVER_MS, PROPERTY_TIMER_DELAY_MS, PROPERTY_TIMER_DELAY_SEC)
OP_REMOVE_TAG = "d"
"""Tag of a transaction op record: the half message at the offset in the body is done."""
MAX_DELAY_LEVEL = 18
"""Levels of the default `messageDelayLevel` table; higher levels are clamped to it (§2.10)."""

STORE_ENTRIES = ("commitlog", "consumequeue", "index", "config", "checkpoint", "abort", "abort.bak", "lock")
"""Names a store directory may hold; only these are removed by `overwrite=True`."""

_DEFAULT_START_MS = 1_700_000_000_000
_CLUSTER_NAME = "DefaultCluster"


@dataclass(frozen=True)
class _Planned:
    """A record before it gets its physical and queue offsets."""

    topic: str
    queue_id: int
    body: bytes
    properties: dict[str, str]
    flag: int
    sys_flag: int
    born_timestamp: int
    store_timestamp: int
    born_host: str
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    delay_level: int = 0

    @property
    def transaction(self) -> int:
        return self.sys_flag & SYSFLAG_TRANSACTION_MASK

    @property
    def has_queue_offset(self) -> bool:
        """Only NOT and COMMIT records take a queue offset and a consume-queue unit (§4.1)."""
        return self.transaction in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT)

    @property
    def tags_code(self) -> int:
        """What the dispatcher computes: TAGS hash, or the delivery time on the schedule topic (§4.2)."""
        return record_tags_code(self.topic, self.properties, self.store_timestamp)


@dataclass
class _Counters:
    last_store_timestamp: int = 0
    last_dispatched_timestamp: int = 0
    last_record_offset: int = 0
    delivered_per_level: dict[int, int] = field(default_factory=dict)


class StoreWriter:
    """Writes a RocketMQ store under `path` (spec §1).

    Sizes are the broker's config keys: `segment_size` = mappedFileSizeCommitLog, `cq_segment_size`
    = mappedFileSizeConsumeQueue, `index_hash_slots` / `index_entries` = maxHashSlotNum / maxIndexNum.
    Output is a pure function of the calls and `seed`. An existing non-empty directory is refused
    unless `overwrite`. Call `close()` (or use as a context manager) to finish the store.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        segment_size: int = 1 << 30,
        cq_segment_size: int = 300_000 * 20,
        index_hash_slots: int = 5_000_000,
        index_entries: int = 20_000_000,
        store_host: str = "127.0.0.1:10911",
        seed: int = 0,
        start_timestamp: int = _DEFAULT_START_MS,
        default_queue_nums: int = 4,
        broker_name: str = "broker-a",
        append_crc_property: bool = False,
        preallocate_next_segment: bool = True,
        overwrite: bool = False,
    ) -> None:
        if index_entries < 2:
            raise ValueError("index_entries must be at least 2 (entry #0 is never used, §5.2)")
        self.path = Path(path)
        ensure_empty_store_dir(self.path, STORE_ENTRIES, overwrite)
        self.store_host = store_host
        self._store_host_bytes = encode_host(store_host)
        self._rng = random.Random(seed)
        self._clock_ms = start_timestamp
        self._default_queue_nums = default_queue_nums
        self._broker_name = broker_name
        self._append_crc = append_crc_property
        self._preallocate = preallocate_next_segment
        self._commitlog = CommitLogWriter(self.path / "commitlog", segment_size)
        self._cq = ConsumeQueueWriter(self.path / "consumequeue", cq_segment_size)
        self._index = IndexWriter(self.path / "index", index_hash_slots, index_entries)
        self._topics: dict[str, TopicConfig] = {}
        self._round_robin: dict[str, int] = {}
        self._next_queue_offset: dict[tuple[str, int], int] = {}
        self._producers: dict[str, UniqKeyGenerator] = {}
        self._pending_delayed: dict[int, _Planned] = {}
        self._pending_half: dict[int, tuple[_Planned, int]] = {}
        self._consumer_offsets: dict[str, dict[int, int]] = {}
        self._counters = _Counters()
        self._closed = False

    # ------------------------------------------------------------------ configuration

    def declare_topic(
        self, topic: str, queue_nums: int, *, multi_tag: bool = False, order: bool = False, perm: int = 6
    ) -> None:
        """Topic config as in topics.json; MULTI_TAG topics get sysFlag bit 1 on their records (§2.3)."""
        self._topics[topic] = TopicConfig(topic, queue_nums, multi_tag=multi_tag, order=order, perm=perm)

    def set_consumer_offset(self, topic: str, group: str, queue_id: int, next_offset: int) -> None:
        """A committed consumer-group offset for consumerOffset.json (next queue offset to consume)."""
        self._consumer_offsets.setdefault(f"{topic}@{group}", {})[queue_id] = next_offset

    def advance_clock(self, ms: int) -> None:
        """Move the broker clock forward; records without an explicit store time use it."""
        self._clock_ms += ms

    @property
    def now_ms(self) -> int:
        return self._clock_ms

    @property
    def position(self) -> int:
        """The end of the commit log so far (physical offset of the next record)."""
        return self._commitlog.position

    def queue_max_offset(self, topic: str, queue_id: int) -> int:
        """Number of queue offsets handed out in (topic, queueId)."""
        return self._next_queue_offset.get((topic, queue_id), 0)

    def queues(self) -> list[tuple[str, int]]:
        """Every (topic, queueId) that has received a queue offset."""
        return sorted(self._next_queue_offset)

    # ------------------------------------------------------------------ appends

    def append(self, spec: MessageSpec) -> AppendResult:
        """Store one message; a delay level sends it to the schedule topic, a future TIMER_DELIVER_MS
        (or TIMER_DELAY_MS / TIMER_DELAY_SEC) property to the 5.x timer topic (§2.10)."""
        return self._put(self._plan(spec), spec.delay_level)

    def append_batch(self, specs: Sequence[MessageSpec]) -> list[AppendResult]:
        """Store a producer batch: one record per message, contiguous, consecutive queue offsets (§2.11).

        Header fields (queue, born time and host, store time) come from the first message; every
        message keeps its own body, flag and properties. Batches allow no delay, compression or
        transaction type, like the client.
        """
        if not specs:
            raise ValueError("a batch needs at least one message")
        first = specs[0]
        for spec in specs:
            if spec.topic != first.topic:
                raise ValueError(f"batch mixes topics {first.topic!r} and {spec.topic!r}")
            if spec.delay_level or spec.compression is not None or spec.transaction != TRANSACTION_NOT_TYPE:
                raise ValueError("batch messages cannot be delayed, compressed or transactional")
        head = self._plan(first)
        planned = [head]
        for spec in specs[1:]:
            inner = self._plan(
                replace(
                    spec,
                    queue_id=head.queue_id,
                    born_host=head.born_host,
                    born_timestamp=head.born_timestamp,
                    store_timestamp=head.store_timestamp,
                )
            )
            planned.append(inner)
        return self._write_block(planned)

    def deliver_delayed(self, scheduled: AppendResult, *, store_timestamp: int | None = None) -> AppendResult:
        """The second record of a schedule- or timer-topic record: the message in its real topic and queue.

        The schedule service (`messageTimeUp`) stores the properties as they were, DELAY, REAL_TOPIC,
        REAL_QID and WAIT included (it clears them after encoding them); the timer store (`convert`,
        `convertMessage`) adds TIMER_ENQUEUE_MS and TIMER_DEQUEUE_MS and keeps the rest the same way (§2.10).
        """
        planned = self._pending_delayed.pop(scheduled.physical_offset, None)
        if planned is None:
            raise ValueError(f"no undelivered schedule- or timer-topic record at offset "
                             f"{scheduled.physical_offset}")
        now = self._store_time(store_timestamp)
        properties = dict(planned.properties)
        if planned.topic == TIMER_TOPIC:
            properties[PROPERTY_TIMER_ENQUEUE_MS] = str(planned.store_timestamp)
            properties[PROPERTY_TIMER_DEQUEUE_MS] = str(now)
        delivered = replace(
            planned,
            topic=properties[PROPERTY_REAL_TOPIC],
            queue_id=int(properties[PROPERTY_REAL_QID]),
            properties=properties,
            store_timestamp=now,
            delay_level=0,
        )
        (result,) = self._write_block([delivered])
        level = planned.delay_level
        if planned.topic == SCHEDULE_TOPIC:
            self._counters.delivered_per_level[level] = self._counters.delivered_per_level.get(level, 0) + 1
        return result

    def send_back(
        self,
        consumed: AppendResult,
        group: str,
        *,
        max_reconsume_times: int = DEFAULT_MAX_RECONSUME_TIMES,
        delay_level: int = 0,
        store_timestamp: int | None = None,
    ) -> AppendResult:
        """A consumer group's send-back of the record at `consumed` after a failed consumption (§2.10).

        As `consumerSendMsgBack`: the record is read back from the log (body and sysFlag as stored), gets
        RETRY_TOPIC (its topic, unless set), WAIT=false, ORIGIN_MESSAGE_ID (its offsetMsgId, unless set)
        and reconsumeTimes + 1, and goes to `%RETRY%<group>` queue 0 through the schedule topic at delay
        level `delay_level` or else 3 + reconsumeTimes; once its reconsumeTimes reached
        `max_reconsume_times` (or `delay_level` < 0) to `%DLQ%<group>` queue 0 with DELAY=0. Both topics
        are created with one queue. Returns the stored record (schedule topic or DLQ).
        """
        record = decode_record(self._commitlog.read(consumed.physical_offset, consumed.store_size), 0,
                               decompress=False)
        properties = dict(record.properties)
        properties.setdefault(PROPERTY_RETRY_TOPIC, record.topic)
        properties[PROPERTY_WAIT] = "false"
        dead = record.reconsume_times >= max_reconsume_times or delay_level < 0
        topic = (DLQ_PREFIX if dead else RETRY_PREFIX) + group
        if topic not in self._topics:
            self.declare_topic(topic, 1)
        level = 0 if dead else delay_level or 3 + record.reconsume_times
        properties[PROPERTY_DELAY] = str(level)
        origin = properties.get(PROPERTY_ORIGIN_MESSAGE_ID, "").strip()
        properties[PROPERTY_ORIGIN_MESSAGE_ID] = origin or record.msg_id
        planned = _Planned(
            topic=topic,
            queue_id=0,
            body=record.body,
            properties=properties,
            flag=record.flag,
            sys_flag=record.sys_flag,
            born_timestamp=record.born_timestamp,
            store_timestamp=self._store_time(store_timestamp),
            born_host=record.born_host,
            reconsume_times=record.reconsume_times + 1,
        )
        return self._put(planned, level)

    def begin_transaction(self, spec: MessageSpec, *, producer_group: str = "PID_TXN") -> AppendResult:
        """The half message: stored in RMQ_SYS_TRANS_HALF_TOPIC queue 0, type reset to NOT (§2.10)."""
        if spec.delay_level:
            raise ValueError("transactional messages cannot be delayed")
        planned = self._plan(replace(spec, transaction=TRANSACTION_NOT_TYPE))
        properties = dict(planned.properties)
        properties[PROPERTY_TRAN_MSG] = "true"
        properties[PROPERTY_PRODUCER_GROUP] = producer_group
        properties[PROPERTY_REAL_TOPIC] = planned.topic
        properties[PROPERTY_REAL_QID] = str(planned.queue_id)
        half = replace(planned, topic=TRANS_HALF_TOPIC, queue_id=0, properties=properties)
        (result,) = self._write_block([half])
        self._pending_half[result.physical_offset] = (half, result.queue_offset)
        return result

    def end_transaction(
        self, half: AppendResult, *, commit: bool, store_timestamp: int | None = None
    ) -> AppendResult | None:
        """Commit or roll back a half message (`EndTransactionProcessor`, §2.10).

        Commit writes the message in its real topic with type COMMIT and PREPAREDTRANSACTIONOFFSET =
        the half record's offset (properties keep REAL_TOPIC/REAL_QID, lose TRAN_MSG) and returns it;
        both outcomes then write an op record (tag "d", body = the half's queue offset).
        """
        pending = self._pending_half.pop(half.physical_offset, None)
        if pending is None:
            raise ValueError(f"no open half message at offset {half.physical_offset}")
        planned, half_queue_offset = pending
        now = self._store_time(store_timestamp)
        result = None
        if commit:
            properties = {k: v for k, v in planned.properties.items() if k != PROPERTY_TRAN_MSG}
            committed = replace(
                planned,
                topic=properties[PROPERTY_REAL_TOPIC],
                queue_id=int(properties[PROPERTY_REAL_QID]),
                properties=properties,
                sys_flag=(planned.sys_flag & ~SYSFLAG_TRANSACTION_MASK) | TRANSACTION_COMMIT,
                store_timestamp=now,
                prepared_transaction_offset=half.physical_offset,
            )
            (result,) = self._write_block([committed])
        op_props = {PROPERTY_TAGS: OP_REMOVE_TAG, PROPERTY_CLUSTER: _CLUSTER_NAME}
        op_props[PROPERTY_UNIQ_KEY] = self._producer(self.store_host).next(now)
        op = _Planned(
            topic=TRANS_OP_HALF_TOPIC,
            queue_id=half.queue_id,
            body=str(half_queue_offset).encode("ascii"),
            properties=op_props,
            flag=0,
            sys_flag=0,
            born_timestamp=now,
            store_timestamp=now,
            born_host=self.store_host,
        )
        self._write_block([op])
        return result

    # ------------------------------------------------------------------ close

    def close(self, *, crashed: bool = False, torn_fraction: float = 0.5) -> None:
        """Finish the store: commit log, consume queues, index files, checkpoint, config JSON.

        `crashed` leaves the state of a killed broker: an `abort` file with a PID (5.x) and a torn
        tail (the first `torn_fraction` of one more record after the log's valid end).
        """
        if self._closed:
            return
        self._closed = True
        if crashed:
            self._write_torn_tail(torn_fraction)
        self._commitlog.close(preallocate_next=self._preallocate)
        self._cq.close()
        self._index.close(flushed=not crashed)
        self._write_checkpoint()
        write_config_files(
            self.path / "config",
            topics=self._topic_configs(),
            consumer_offsets=self._consumer_offsets,
            delay_offsets=self._counters.delivered_per_level,
            timestamp_ms=self._counters.last_store_timestamp,
            broker_name=self._broker_name,
            cluster_name=_CLUSTER_NAME,
        )
        (self.path / "lock").write_bytes(b"lock")
        if crashed:
            (self.path / "abort").write_text(str(self._rng.randrange(1000, 65536)))

    def __enter__(self) -> StoreWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _store_time(self, explicit: int | None) -> int:
        if explicit is not None:
            return explicit
        now = max(self._clock_ms, self._counters.last_store_timestamp)
        self._clock_ms = now + 1
        return now

    def _producer(self, born_host: str) -> UniqKeyGenerator:
        generator = self._producers.get(born_host)
        if generator is None:
            generator = UniqKeyGenerator(born_host, self._rng.randrange(1, 65536), self._rng.getrandbits(31))
            self._producers[born_host] = generator
        return generator

    def _topic(self, topic: str) -> TopicConfig:
        config = self._topics.get(topic)
        if config is None:
            config = TopicConfig(topic, SYSTEM_TOPIC_QUEUES.get(topic, self._default_queue_nums))
            self._topics[topic] = config
        return config

    def _pick_queue(self, topic: str) -> int:
        turn = self._round_robin.get(topic, 0)
        self._round_robin[topic] = turn + 1
        return turn % self._topic(topic).queue_nums

    def _plan(self, spec: MessageSpec) -> _Planned:
        """Producer + broker fields of one message in its own topic (no rewrites yet)."""
        store_timestamp = self._store_time(spec.store_timestamp)
        born_timestamp = spec.born_timestamp if spec.born_timestamp is not None else store_timestamp - 2
        queue_id = spec.queue_id if spec.queue_id is not None else self._pick_queue(spec.topic)
        properties = dict(spec.properties)
        keys = spec.keys_property()
        if keys:
            properties[PROPERTY_KEYS] = keys
        if spec.tags:
            properties[PROPERTY_TAGS] = spec.tags
        if spec.wait_store_msg_ok is not None:
            properties[PROPERTY_WAIT] = "true" if spec.wait_store_msg_ok else "false"
        uniq_key = spec.uniq_key
        if uniq_key is None and spec.auto_uniq_key:
            uniq_key = self._producer(spec.born_host).next(born_timestamp)
        if uniq_key:
            properties[PROPERTY_UNIQ_KEY] = uniq_key
        properties[PROPERTY_CLUSTER] = _CLUSTER_NAME
        body = bytes(spec.body)
        sys_flag = spec.transaction & SYSFLAG_TRANSACTION_MASK
        if spec.compression is not None:
            body = compress_body(body, spec.compression)
            sys_flag |= SYSFLAG_COMPRESSED | (spec.compression << COMPRESSION_TYPE_SHIFT)
        if self._topic(spec.topic).multi_tag:
            sys_flag |= SYSFLAG_MULTI_TAGS
        return _Planned(
            topic=spec.topic,
            queue_id=queue_id,
            body=body,
            properties=properties,
            flag=spec.flag,
            sys_flag=sys_flag,
            born_timestamp=born_timestamp,
            store_timestamp=store_timestamp,
            born_host=spec.born_host,
            reconsume_times=spec.reconsume_times,
        )

    def _put(self, planned: _Planned, delay_level: int) -> AppendResult:
        """Store one record after the broker's put hooks (`HookUtils.handleScheduleMessage`, §2.10)."""
        if planned.has_queue_offset:
            if delay_level > 0:
                planned = self._to_schedule_topic(planned, delay_level)
            elif self._is_timer_request(planned):
                planned = self._to_timer_topic(planned)
        (result,) = self._write_block([planned])
        if planned.topic in (SCHEDULE_TOPIC, TIMER_TOPIC):
            self._pending_delayed[result.physical_offset] = planned
        return result

    @staticmethod
    def _is_timer_request(planned: _Planned) -> bool:
        """`checkIfTimerMessage` for a record without a delay level."""
        properties = planned.properties
        if planned.topic == TIMER_TOPIC or PROPERTY_TIMER_OUT_MS in properties:
            return False
        return any(name in properties for name in _TIMER_REQUESTS)

    def _to_timer_topic(self, planned: _Planned) -> _Planned:
        """`transformTimerMessage`: a delivery time past the store time sends the record to the timer topic
        queue 0 with TIMER_OUT_MS (cut to the timer precision), REAL_TOPIC and REAL_QID."""
        now, properties = planned.store_timestamp, dict(planned.properties)
        if PROPERTY_TIMER_DELAY_SEC in properties:
            deliver = now + int(properties[PROPERTY_TIMER_DELAY_SEC]) * 1000
        elif PROPERTY_TIMER_DELAY_MS in properties:
            deliver = now + int(properties[PROPERTY_TIMER_DELAY_MS])
        else:
            deliver = int(properties[PROPERTY_TIMER_DELIVER_MS])
        if deliver <= now:
            return planned
        if deliver - now > TIMER_MAX_DELAY_MS:
            raise ValueError(f"timer message due {deliver - now} ms after its store time: the broker refuses "
                             f"more than {TIMER_MAX_DELAY_MS} ms (timerMaxDelaySec)")
        deliver = deliver - TIMER_PRECISION_MS if deliver % TIMER_PRECISION_MS == 0 else (
            deliver // TIMER_PRECISION_MS * TIMER_PRECISION_MS)
        properties[PROPERTY_TIMER_OUT_MS] = str(deliver)
        properties[PROPERTY_REAL_TOPIC] = planned.topic
        properties[PROPERTY_REAL_QID] = str(planned.queue_id)
        if TIMER_TOPIC not in self._topics:
            self.declare_topic(TIMER_TOPIC, 1)
        return replace(planned, topic=TIMER_TOPIC, queue_id=0, properties=properties)

    def _to_schedule_topic(self, planned: _Planned, delay_level: int) -> _Planned:
        """`transformDelayLevelMessage`; a delay level drops the timer properties (`checkIfTimerMessage`)."""
        level = min(delay_level, MAX_DELAY_LEVEL)
        properties = {k: v for k, v in planned.properties.items() if k not in _TIMER_REQUESTS}
        properties[PROPERTY_DELAY] = str(level)
        properties[PROPERTY_REAL_TOPIC] = planned.topic
        properties[PROPERTY_REAL_QID] = str(planned.queue_id)
        return replace(
            planned, topic=SCHEDULE_TOPIC, queue_id=level - 1, properties=properties, delay_level=level
        )

    def _write_block(self, block: list[_Planned]) -> list[AppendResult]:
        """Append records contiguously (all in one segment), then dispatch them to CQ and index."""
        if self._closed:
            raise ValueError("the writer is closed")
        queue_offsets = []
        taken: dict[tuple[str, int], int] = {}
        for planned in block:
            queue = (planned.topic, planned.queue_id)
            if planned.has_queue_offset:
                offset = self._next_queue_offset.get(queue, 0) + taken.get(queue, 0)
                taken[queue] = taken.get(queue, 0) + 1
            else:
                offset = 0
            queue_offsets.append(offset)

        def encode(start: int) -> list[bytes]:
            records = []
            for planned, queue_offset in zip(block, queue_offsets, strict=True):
                records.append(self._encode(planned, queue_offset, start))
                start += len(records[-1])
            return records

        start, records = self._commitlog.append(encode)
        for queue, count in taken.items():
            self._next_queue_offset[queue] = self._next_queue_offset.get(queue, 0) + count
        results = []
        for planned, queue_offset, record in zip(block, queue_offsets, records, strict=True):
            results.append(self._dispatch(planned, queue_offset, start, len(record)))
            start += len(record)
        return results

    def _encode(self, planned: _Planned, queue_offset: int, physical_offset: int) -> bytes:
        return encode_record(
            topic=planned.topic,
            queue_id=planned.queue_id,
            body=planned.body,
            properties=planned.properties,
            queue_offset=queue_offset,
            physical_offset=physical_offset,
            born_timestamp=planned.born_timestamp,
            store_timestamp=planned.store_timestamp,
            born_host=planned.born_host,
            store_host=self.store_host,
            flag=planned.flag,
            sys_flag=planned.sys_flag,
            reconsume_times=planned.reconsume_times,
            prepared_transaction_offset=planned.prepared_transaction_offset,
            append_crc_property=self._append_crc,
        )

    def _dispatch(self, planned: _Planned, queue_offset: int, phy: int, size: int) -> AppendResult:
        """What `ReputMessageService` does for one record: consume-queue unit and index keys."""
        self._topic(planned.topic)
        if planned.has_queue_offset:
            self._cq.add(planned.topic, planned.queue_id, queue_offset, phy, size, planned.tags_code)
            self._counters.last_dispatched_timestamp = planned.store_timestamp
        uniq_key = planned.properties.get(PROPERTY_UNIQ_KEY)
        self._index.dispatch(
            planned.topic,
            phy,
            planned.store_timestamp,
            planned.sys_flag,
            uniq_key,
            planned.properties.get(PROPERTY_KEYS),
        )
        counters = self._counters
        counters.last_store_timestamp = max(counters.last_store_timestamp, planned.store_timestamp)
        counters.last_record_offset = phy
        return AppendResult(
            physical_offset=phy,
            queue_offset=queue_offset,
            msg_id=offset_msg_id(self._store_host_bytes, phy),
            topic=planned.topic,
            queue_id=planned.queue_id,
            store_size=size,
            uniq_key=uniq_key,
        )

    def _write_torn_tail(self, fraction: float) -> None:
        victim = _Planned(
            topic="TopicTorn",
            queue_id=0,
            body=b"torn" * 64,
            properties={PROPERTY_KEYS: "torn"},
            flag=0,
            sys_flag=0,
            born_timestamp=self._clock_ms,
            store_timestamp=self._clock_ms,
            born_host=self.store_host,
        )
        record = self._encode(victim, 0, self._commitlog.position)
        self._commitlog.write_torn(record[: max(1, int(len(record) * fraction))])

    def _write_checkpoint(self) -> None:
        counters = self._counters
        checkpoint = Checkpoint(
            physic_msg_timestamp=counters.last_store_timestamp,
            logics_msg_timestamp=counters.last_dispatched_timestamp,
            index_msg_timestamp=self._index.last_full_end_timestamp,
            master_flushed_offset=0,
            confirm_phy_offset=counters.last_record_offset,
        )
        (self.path / "checkpoint").write_bytes(encode_checkpoint(checkpoint))

    def _topic_configs(self) -> list[TopicConfig]:
        for topic, queue_id in self._next_queue_offset:
            config = self._topic(topic)
            if queue_id >= config.queue_nums:
                self._topics[topic] = replace(config, queue_nums=queue_id + 1)
        return list(self._topics.values())
