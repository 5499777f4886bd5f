"""The demo store has every feature it promises, and its queues and index agree with its log."""

from __future__ import annotations

from pathlib import Path

import pytest
from scalar_log import all_entries, expected_index_keys, expected_units, index_views, walk_log, written_units

from rmqstore.format.brokerconfig import consumer_offsets, parse_fastjson
from rmqstore.format.layout import (
    MAGIC_V2,
    SYSFLAG_COMPRESSED,
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_COMMIT,
    TRANSACTION_PREPARED,
    TRANSACTION_ROLLBACK,
)
from rmqstore.format.record import SCHEDULE_TOPIC
from rmqstore.writer.demo import DEMO_SPAN_MS, create_demo_store

SLOTS, ENTRIES = 997, 1500


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    path = tmp_path_factory.mktemp("demo") / "store"
    create_demo_store(path, target_bytes=3 << 20, seed=7, index_hash_slots=SLOTS, index_entries=ENTRIES)
    return path, walk_log(path)[0]


def test_demo_has_every_feature(demo) -> None:
    _, records = demo
    topics = {r.topic for r in records}
    assert {
        "OrderEvents",
        "UserActivity",
        "PaymentTopic",
        "InventoryUpdates",
        "AuditLog",
        SCHEDULE_TOPIC,
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "%RETRY%cg-orders",
    } <= topics
    assert {r.sys_flag >> 8 & 7 for r in records if r.sys_flag & SYSFLAG_COMPRESSED} == {0, 1, 2, 3}
    assert any(r.born_host.startswith("[") for r in records)
    assert any(r.magic == MAGIC_V2 for r in records)
    types = {r.sys_flag & SYSFLAG_TRANSACTION_MASK for r in records}
    assert {TRANSACTION_COMMIT, TRANSACTION_PREPARED, TRANSACTION_ROLLBACK} <= types
    keys = [k for r in records for k in r.keys or ()]
    assert any("😀" in k for k in keys) and any("订单" in k for k in keys)
    assert any(r.keys and len(r.keys) > 1 for r in records)
    assert any(r.uniq_key is None for r in records) and sum(r.uniq_key is not None for r in records) > 100
    delivered = [r for r in records if r.topic == "OrderEvents" and "REAL_TOPIC" in r.properties]
    assert delivered, "some delayed messages were delivered to their real topic"
    batch_heads = {}
    for r in records:
        if r.topic == "InventoryUpdates":
            batch_heads.setdefault((r.born_timestamp, r.queue_id), []).append(r)
    assert any(len(group) > 1 for group in batch_heads.values())
    span = records[-1].store_timestamp - records[0].store_timestamp
    assert 0.9 * DEMO_SPAN_MS <= span <= DEMO_SPAN_MS


def test_demo_queues_and_index_agree_with_the_log(demo) -> None:
    path, records = demo
    assert written_units(path) == expected_units(records)
    views = index_views(path, SLOTS, ENTRIES)
    assert len(views) > 1, "the demo rolls over index files at this geometry"
    assert len(all_entries(views)) == len(expected_index_keys(records))


def test_demo_consumer_groups_lag(demo) -> None:
    path, _ = demo
    offsets = consumer_offsets(parse_fastjson((path / "config" / "consumerOffset.json").read_text()))
    heads = {queue: len(units) for queue, units in written_units(path).items()}
    lags = {
        key: sum(heads[(key[0], q)] - offset for q, offset in queues.items())
        for key, queues in offsets.items()
    }
    assert lags[("OrderEvents", "cg-orders")] == 0
    assert lags[("InventoryUpdates", "cg-inventory")] > 0 and lags[("UserActivity", "cg-analytics")] > 0
    assert all(lag >= 0 for lag in lags.values())


def test_demo_is_sized_by_target(demo) -> None:
    path, records = demo
    end = records[-1].commit_log_offset + records[-1].store_size
    assert 3 << 20 <= end <= (3 << 20) + 64_000
    assert (path / "abort").exists() is False
