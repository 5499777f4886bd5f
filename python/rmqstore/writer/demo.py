"""A realistic demo store: what a small shop's broker holds after a few hours of traffic.

Several topics and queues, single / multi / unicode / non-BMP keys, UNIQ_KEYs (a few producers
without them), compressed bodies (zlib, legacy zlib, LZ4, zstd), delayed messages (schedule topic,
some delivered), transactions (committed, rolled back, open) plus raw PREPARED/ROLLBACK records,
producer batches, IPv6 producers, a topic long enough for v2 records, and consumer groups that lag.
Deterministic for a given seed; sized by the commit-log bytes it writes.
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
from rmqstore.writer.message import AppendResult, MessageSpec
from rmqstore.writer.store_writer import StoreWriter

DEMO_START_MS = 1_710_057_600_000
"""2024-03-10T08:00:00Z: first store time of a demo store."""
DEMO_SPAN_MS = 6 * 3_600_000
"""Store times of a demo store spread over six hours."""
DEMO_STORE_HOST = "10.0.0.5:10911"

PRODUCERS = (
    "10.0.1.15:51234",
    "10.0.1.16:40022",
    "192.168.7.3:60111",
    "[2001:db8:0:1::15]:41000",
    "[fe80::a00:27ff:fe4e:66a1]:50555",
)
COMPRESSIONS = (COMPRESSION_ZLIB, COMPRESSION_LZ4, COMPRESSION_ZSTD, COMPRESSION_LEGACY_ZLIB)
LONG_RETRY_TOPIC = "%RETRY%cg-" + "reconciliation-" * 9
"""A retry topic longer than 127 chars: stored with the v2 magic code (§2.5)."""

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


@dataclass
class _Traffic:
    """Generates the demo's message stream from one seeded RNG."""

    rng: random.Random
    pool: bytes
    counter: int = 0
    open_transactions: list[tuple[int, int, AppendResult]] = field(default_factory=list)
    undelivered: list[tuple[int, int, AppendResult]] = field(default_factory=list)
    """Heaps of (due time, physical offset, record)."""

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

    def retry_message(self, now: int) -> MessageSpec:
        n = self.next_id()
        topic = LONG_RETRY_TOPIC if self.rng.random() < 0.1 else "%RETRY%cg-orders"
        return MessageSpec(
            topic=topic,
            body=self.body(self.rng.randrange(200, 1200)),
            tags="created",
            keys=f"order-{n}",
            reconsume_times=self.rng.randrange(1, 4),
            properties={
                "ORIGIN_MESSAGE_ID": f"{self.rng.getrandbits(128):032X}",
                "RETRY_TOPIC": "OrderEvents",
            },
            born_host=self.producer(),
            born_timestamp=now - self.rng.randrange(1000, 60_000),
            store_timestamp=now,
        )

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
) -> None:
    """Write a demo store of about `target_bytes` of commit log under `path`.

    `progress` is called with the number of commit-log bytes added since its previous call.
    Index geometry defaults to the broker's (so readers need no options); segment size defaults to
    `default_segment_size(target_bytes)`.
    """
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
    writer.declare_topic("%RETRY%cg-orders", 1)
    writer.declare_topic(LONG_RETRY_TOPIC, 1)
    writer.declare_topic("LegacyTxnTopic", 1)
    reported = 0
    while writer.position < target_bytes:
        now = DEMO_START_MS + writer.position * DEMO_SPAN_MS // max(target_bytes, 1)
        _settle(writer, traffic, now)
        _one_event(writer, traffic, now)
        if progress is not None and writer.position - reported >= 1 << 20:
            progress(writer.position - reported)
            reported = writer.position
    _set_consumer_offsets(writer, rng)
    writer.close()
    if progress is not None:
        progress(writer.position - reported)


def _one_event(writer: StoreWriter, traffic: _Traffic, now: int) -> None:
    rng = traffic.rng
    roll = rng.random()
    if roll < 0.05:
        writer.append_batch(traffic.inventory_batch(now))
    elif roll < 0.07:
        level = min(rng.choice((1, 2, 3, 4, 5, 9, 14, 18)), 18)
        scheduled = writer.append(replace(traffic.order_message(now), delay_level=level))
        heapq.heappush(
            traffic.undelivered,
            (now + DEFAULT_DELAY_LEVEL_TABLE[level], scheduled.physical_offset, scheduled),
        )
    elif roll < 0.08:
        half = writer.begin_transaction(traffic.payment_message(now), producer_group="PID_payments")
        heapq.heappush(
            traffic.open_transactions, (now + rng.randrange(500, 20_000), half.physical_offset, half)
        )
    elif roll < 0.085:
        writer.append(traffic.legacy_transaction_record(now))
    elif roll < 0.10:
        writer.append(traffic.retry_message(now))
    elif roll < 0.13:
        writer.append(traffic.audit_message(now))
    elif roll < 0.23:
        writer.append(traffic.payment_message(now))
    elif roll < 0.55:
        writer.append(traffic.activity_message(now))
    else:
        writer.append(traffic.order_message(now))


def _settle(writer: StoreWriter, traffic: _Traffic, now: int) -> None:
    """Deliver due delayed messages and end due transactions (some transactions stay open)."""
    while traffic.undelivered and traffic.undelivered[0][0] <= now:
        _, _, scheduled = heapq.heappop(traffic.undelivered)
        writer.deliver_delayed(scheduled, store_timestamp=now)
    while traffic.open_transactions and traffic.open_transactions[0][0] <= now:
        _, _, half = heapq.heappop(traffic.open_transactions)
        writer.end_transaction(half, commit=traffic.rng.random() < 0.85, store_timestamp=now)


def _set_consumer_offsets(writer: StoreWriter, rng: random.Random) -> None:
    """Groups at different distances from the head: caught up, lagging a little, lagging a lot."""
    lag_fraction = {
        ("OrderEvents", "cg-orders"): 0.0,
        ("OrderEvents", "cg-analytics"): 0.25,
        ("UserActivity", "cg-analytics"): 0.4,
        ("PaymentTopic", "cg-payments"): 0.02,
        ("InventoryUpdates", "cg-inventory"): 0.9,
        ("%RETRY%cg-orders", "cg-orders"): 0.0,
    }
    for (topic, group), fraction in lag_fraction.items():
        for queue_topic, queue_id in writer.queues():
            if queue_topic != topic:
                continue
            head = writer.queue_max_offset(topic, queue_id)
            lag = int(head * fraction * rng.uniform(0.5, 1.0)) if fraction else 0
            writer.set_consumer_offset(topic, group, queue_id, head - lag)
