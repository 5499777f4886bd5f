"""A realistic demo store: what a small shop's broker holds after a few hours of traffic.

Several topics and queues, single / multi / unicode / non-BMP keys, UNIQ_KEYs (a few producers
without them), compressed bodies (zlib, legacy zlib, LZ4, zstd), delayed messages (schedule topic,
some delivered), 5.x timer messages (timer topic, some delivered), transactions (committed, rolled
back, open) plus raw PREPARED/ROLLBACK records, producer batches, IPv6 producers, consumer groups
caught up, lagging, and failing: their send-backs go through the schedule topic to `%RETRY%<group>`
(one group's name makes a topic long enough for v2 records) and, past the group's
maxReconsumeTimes, to `%DLQ%<group>` (§2.10). Deterministic for a given seed; sized by the
commit-log bytes it writes. A `tracer` sees every send and every modelled consume; the default one
(`rmqstore.writer.trace.TracedClients`) appends the clients' trace messages to RMQ_SYS_TRACE_TOPIC.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from rmqstore.format.consumequeue import DEFAULT_DELAY_LEVEL_TABLE
from rmqstore.format.layout import (
    COMPRESSION_LEGACY_ZLIB,
    COMPRESSION_LZ4,
    COMPRESSION_ZLIB,
    COMPRESSION_ZSTD,
    TRANSACTION_PREPARED,
    TRANSACTION_ROLLBACK,
)
from rmqstore.format.record import SCHEDULE_TOPIC
from rmqstore.writer.message import AppendResult, MessageSpec
from rmqstore.writer.store_writer import (
    DEFAULT_MAX_RECONSUME_TIMES,
    MAX_DELAY_LEVEL,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELIVER_MS,
    RETRY_PREFIX,
    StoreWriter,
)
from rmqstore.writer.trace import TracedClients

DEMO_START_MS = 1_710_057_600_000
"""2024-03-10T08:00:00Z: first store time of a demo store."""
DEMO_SPAN_MS = 6 * 3_600_000
"""Store times of a demo store spread over six hours."""
DEMO_STORE_HOST = "10.0.0.5:10911"
DEMO_SCENARIO = 2
"""Version of what a demo store holds; bump it when the scenario changes, since stores written by an older
scenario are kept by name (`examples/_common.py`) and would lack what the examples look for (2: retries,
dead letters, timers, traced clients)."""

PRODUCERS = (
    "10.0.1.15:51234",
    "10.0.1.16:40022",
    "192.168.7.3:60111",
    "[2001:db8:0:1::15]:41000",
    "[fe80::a00:27ff:fe4e:66a1]:50555",
)
TRACED_PRODUCERS = PRODUCERS[1:2]
"""The producer with message trace on (the consumers all have it; few clients do, trace costs a send)."""
COMPRESSIONS = (COMPRESSION_ZLIB, COMPRESSION_LZ4, COMPRESSION_ZSTD, COMPRESSION_LEGACY_ZLIB)
LONG_GROUP = "cg-" + "reconciliation-" * 9
LONG_RETRY_TOPIC = RETRY_PREFIX + LONG_GROUP
"""A retry topic longer than 127 chars: stored with the v2 magic code (§2.5)."""


@dataclass(frozen=True)
class ConsumerGroup:
    """A demo consumer group: its committed offsets lag by about `lag` of each queue; it fails on
    `fail_share` of the messages, each failing 1..`max_fails` times (a send-back each, §2.10), and
    consumes nothing after `stops` of the demo's time span (its retries wait then)."""

    name: str
    topics: tuple[str, ...]
    lag: float = 0.0
    fail_share: float = 0.0
    max_fails: int = 0
    max_reconsume_times: int = DEFAULT_MAX_RECONSUME_TIMES
    stops: float = 1.0


GROUPS = (
    ConsumerGroup("cg-orders", ("OrderEvents",), fail_share=0.02, max_fails=2),
    ConsumerGroup("cg-analytics", ("OrderEvents", "UserActivity"), lag=0.3),
    ConsumerGroup("cg-payments", ("PaymentTopic",), lag=0.1, fail_share=0.12, max_fails=4,
                  max_reconsume_times=3, stops=0.9),
    ConsumerGroup("cg-inventory", ("InventoryUpdates",), lag=0.9),
    ConsumerGroup(LONG_GROUP, ("AuditLog",), fail_share=0.05, max_fails=1),
)
"""Caught up (failing now and then), lagging, failing into the DLQ (its consumers set maxReconsumeTimes 3)
and stopped near the end with retries waiting."""


@dataclass(frozen=True)
class DemoEvent:
    """A producer's send (`group` None; `record` as stored: schedule, timer or half copies included) or a
    consumer group's consume of `record` (`ok` False: it failed and was sent back)."""

    at_ms: int
    record: AppendResult
    group: str | None = None
    ok: bool = True
    spec: MessageSpec | None = None
    """The message the producer sent (a send's)."""


Tracer = Callable[[StoreWriter, DemoEvent], None]
"""Called in store-time order as the scenario runs; may append records (trace messages) itself."""

_WORDS = [
    "order",
    "paid",
    "shipped",
    "refund",
    "cart",
    "item",
    "sku",
    "price",
    "qty",
    "user",
    "session",
    "click",
    "view",
    "search",
    "coupon",
    "warehouse",
    "stock",
    "region",
    "eu-west",
    "us-east",
    "ap-south",
    "status",
    "ok",
    "pending",
    "failed",
    "retry",
    "amount",
    "currency",
    "EUR",
    "USD",
    "CNY",
    "订单",
    "支付",
    "用户",
    "库存",
    "café",
    "naïve",
    "😀",
    "🚀",
    "☕",
]
_REGIONS = ("eu-west", "us-east", "ap-south")
_POOL_BYTES = 1 << 21
_COMPRESS_MIN_BODY = 4096
"""Producers compress single messages with bodies of at least 4 KiB (`compressMsgBodyOverHowmuch`)."""


@dataclass(frozen=True)
class _Failure:
    """A message `group` fails on `fails_left` more times; it was sent back `attempt` times so far."""

    group: ConsumerGroup
    fails_left: int
    attempt: int = 0


@dataclass
class _Traffic:
    """Generates the demo's message stream from one seeded RNG."""

    rng: random.Random
    pool: bytes
    counter: int = 0
    tickets: int = 0
    open_transactions: list[tuple[int, int, AppendResult]] = field(default_factory=list)
    undelivered: list[tuple[int, int, AppendResult, _Failure | None]] = field(default_factory=list)
    """Heaps of (due time, ticket, record[, the failure a retry is delivered for])."""
    consumes: list[tuple[int, int, AppendResult, _Failure]] = field(default_factory=list)
    """Heap of (time, ticket, record, failure) of the consumes the scenario models."""
    stalled: list[tuple[int, int, AppendResult, _Failure]] = field(default_factory=list)
    """Consumes of groups that had stopped when they fell due."""

    def ticket(self) -> int:
        """A tie-breaker for the heaps: events due at the same time stay in the order they were planned."""
        self.tickets += 1
        return self.tickets

    def body(self, size: int) -> bytes:
        start = self.rng.randrange(len(self.pool) - size)
        return b'{"seq":%d,"data":"' % self.counter + self.pool[start : start + size] + b'"}'

    def producer(self) -> str:
        return self.rng.choice(PRODUCERS)

    def next_id(self) -> int:
        self.counter += 1
        return self.counter

    def order_message(self, now: int) -> MessageSpec:
        n = self.next_id()
        shape = self.rng.random()
        if shape < 0.6:
            keys: str | list[str] = f"order-{n}"
        elif shape < 0.85:
            keys = [f"order-{n}", f"user-{n % 997}"]
        elif shape < 0.95:
            keys = f"订单-{n}"
        else:
            keys = f"order-{n}  key-😀-{n % 13} "
        return MessageSpec(
            topic="OrderEvents",
            body=self.body(self.rng.randrange(200, 2400)),
            tags=self.rng.choice(("created", "paid", "shipped", "cancelled")),
            keys=keys,
            properties={
                "traceId": f"{self.rng.getrandbits(64):016x}",
                "region": self.rng.choice(_REGIONS),
            },
            born_host=self.producer(),
            born_timestamp=now - self.rng.randrange(1, 40),
            store_timestamp=now,
        )

    def activity_message(self, now: int) -> MessageSpec:
        n = self.next_id()
        binary = self.rng.random() < 0.2
        return MessageSpec(
            topic="UserActivity",
            body=self.rng.randbytes(self.rng.randrange(16, 600))
            if binary
            else self.body(self.rng.randrange(80, 900)),
            tags=self.rng.choice(("TagB||TagC", "view", "click", None)),
            keys=None if self.rng.random() < 0.5 else f"user-{n % 997} 😀-session-{n % 71}",
            flag=self.rng.choice((0, 0, 0, 1, 7)),
            born_host=self.producer(),
            born_timestamp=now - self.rng.randrange(1, 40),
            store_timestamp=now,
            auto_uniq_key=self.rng.random() > 0.05,
        )

    def audit_message(self, now: int) -> MessageSpec:
        n = self.next_id()
        return MessageSpec(
            topic="AuditLog",
            body=self.body(self.rng.randrange(_COMPRESS_MIN_BODY, 48_000)),
            tags="audit",
            keys=f"audit-{n}",
            compression=self.rng.choice(COMPRESSIONS),
            born_host=self.producer(),
            born_timestamp=now - self.rng.randrange(1, 40),
            store_timestamp=now,
        )

    def payment_message(self, now: int) -> MessageSpec:
        n = self.next_id()
        return MessageSpec(
            topic="PaymentTopic",
            body=self.body(self.rng.randrange(150, 1200)),
            tags="payment",
            keys=[f"pay-{n}", f"order-{n - 1}"],
            born_host=self.producer(),
            born_timestamp=now - self.rng.randrange(1, 40),
            store_timestamp=now,
        )

    def inventory_batch(self, now: int) -> list[MessageSpec]:
        born_host = self.producer()
        return [
            MessageSpec(
                topic="InventoryUpdates",
                body=self.body(self.rng.randrange(60, 500)),
                tags="stock",
                keys=f"sku-{self.next_id() % 5000}",
                born_host=born_host,
                born_timestamp=now - 5,
                store_timestamp=now,
            )
            for _ in range(self.rng.randrange(2, 13))
        ]

    def cart_timeout(self, now: int) -> tuple[MessageSpec, int]:
        """A cart timeout on the 5.x timer (TIMER_DELIVER_MS, or TIMER_DELAY_SEC), and when it is due;
        a few were due already when sent (a late producer)."""
        n = self.next_id()
        shape = self.rng.random()
        if shape < 0.25:
            seconds = self.rng.randrange(30, 3 * 3600)
            timer, due = {PROPERTY_TIMER_DELAY_SEC: str(seconds)}, now + seconds * 1000
        else:
            late = shape > 0.95
            due = now + (self.rng.randrange(-2000, -1) if late else self.rng.randrange(20_000, 3 * 3_600_000))
            timer = {PROPERTY_TIMER_DELIVER_MS: str(due)}
        spec = MessageSpec(
            topic="CartTimeouts",
            body=self.body(self.rng.randrange(100, 400)),
            tags="timeout",
            keys=f"cart-{n}",
            properties=timer,
            born_host=self.producer(),
            born_timestamp=now - self.rng.randrange(1, 40),
            store_timestamp=now,
        )
        return spec, due

    def legacy_transaction_record(self, now: int) -> MessageSpec:
        n = self.next_id()
        return MessageSpec(
            topic="LegacyTxnTopic",
            body=self.body(self.rng.randrange(100, 400)),
            tags="txn",
            keys=f"txn-{n}",
            transaction=TRANSACTION_PREPARED if n % 2 else TRANSACTION_ROLLBACK,
            born_host=self.producer(),
            born_timestamp=now - 3,
            store_timestamp=now,
        )


def _text_pool(rng: random.Random) -> bytes:
    text = " ".join(rng.choices(_WORDS, k=_POOL_BYTES // 5)).encode("utf-8")
    return text[:_POOL_BYTES].decode("utf-8", errors="ignore").encode("utf-8")


def default_segment_size(target_bytes: int) -> int:
    """A power of two giving the demo about four commit-log segments (1 MiB .. 1 GiB)."""
    size = 1 << 20
    while size < (1 << 30) and size * 4 < target_bytes:
        size <<= 1
    return size


def create_demo_store(
    path: str | Path,
    *,
    target_bytes: int,
    seed: int,
    segment_size: int | None = None,
    index_hash_slots: int = 5_000_000,
    index_entries: int = 20_000_000,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
    tracer: Tracer | None = None,
) -> None:
    """Write a demo store of about `target_bytes` of commit log under `path`.

    `progress` is called with the number of commit-log bytes added since its previous call.
    Index geometry defaults to the broker's (so readers need no options); segment size defaults to
    `default_segment_size(target_bytes)`. `tracer` sees every `DemoEvent` as it happens; by default
    `TracedClients` writes the clients' trace messages (RMQ_SYS_TRACE_TOPIC, §10).
    """
    tracer = TracedClients(seed, TRACED_PRODUCERS) if tracer is None else tracer
    rng = random.Random(seed)
    traffic = _Traffic(rng, _text_pool(rng))
    writer = StoreWriter(
        path,
        segment_size=segment_size or default_segment_size(target_bytes),
        index_hash_slots=index_hash_slots,
        index_entries=index_entries,
        store_host=DEMO_STORE_HOST,
        seed=seed,
        start_timestamp=DEMO_START_MS,
        overwrite=overwrite,
    )
    writer.declare_topic("OrderEvents", 8)
    writer.declare_topic("UserActivity", 4, multi_tag=True)
    writer.declare_topic("PaymentTopic", 4)
    writer.declare_topic("InventoryUpdates", 2, order=True)
    writer.declare_topic("AuditLog", 2)
    writer.declare_topic("CartTimeouts", 2)
    writer.declare_topic("LegacyTxnTopic", 1)
    for group in GROUPS:  # a consumer's heartbeat creates its retry topic, one queue
        writer.declare_topic(RETRY_PREFIX + group.name, 1)
    scenario = _Scenario(writer, traffic, random.Random(f"consumers-{seed}"), tracer)
    reported = 0
    while writer.position < target_bytes:
        now = DEMO_START_MS + writer.position * DEMO_SPAN_MS // max(target_bytes, 1)
        scenario.settle(now)
        scenario.one_event(now)
        if progress is not None and writer.position - reported >= 1 << 20:
            progress(writer.position - reported)
            reported = writer.position
    if isinstance(tracer, TracedClients):
        tracer.flush(writer)
    _set_consumer_offsets(writer, rng, traffic.consumes + traffic.stalled)
    writer.close()
    if progress is not None:
        progress(writer.position - reported)


_FAILING = {topic: tuple(g for g in GROUPS if g.fail_share and topic in g.topics) for topic in
            {topic for g in GROUPS for topic in g.topics}}
"""For each consumed topic, the groups that fail on some of its messages."""


@dataclass
class _Scenario:
    """The demo's events: producers' sends, and the broker's deliveries, transaction ends and
    consumer send-backs as they fall due."""

    writer: StoreWriter
    traffic: _Traffic
    consumers: random.Random
    """Draws of the consumers, apart from the producers' so that these send what they sent before."""
    tracer: Tracer | None

    def one_event(self, now: int) -> None:
        writer, traffic = self.writer, self.traffic
        rng = traffic.rng
        roll = rng.random()
        if roll < 0.05:
            batch = traffic.inventory_batch(now)
            for spec, record in zip(batch, writer.append_batch(batch), strict=True):
                self._sent(record, now, spec)
        elif roll < 0.07:
            level = min(rng.choice((1, 2, 3, 4, 5, 9, 14, 18)), MAX_DELAY_LEVEL)
            scheduled = self._send(replace(traffic.order_message(now), delay_level=level), now)
            heapq.heappush(traffic.undelivered,
                           (now + DEFAULT_DELAY_LEVEL_TABLE[level], traffic.ticket(), scheduled, None))
        elif roll < 0.08:
            payment = traffic.payment_message(now)
            half = self._sent(writer.begin_transaction(payment, producer_group="PID_payments"), now, payment)
            due = now + rng.randrange(500, 20_000)
            heapq.heappush(traffic.open_transactions, (due, traffic.ticket(), half))
        elif roll < 0.085:
            self._send(traffic.legacy_transaction_record(now), now)
        elif roll < 0.10:
            spec, due = traffic.cart_timeout(now)
            timer = self._send(spec, now)
            if timer.topic != spec.topic:
                due += rng.randrange(5, 60)
                heapq.heappush(traffic.undelivered, (due, traffic.ticket(), timer, None))
        elif roll < 0.13:
            self._arrived(self._send(traffic.audit_message(now), now), now)
        elif roll < 0.23:
            self._arrived(self._send(traffic.payment_message(now), now), now)
        elif roll < 0.55:
            self._send(traffic.activity_message(now), now)
        else:
            self._arrived(self._send(traffic.order_message(now), now), now)

    def settle(self, now: int) -> None:
        """Deliver due delayed, timer and retry messages, end due transactions (some stay open), run due
        consumes of failing groups."""
        writer, traffic = self.writer, self.traffic
        while traffic.undelivered and traffic.undelivered[0][0] <= now:
            _, _, scheduled, retry = heapq.heappop(traffic.undelivered)
            delivered = writer.deliver_delayed(scheduled, store_timestamp=now)
            if retry is None:
                self._arrived(delivered, now)
            else:
                self._consume_later(delivered, retry, now)
        while traffic.open_transactions and traffic.open_transactions[0][0] <= now:
            _, _, half = heapq.heappop(traffic.open_transactions)
            committed = writer.end_transaction(half, commit=traffic.rng.random() < 0.85, store_timestamp=now)
            if committed is not None:
                self._arrived(committed, now)
        while traffic.consumes and traffic.consumes[0][0] <= now:
            due = heapq.heappop(traffic.consumes)
            record, failure = due[2], due[3]
            if now - DEMO_START_MS >= failure.group.stops * DEMO_SPAN_MS:
                traffic.stalled.append(due)
            else:
                self._consume(record, failure, now)

    def _send(self, spec: MessageSpec, now: int) -> AppendResult:
        return self._sent(self.writer.append(spec), now, spec)

    def _sent(self, record: AppendResult, now: int, spec: MessageSpec) -> AppendResult:
        if self.tracer is not None:
            self.tracer(self.writer, DemoEvent(now, record, spec=spec))
        return record

    def _arrived(self, record: AppendResult, now: int) -> None:
        """A message in a consumed topic: each failing group fails on some."""
        rng = self.consumers
        for group in _FAILING.get(record.topic, ()):
            if rng.random() < group.fail_share:
                self._consume_later(record, _Failure(group, rng.randint(1, group.max_fails)), now)

    def _consume_later(self, record: AppendResult, failure: _Failure, now: int) -> None:
        traffic = self.traffic
        due = now + self.consumers.randrange(20, 3000)
        heapq.heappush(traffic.consumes, (due, traffic.ticket(), record, failure))

    def _consume(self, record: AppendResult, failure: _Failure, now: int) -> None:
        """The group consumes `record`: success, or a send-back (to the schedule topic or the DLQ)."""
        group = failure.group
        if self.tracer is not None:
            self.tracer(self.writer, DemoEvent(now, record, group.name, ok=failure.fails_left == 0))
        if failure.fails_left == 0:
            return
        back = self.writer.send_back(record, group.name, max_reconsume_times=group.max_reconsume_times,
                                     store_timestamp=now)
        if back.topic == SCHEDULE_TOPIC:
            level = min(3 + failure.attempt, MAX_DELAY_LEVEL)
            retry = _Failure(group, failure.fails_left - 1, failure.attempt + 1)
            heapq.heappush(self.traffic.undelivered,
                           (now + DEFAULT_DELAY_LEVEL_TABLE[level], self.traffic.ticket(), back, retry))


def _set_consumer_offsets(writer: StoreWriter, rng: random.Random, pending: list) -> None:
    """Each group about `lag` behind the head of its topics' queues; on its retry topic at its first
    retry not consumed yet (`pending`: the consumes still due), or at the head (0 when empty)."""
    unconsumed: dict[tuple[str, int], int] = {}
    for _, _, record, _ in pending:
        queue = (record.topic, record.queue_id)
        unconsumed[queue] = min(unconsumed.get(queue, record.queue_offset), record.queue_offset)
    queues = writer.queues()
    for group in GROUPS:
        for topic in group.topics:
            for queue_topic, queue_id in queues:
                if queue_topic == topic:
                    head = writer.queue_max_offset(topic, queue_id)
                    lag = int(head * group.lag * rng.uniform(0.5, 1.0)) if group.lag else 0
                    writer.set_consumer_offset(topic, group.name, queue_id, head - lag)
        retry = RETRY_PREFIX + group.name
        head = writer.queue_max_offset(retry, 0)
        writer.set_consumer_offset(retry, group.name, 0, unconsumed.get((retry, 0), head))
