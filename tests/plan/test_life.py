"""The pure rule of a message's life (`rmqstore.plan.life`, docs/format.md §3.4) on hand-made copies: what
the fixtures cannot show (5.x merged op bodies naming several halves, a retry consumed through the retry
topic's committed offset, trace records joining in) and the lookup rounds."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rmqstore.plan.life import (
    OP_TOPIC,
    BrokerState,
    Copy,
    TraceRecord,
    collect_copies,
    life_events,
    op_offsets,
)

HALF = "RMQ_SYS_TRANS_HALF_TOPIC"


def _copy(offset: int, topic: str, queue_offset: int, *, uniq: str | None = "U1", time: int | None = None,
          body: bytes | None = None, sys_flag: int = 0, prepared: int = 0, reconsume: int = 0,
          tags: str | None = None, **props: str) -> Copy:
    return Copy("b", topic, 0, queue_offset, offset, f"MSG{offset}", uniq, tags, sys_flag,
                offset if time is None else time, reconsume, prepared,
                {**props, **({} if uniq is None else {"UNIQ_KEY": uniq})}, body)


class FakeLookup:
    """`CopyLookup` over a list of copies, recording what was asked."""

    def __init__(self, copies: Sequence[Copy]) -> None:
        self.copies, self.asked = list(copies), []

    def find(self, column: str, values: Sequence[str]) -> list[Copy]:
        self.asked.append((column, tuple(values)))
        attr = {"uniqKey": "uniq_key", "msgId": "msg_id"}
        if column == "keys":
            return [c for c in self.copies if set(c.properties.get("KEYS", "").split()) & set(values)]
        return [c for c in self.copies if getattr(c, attr[column]) in values and c.topic != OP_TOPIC]

    def op_records(self, queues: Sequence[tuple[str, int]]) -> list[Copy]:
        return [c for c in self.copies if c.topic == OP_TOPIC and (c.broker, c.queue_id) in queues]

    def past_end(self, column: str, values: Sequence[str]) -> list[tuple[str, str, int]]:
        return []


@pytest.mark.parametrize(("body", "offsets"), [
    (b"0", [0]),  # 4.9: String.valueOf(queueOffset)
    (b"3,5,6,", [3, 5, 6]),  # 5.x: merged, each offset followed by ","
    (b"", []), (None, []), (b"x,", []),
])
def test_op_body(body: bytes | None, offsets: list[int]) -> None:
    assert op_offsets(body) == offsets


def test_merged_op_record_closes_the_half_it_names() -> None:
    """A 5.x op record naming several halves closes this one; op records naming no found half, or without
    the remove tag `d`, are dropped; links are asked in rounds (KEYS, then UNIQ_KEY)."""
    half = _copy(100, HALF, 4, KEYS="k", REAL_TOPIC="T", REAL_QID="0")
    commit = _copy(200, "T", 0, sys_flag=0x8, prepared=100, KEYS="k")
    ops = [_copy(300, OP_TOPIC, 0, uniq=None, tags="d", body=b"3,4,"),
           _copy(400, OP_TOPIC, 1, uniq=None, tags="d", body=b"7,"),
           _copy(500, OP_TOPIC, 2, uniq=None, tags="x", body=b"4,")]  # not a remove tag: not an op
    lookup = FakeLookup([half, commit, *ops])
    found = collect_copies(lookup, "keys", "k")
    assert [c.commit_log_offset for c in found.copies] == [100, 200, 300]
    assert lookup.asked == [("keys", ("k",)), ("uniqKey", ("U1",))]
    events = life_events(found, [BrokerState("b", 0, 10_000, {("T", "g"): {0: 1}})])
    assert [(str(e.event), e.commit_log_offset, e.group) for e in events] == [
        ("half", 100, None), ("commit", 200, None), ("op", 300, None), ("consumed", 200, "g")]


def test_retry_consumed_through_the_retry_topic_offset() -> None:
    """The original was consumed by sending it back; the retry copy's state comes from `%RETRY%<group>`'s
    committed offset (pending-retry until it passes the copy)."""
    original = _copy(0, "T", 5, KEYS="k")
    retry = _copy(500, "%RETRY%g", 2, reconsume=1, ORIGIN_MESSAGE_ID="MSG0", RETRY_TOPIC="T")
    found = collect_copies(FakeLookup([original, retry]), "keys", "k")
    for committed, state in ((2, "pending-retry"), (3, "consumed")):
        offsets = {("T", "g"): {0: 6}, ("%RETRY%g", "g"): {0: committed}}
        events = life_events(found, [BrokerState("b", 0, 10_000, offsets)])
        assert [(str(e.event), e.topic) for e in events if e.group == "g"] == [
            ("retry", "%RETRY%g"), ("consumed", "T"), (state, "%RETRY%g")]


def test_trace_records_join_in_time_order() -> None:
    """Already-decoded trace records (the seam for `RMQ_SYS_TRACE_TOPIC` rows) become `trace` events
    between the copies, by time."""
    original = _copy(0, "T", 0, time=1000, KEYS="k")
    found = collect_copies(FakeLookup([original]), "keys", "k")
    trace = [TraceRecord(1500, "SubAfter", "b", "T", "g", "10.0.0.1", 7, True, "U1", "U1"),
             TraceRecord(900, "Pub", "b", "T", "pg", "10.0.0.2", 3, True, "U1", "U1")]
    events = life_events(found, [BrokerState("b", 0, 10_000, {})], trace)
    assert [(e.time, str(e.event), e.detail) for e in events] == [
        (900, "trace", "Pub ok by 10.0.0.2, 3 ms"), (1000, "stored", "stored in its topic"),
        (1500, "trace", "SubAfter ok by 10.0.0.1, 7 ms")]


def test_unknown_start_column() -> None:
    with pytest.raises(ValueError, match="one of keys, uniqKey, msgId"):
        collect_copies(FakeLookup([]), "topic", "T")


def test_delivered_copy_named_by_its_schedule_copy() -> None:
    """A copy delivered back whose stored properties lost DELAY and REAL_TOPIC is still `delivered`: an
    earlier schedule-topic copy with the same UNIQ_KEY names its topic."""
    scheduled = _copy(10, "SCHEDULE_TOPIC_XXXX", 0, KEYS="k", DELAY="2", REAL_TOPIC="T", REAL_QID="0")
    back = _copy(20, "T", 3, KEYS="k")
    earlier = _copy(5, "T", 1, KEYS="k")  # stored before the schedule copy: not its delivery
    found = collect_copies(FakeLookup([earlier, scheduled, back]), "keys", "k")
    events = life_events(found, [BrokerState("b", 0, 10_000, {})])
    assert [(str(e.event), e.commit_log_offset) for e in events] == [
        ("stored", 5), ("delayed", 10), ("delivered", 20)]
