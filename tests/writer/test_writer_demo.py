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
from rmqstore.format.trace import decode_body
from rmqstore.writer.demo import (
    DEMO_SPAN_MS,
    GROUPS,
    LONG_RETRY_TOPIC,
    TRACED_PRODUCERS,
    DemoEvent,
    create_demo_store,
)
from rmqstore.writer.trace import TracedClients

SLOTS, ENTRIES = 997, 1500
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list, list[DemoEvent]]:
    path = tmp_path_factory.mktemp("demo") / "store"
    events: list[DemoEvent] = []
    create_demo_store(path, target_bytes=3 << 20, seed=7, index_hash_slots=SLOTS, index_entries=ENTRIES,
                      tracer=TracedClients(7, TRACED_PRODUCERS, observer=events.append))
    return path, walk_log(path)[0], events


@pytest.fixture(scope="module")
def demo(traced) -> tuple[Path, list]:
    return traced[:2]


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
        "%RETRY%cg-payments",
        "%DLQ%cg-payments",
        LONG_RETRY_TOPIC,
        "rmq_sys_wheel_timer",
        "CartTimeouts",
    } <= topics
    assert {r.sys_flag >> 8 & 7 for r in records if r.sys_flag & SYSFLAG_COMPRESSED} == {0, 1, 2, 3}
    assert any(r.born_host.startswith("[") for r in records)
    assert {r.topic for r in records if r.magic == MAGIC_V2} == {LONG_RETRY_TOPIC}
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


def test_demo_send_backs_are_the_brokers(demo) -> None:
    """Each retry, its schedule-topic copy and each dead letter is a consumed record re-stored as
    consumerSendMsgBack does (§2.10): same body, UNIQ_KEY and born time, the original's offsetMsgId."""
    _, records = demo
    by_msg_id = {r.msg_id: r for r in records}
    backs = [r for r in records if r.properties.get("WAIT") == "false"]
    dead = [r for r in backs if r.topic == "%DLQ%cg-payments"]
    assert dead and all(r.reconsume_times == 4 and r.properties["DELAY"] == "0" for r in dead)
    retried = [r for r in backs if r.topic.startswith("%RETRY%")]
    assert {r.reconsume_times for r in retried} >= {1, 2, 3}
    for back in backs:
        origin = by_msg_id[back.properties["ORIGIN_MESSAGE_ID"]]
        assert origin.topic == back.properties["RETRY_TOPIC"] != back.topic and origin.reconsume_times == 0
        assert (back.body, back.sys_flag, back.uniq_key, back.born_timestamp) == (
            origin.body, origin.sys_flag, origin.uniq_key, origin.born_timestamp)
        if back.topic == SCHEDULE_TOPIC:
            # level 3 + the consumed record's reconsumeTimes (one less than the copy's), queue level - 1
            assert back.queue_id == 1 + back.reconsume_times == int(back.properties["DELAY"]) - 1
            assert back.properties["REAL_TOPIC"].startswith("%RETRY%")
    assert any(r.sys_flag & SYSFLAG_COMPRESSED for r in retried if r.topic == LONG_RETRY_TOPIC)


def test_demo_timer_messages_are_the_brokers(demo) -> None:
    """5.x timer messages: the rmq_sys_wheel_timer copy, the delivered copy with the timer stamps (§2.10)."""
    _, records = demo
    timers = {r.uniq_key: r for r in records if r.topic == "rmq_sys_wheel_timer"}
    delivered = [r for r in records if r.topic == "CartTimeouts" and "TIMER_DEQUEUE_MS" in r.properties]
    assert timers and delivered and len(delivered) < len(timers)
    for out in delivered:
        timer = timers[out.uniq_key]
        out_ms = int(timer.properties["TIMER_OUT_MS"])
        assert out_ms % 1000 == 0 and timer.store_timestamp < out_ms <= out.store_timestamp
        assert int(out.properties["TIMER_ENQUEUE_MS"]) == timer.store_timestamp
        assert (out.queue_id, out.properties["REAL_TOPIC"]) == (
            int(timer.properties["REAL_QID"]), "CartTimeouts")


def test_demo_tracer_sees_every_send_and_the_modelled_consumes(traced) -> None:
    _, records, events = traced
    sends = [e for e in events if e.group is None]
    sent = {e.record.physical_offset for e in sends}
    assert sent == {r.commit_log_offset for r in records if not _broker_copy(r) and r.topic != TRACE_TOPIC}
    consumes = [e for e in events if e.group is not None]
    assert {e.group for e in consumes} == {g.name for g in GROUPS if g.fail_share}
    assert any(not e.ok for e in consumes) and any(e.ok for e in consumes)
    times = [e.at_ms for e in events]
    assert times == sorted(times)


def test_demo_trace_messages_trace_the_traced_clients(traced) -> None:
    """A Pub per send of the traced producer (where it was stored), a SubBefore / SubAfter pair per
    consume (ok or failed as modelled), in trace messages whose KEYS are their msgIds and keys (§10)."""
    _, records, events = traced
    messages = [r for r in records if r.topic == TRACE_TOPIC]
    bodies = [decode_body(m.body) for m in messages]
    assert not [row for rows in bodies for row in rows if row["problem"] is not None]
    for message, rows in zip(messages, bodies, strict=True):  # keys written "null" are no KEYS
        ids = {r["msgId"] for r in rows}
        assert ids <= set(message.properties["KEYS"].split(" ")) <= ids | {k for r in rows for k in r["keys"]}
    assert max(len(rows) for rows in bodies) > 1
    rows = [row for rows in bodies for row in rows]
    pubs = {(r["msgId"], r["offsetMsgId"], r["timestamp"], r["topic"]) for r in rows
            if r["traceType"] == "Pub"}
    assert pubs == {(e.record.uniq_key, e.record.msg_id, e.at_ms, e.spec.topic) for e in events
                    if e.group is None and e.spec.born_host in TRACED_PRODUCERS and e.record.uniq_key}
    before = {r["requestId"]: r for r in rows if r["traceType"] == "SubBefore"}
    after = {r["requestId"]: r for r in rows if r["traceType"] == "SubAfter"}
    assert before.keys() == after.keys()
    consumed = sorted((e.at_ms, e.group, e.record.uniq_key, e.ok) for e in events
                      if e.group and e.record.uniq_key)
    assert consumed and sorted((b["timestamp"], b["groupName"], b["msgId"], after[k]["success"])
                               for k, b in before.items()) == consumed
    assert {r["msgType"] for r in rows if r["traceType"] == "Pub"} == {"Normal_Msg", "Delay_Msg",
                                                                        "Trans_Msg_Half"}


def _broker_copy(r) -> bool:
    """A record the broker wrote on its own: an op record, a commit, a delivery or a send-back."""
    return (r.topic == "RMQ_SYS_TRANS_OP_HALF_TOPIC" or r.properties.get("WAIT") == "false"
            or r.sys_flag & SYSFLAG_TRANSACTION_MASK == TRANSACTION_COMMIT
            or "TIMER_DEQUEUE_MS" in r.properties or (r.topic != SCHEDULE_TOPIC and "DELAY" in r.properties))


def test_demo_queues_and_index_agree_with_the_log(demo) -> None:
    path, records = demo
    assert written_units(path) == expected_units(records)
    views = index_views(path, SLOTS, ENTRIES)
    assert len(views) > 1, "the demo rolls over index files at this geometry"
    assert len(all_entries(views)) == len(expected_index_keys(records))


def test_demo_consumer_groups_lag(demo) -> None:
    path, records = demo
    offsets = consumer_offsets(parse_fastjson((path / "config" / "consumerOffset.json").read_text()))
    heads = {queue: len(units) for queue, units in written_units(path).items()}
    lags = {
        key: sum(heads.get((key[0], q), 0) - offset for q, offset in queues.items())
        for key, queues in offsets.items()
    }
    assert lags[("OrderEvents", "cg-orders")] == 0
    assert lags[("InventoryUpdates", "cg-inventory")] > 0 and lags[("UserActivity", "cg-analytics")] > 0
    assert all(lag >= 0 for lag in lags.values())
    assert {group for topic, group in offsets if topic == "%RETRY%" + group} == {g.name for g in GROUPS}
    assert heads[("%RETRY%cg-payments", 0)] > 0 and offsets[("%RETRY%cg-analytics", "cg-analytics")] == {0: 0}
    # cg-payments stops consuming at 90% of the span: the retries it has not consumed came after that
    stop = records[0].store_timestamp + 0.9 * DEMO_SPAN_MS - 3000
    committed = offsets[("%RETRY%cg-payments", "cg-payments")][0]
    assert all(r.store_timestamp >= stop for r in records
               if r.topic == "%RETRY%cg-payments" and r.queue_offset >= committed)


def test_demo_is_sized_by_target(demo) -> None:
    path, records = demo
    end = records[-1].commit_log_offset + records[-1].store_size
    assert 3 << 20 <= end <= (3 << 20) + 64_000
    assert (path / "abort").exists() is False
