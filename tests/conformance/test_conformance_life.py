"""A message's life (docs/format.md §3.4; `rmqstore.plan.life`) on stores RocketMQ wrote: the copies of
every message with a delay, transaction, retry or DLQ copy, their labels and each consumer group's state,
against what RocketMQ stored (oracle.json `records`, `consumerOffsets`); through the Store API,
`rmqstore trace`, and `rmqstore.spark.message_life` on both engines. Expectations come from the oracle
alone: the copies are the oracle records linked by UNIQ_KEY, ORIGIN_MESSAGE_ID and op bodies.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from oracle import ORACLES, index_geometry, open_store, store_dir
from pyspark.sql import SparkSession
from test_conformance_lag import retained_store

from rmqstore import Store
from rmqstore.cli import main as cli_main
from rmqstore.format import contract_trace as ct
from rmqstore.format.msgid import decode_offset_msg_id
from rmqstore.plan.life_store import message_life
from rmqstore.spark import message_life as spark_message_life
from rmqstore.spark.life import events_frame

LIFE = "rmq-5.5.0-life"
FIXTURES = ["rmq-4.9.8", "rmq-5.5.0", "rmq-5.5.0-broker", LIFE]
"""4.9.8 and 5.5.0 (store-written: delay levels, both transaction paths, retries, a send-back to %DLQ%),
the real 5.5.0 broker (a delay level 1 message delivered back, committed offsets) and the real 5.5.0 broker's
life scenario (retries to %DLQ%, delays, timers, transactions incl. the broker's check, 3 groups, trace)."""
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
SYSTEM = ("SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC")
COPY_EVENTS = {"stored", "delayed", "timer", "delivered", "half", "prepared", "commit", "op", "rollback",
               "retry", "dlq"}
STATE_EVENTS = {"consumed", "pending", "pending-retry", "dead-lettered"}


def _has_copies(record: dict[str, Any]) -> bool:
    """The record was written because RocketMQ delayed, transacted, retried or dead-lettered a message."""
    props = record["properties"]
    return (record["topic"] in SYSTEM or record["topic"].startswith(("%RETRY%", "%DLQ%"))
            or record["sysFlag"] & 0xC != 0 or "REAL_TOPIC" in props or "ORIGIN_MESSAGE_ID" in props)


def traced_keys(name: str) -> list[str]:
    """The first KEYS token of every record with copies (op records have no KEYS)."""
    return sorted({r["properties"]["KEYS"].split(" ")[0] for r in ORACLES[name]["records"]
                   if _has_copies(r) and r["properties"].get("KEYS") and r["topic"] != TRACE_TOPIC})


def _op_offsets(record: dict[str, Any]) -> set[int]:
    text = base64.b64decode(record["body"]).decode()
    return {int(part) for part in text.split(",") if part}


def expected_copies(records: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The oracle records of the message: those with KEYS token `key`, closed under equal UNIQ_KEY and
    ORIGIN_MESSAGE_ID naming a msgId, plus the op records whose body names a half's queue offset."""
    records = [r for r in records if r["topic"] != TRACE_TOPIC]  # trace records list the keys they trace
    found = {r["commitLogOffset"]: r for r in records
             if key in (r["properties"].get("KEYS") or "").split(" ")}
    while True:
        uniq = {r["uniqKey"] for r in found.values()} - {None}
        origins = {r["properties"]["ORIGIN_MESSAGE_ID"] for r in found.values()
                   if "ORIGIN_MESSAGE_ID" in r["properties"]}
        more = {r["commitLogOffset"]: r for r in records if r["uniqKey"] in uniq or r["msgId"] in origins}
        if more.keys() <= found.keys():
            break
        found.update(more)
    halves = {(r["queueId"], r["queueOffset"]) for r in found.values() if r["topic"] == SYSTEM[1]}
    found.update({r["commitLogOffset"]: r for r in records if r["topic"] == SYSTEM[2]
                  and any((r["queueId"], o) in halves for o in _op_offsets(r))})
    return sorted(found.values(), key=lambda r: r["commitLogOffset"])


def expected_label(record: dict[str, Any], copies: list[dict[str, Any]]) -> str:
    """What RocketMQ did to write `record` (docs/format.md §2.3, §2.10, §3.4)."""
    topic, props, kind = record["topic"], record["properties"], record["sysFlag"] & 0xC
    if topic == SYSTEM[0]:
        return "delayed"
    if topic == "rmq_sys_wheel_timer":
        return "timer"
    if topic == SYSTEM[1]:
        return "half"
    if topic == SYSTEM[2]:
        halves = {c["commitLogOffset"] for c in copies if c["topic"] == SYSTEM[1]}
        committed = any(c["sysFlag"] & 0xC == 0x8 and c["preparedTransactionOffset"] in halves
                        for c in copies)
        return "op" if committed else "rollback"
    if topic.startswith(("%DLQ%", "%RETRY%")):
        return "dlq" if topic.startswith("%DLQ%") else "retry"
    if kind:
        return {0x4: "prepared", 0x8: "commit", 0xC: "rollback"}[kind]
    return "delivered" if props.get("REAL_TOPIC") == topic or "TIMER_OUT_MS" in props else "stored"


def expected_states(name: str, copies: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    """(group, commitLogOffset) -> state of each copy in a queue, per group that committed offsets for its
    topic; and dead-lettered per group with a DLQ copy."""
    offsets = ORACLES[name]["consumerOffsets"]
    states = {}
    for c in copies:
        if c["topic"].startswith("%DLQ%"):
            states[(c["topic"][5:], c["commitLogOffset"])] = "dead-lettered"
        if c["topic"] in SYSTEM or c["topic"].startswith(("%", "rmq_sys_")) or c["sysFlag"] & 0xC in (4, 12):
            continue
        for topic_group, queues in offsets.items():
            topic, group = topic_group.split("@")
            if topic == c["topic"]:
                committed = queues.get(str(c["queueId"]))
                consumed = committed is not None and committed > c["queueOffset"]
                states[(group, c["commitLogOffset"])] = "consumed" if consumed else "pending"
    return states


def _assert_life(name: str, key: str, events: list[dict[str, Any]]) -> None:
    records = ORACLES[name]["records"]
    copies = expected_copies(records, key)
    got = [e for e in events if e["event"] in COPY_EVENTS]
    assert [e["commitLogOffset"] for e in got] == [c["commitLogOffset"] for c in
                                                    sorted(copies, key=lambda c: (c["storeTimestamp"],
                                                                                  c["commitLogOffset"]))]
    by_offset = {c["commitLogOffset"]: c for c in copies}
    for event in got:
        record = by_offset[event["commitLogOffset"]]
        assert event["event"] == expected_label(record, copies), (event, record)
        fields = ("topic", "queueId", "queueOffset", "msgId")
        assert (event["time"], *(event[f] for f in fields)) == (record["storeTimestamp"],
                                                               *(record[f] for f in fields))
        if event["event"] == "delayed":
            assert event["detail"].startswith(f"delay level {record['queueId'] + 1} (DELAY "
                                              f"{record['queueId'] + 1})")
    states = {(e["group"], e["commitLogOffset"]): e["event"] for e in events if e["event"] in STATE_EVENTS}
    assert expected_states(name, copies).items() <= states.items()
    traced = [_trace_fields(e) for e in events if e["event"] == "trace"]
    assert sorted(traced, key=str) == expected_trace(name, copies)
    assert not [e for e in events if e["event"] not in COPY_EVENTS | STATE_EVENTS | {"trace"}]


_CARRIES = {t: at for t, at, _, current in ct.VARIANTS if current}
"""The columns each trace type's record carries as RocketMQ 5.x writes it (the oracle's decoder fills the
rest with defaults)."""


def _trace_fields(event: dict[str, Any]) -> tuple:
    return tuple(event[f] for f in ("time", "topic", "msgId", "uniqKey", "group", "detail"))


def expected_trace(name: str, copies: list[dict[str, Any]]) -> list[tuple]:
    """The oracle's `traceRecords` (RocketMQ's TraceDataEncoder decoding the trace topic) whose msgId is one
    of the copies' UNIQ_KEYs, as `trace` events: time, topic, offsetMsgId, UNIQ_KEY, group, and a detail of
    the type, the outcome and the cost where the record carries them."""
    uniq = {c["uniqKey"] for c in copies} - {None}
    expected = []
    for t in ORACLES[name].get("traceRecords", ()):
        carries = _CARRIES[t["traceType"]]
        outcome = (" ok" if t["success"] else " failed") if "success" in carries else ""
        cost = f", {t['costTime']} ms" if "costTime" in carries else ""
        expected += [(t["timeStamp"], b["topic"] or None, b["offsetMsgId"] or None, b["msgId"],
                      t["groupName"], f"{t['traceType']}{outcome}{cost}")
                     for b in t["traceBeans"] if b["msgId"] in uniq]
    return sorted(expected, key=str)


@pytest.mark.parametrize("name", FIXTURES)
def test_life_of_every_message_with_copies(name: str) -> None:
    keys = traced_keys(name)
    assert keys
    with open_store(name) as store:
        for key in keys:
            _assert_life(name, key, [e.to_json() for e in message_life({name: store}, "keys", key)])


def test_labels_cover_delays_transactions_retries_and_dead_letters() -> None:
    """The fixtures hold every kind of copy this rule names, so the test above checks each label."""
    seen = set()
    for name in FIXTURES:
        records = ORACLES[name]["records"]
        for key in traced_keys(name):
            copies = expected_copies(records, key)
            seen |= {expected_label(c, copies) for c in copies}
    assert seen == COPY_EVENTS


def test_group_states_agree_with_rocketmq_message_track() -> None:
    """Per sent message, RocketMQ's `messageTrackDetail` of each group (CONSUMED / NOT_CONSUME_YET, from
    the committed offset) is the state on its consumable copy; a message RocketMQ cannot find yet (a delay
    or timer not due, a rolled-back transaction: error 208) has no consumable copy. The offsetMsgId of the
    producer's send result is one of the copies."""
    oracle = ORACLES[LIFE]
    tracks = {m["msgId"]: m for m in oracle["messageTrack"]}
    assert {s["msgId"] for s in oracle["sent"]} == tracks.keys()
    states = {"CONSUMED": "consumed", "NOT_CONSUME_YET": "pending"}
    with open_store(LIFE) as store:
        for sent in oracle["sent"]:
            events = [e.to_json() for e in message_life({"b": store}, "uniqKey", sent["msgId"])]
            track = tracks[sent["msgId"]]
            on_copy = {e["group"]: e["event"] for e in events if e["event"] in ("consumed", "pending")
                       and e["commitLogOffset"] == track.get("commitLogOffset")}
            assert on_copy == {t["consumerGroup"]: states[t["trackType"]] for t in track.get("tracks", ())}
            if "error" in track:
                assert not [e for e in events if e["event"] in ("consumed", "pending")], events
            if sent.get("offsetMsgId"):  # where the broker stored it (a delay's: the schedule topic copy)
                assert sent["offsetMsgId"] in {e["msgId"] for e in events if e["event"] in COPY_EVENTS}


def test_trace_records_join_the_copies() -> None:
    """The life fixture's trace messages, decoded by `rmqstore.format.trace`, join the message's copies as
    `trace` events (the oracle's records, checked for every message by the test above): Pub, SubBefore,
    SubAfter (a retried message's consumptions failed) and EndTransaction, all in time order."""
    oracle = ORACLES[LIFE]
    retried = next(r for r in oracle["records"] if r["topic"] == "%DLQ%life-retry")["uniqKey"]
    committed = next(r for r in oracle["records"] if r["sysFlag"] & 0xC == 0x8)["uniqKey"]
    with open_store(LIFE) as store:
        events = [e.to_json() for e in message_life({"b": store}, "uniqKey", retried)]
        ended = [e.to_json() for e in message_life({"b": store}, "uniqKey", committed)]
    traced = [e for e in events if e["event"] == "trace"]
    assert {e["detail"].split(" ")[0].rstrip(",") for e in traced} == {"Pub", "SubBefore", "SubAfter"}
    timed = [e for e in events if e["time"] is not None]
    assert [e["time"] for e in timed] == sorted(e["time"] for e in timed)
    failed = [e for e in traced if "failed" in e["detail"]]
    assert failed and {e["group"] for e in failed} == {"life-retry"}
    assert "EndTransaction" in {e["detail"] for e in ended if e["event"] == "trace"}


@pytest.mark.parametrize("name", ["rmq-4.9.8-crash", "rmq-5.5.0-crash"])
def test_copy_after_the_recovered_end(name: str) -> None:
    """The torn last record is no row, but the index still names it: an `after-recovered-end` event."""
    oracle = ORACLES[name]
    torn = next(r for r in ORACLES[oracle["recordsFrom"]]["records"]
                if r["commitLogOffset"] == oracle["tornRecordOffset"])
    with open_store(name) as store:
        events = [e.to_json() for e in message_life({"b": store}, "uniqKey", torn["uniqKey"])]
    assert [(e["event"], e["broker"], e["commitLogOffset"]) for e in events] == [
        ("after-recovered-end", "b", oracle["tornRecordOffset"])]
    assert str(oracle["recoveredMaxPhyOffset"]) in events[0]["detail"]


def test_origin_gone_by_retention(tmp_path: Path) -> None:
    """Retention deleted the first segment: a retry copy's ORIGIN_MESSAGE_ID names a record below it."""
    root, oracle = retained_store(tmp_path)
    retry = next(r for r in oracle["records"] if r["topic"].startswith("%RETRY%"))
    origin = retry["properties"]["ORIGIN_MESSAGE_ID"]
    first = min(r["commitLogOffset"] for r in oracle["records"])
    assert decode_offset_msg_id(origin)[1] < first
    with Store.open(root) as store:
        events = [e.to_json() for e in message_life({"b": store}, "msgId", retry["msgId"])]
    gone = [e for e in events if e["event"] == "gone-by-retention"]
    assert [(e["commitLogOffset"], e["msgId"]) for e in gone] == [(decode_offset_msg_id(origin)[1], origin)]
    assert [e["commitLogOffset"] for e in events if e["event"] in COPY_EVENTS] == [retry["commitLogOffset"]]


def test_trace_command(capsys: pytest.CaptureFixture[str]) -> None:
    """`rmqstore trace` prints the plan's events (--json as one document), over several brokers' stores."""
    key = "delay-18"
    paths = [str(store_dir(n)) for n in ("rmq-4.9.8", "rmq-5.5.0-broker")]
    assert cli_main(["trace", *paths, "--brokers", "a,b", "--key", key, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    with Store.open(paths[0]) as a, Store.open(paths[1]) as b:
        assert doc == {"events": [e.to_json() for e in message_life({"a": a, "b": b}, "keys", key)]}
    assert {e["broker"] for e in doc["events"]} == {"a", "b"}
    for name, broker in (("rmq-4.9.8", "a"), ("rmq-5.5.0-broker", "b")):
        mine = [e for e in doc["events"] if e["broker"] == broker and e["event"] in COPY_EVENTS]
        assert [e["commitLogOffset"] for e in mine] == [
            c["commitLogOffset"] for c in expected_copies(ORACLES[name]["records"], key)]
    assert cli_main(["trace", paths[0], "--key", "back-16"]) == 0
    text = capsys.readouterr().out
    assert "dead-lettered" in text and "%DLQ%consumer-group" in text
    assert cli_main(["trace", paths[0], "--uniq-key", "NO-SUCH-ID"]) == 1
    assert "no stored copy has uniqKey NO-SUCH-ID" in capsys.readouterr().err
    assert cli_main(["trace", *paths, "--brokers", "a", "--key", key]) == 2
    assert "--brokers needs one non-empty name per store (2)" in capsys.readouterr().err
    retried = next(r for r in ORACLES[LIFE]["records"] if r["topic"] == "%DLQ%life-retry")
    assert cli_main(["trace", str(store_dir(LIFE)), "--uniq-key", retried["uniqKey"], "--json"]) == 0
    events = json.loads(capsys.readouterr().out)["events"]
    traced = sorted((_trace_fields(e) for e in events if e["event"] == "trace"), key=str)
    assert traced and traced == expected_trace(LIFE, expected_copies(ORACLES[LIFE]["records"],
                                                                     retried["properties"]["KEYS"]))


@pytest.mark.spark
@pytest.mark.parametrize(("name", "key", "access"), [
    ("rmq-4.9.8", "txn-half", {"key-index", "queues"}),  # KEYS, UNIQ_KEY, the op-half topic's queue
    ("rmq-4.9.8", "back-16", {"key-index", "offsets"}),  # KEYS, UNIQ_KEY, ORIGIN_MESSAGE_ID as msgId
    (LIFE, "order-3", {"key-index"}),  # KEYS, UNIQ_KEY, the trace topic's messages by the UNIQ_KEY
])
def test_message_life_frame(spark: SparkSession, engine: str, tmp_path: Path, name: str, key: str,
                            access: set[str]) -> None:
    """The DataFrame is the plan's answer on both engines (the life fixture's with its trace records, which
    `test_life_of_every_message_with_copies` holds to the oracle's), its copies and trace messages read
    through pushed-down lookups (the reads' `statsDir` plans: index, offsets, queue reads, never a scan)."""
    stats = tmp_path / "stats"
    frame = spark_message_life(spark, [str(store_dir(name))], key=key, engine=engine, brokerNames="b",
                               statsDir=str(stats), indexHashSlots=str(index_geometry(name)[0]),
                               indexEntries=str(index_geometry(name)[1]))
    with open_store(name) as store:
        expected = events_frame(spark, message_life({"b": store}, "keys", key))
    assert_df_equality(frame, expected)
    assert (name == LIFE) == (frame.where("event = 'trace'").count() > 0)
    plans = [json.loads(line) for path in stats.glob("*.jsonl") for line in path.open()]
    plans = [p for p in plans if p["event"] == "plan"]
    assert {a for p in plans for a in p["access"]} == access, plans
