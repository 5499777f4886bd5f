"""A message's life (§3.4): every stored copy of one message, found by following the properties that link
copies, labelled with what RocketMQ did, then each consumer group's state.

Pure: `collect_copies` follows the links through a `CopyLookup` (the Store's lookups in
`rmqstore.plan.life_store`, Spark reads in `rmqstore.spark.life`), `life_events` turns the copies, each
broker's bounds and committed offsets (`BrokerState`) and optional already-decoded trace records
(`TraceRecord`) into `Event`s, the same for `rmqstore trace` and `rmqstore.spark.message_life`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from rmqstore.format.contract_layout import (
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_COMMIT,
    TRANSACTION_PREPARED,
    TRANSACTION_ROLLBACK,
)
from rmqstore.format.contract_trace import DEFAULT_TOPIC as TRACE_TOPIC
from rmqstore.format.msgid import decode_offset_msg_id
from rmqstore.format.record import (
    DLQ_PREFIX,
    KEY_SEPARATOR,
    PROPERTY_DELAY,
    PROPERTY_KEYS,
    RETRY_PREFIX,
    SCHEDULE_TOPIC,
    TIMER_TOPIC,
)
from rmqstore.format.record import PROPERTY_ORIGIN_MESSAGE_ID as ORIGIN_MESSAGE_ID
from rmqstore.format.record import PROPERTY_REAL_QID as REAL_QID
from rmqstore.format.record import PROPERTY_REAL_TOPIC as REAL_TOPIC
from rmqstore.format.record import PROPERTY_RETRY_TOPIC as RETRY_TOPIC
from rmqstore.format.record import PROPERTY_TIMER_DELIVER_MS as TIMER_DELIVER_MS
from rmqstore.format.record import PROPERTY_TIMER_OUT_MS as TIMER_OUT_MS
from rmqstore.format.record import TRANS_HALF_TOPIC as HALF_TOPIC
from rmqstore.format.record import TRANS_OP_HALF_TOPIC as OP_TOPIC

OP_REMOVE_TAG = "d"
"""`TransactionalMessageUtil.REMOVE_TAG`: the tag of an op record that closes half messages (§3.4)."""
TRANSACTION_ID = "__transactionId__"
TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"

COPY_COLUMNS = ("topic", "queueId", "queueOffset", "commitLogOffset", "msgId", "uniqKey", "tags", "sysFlag",
                "storeTimestamp", "reconsumeTimes", "preparedTransactionOffset", "properties")
"""The table columns a copy is made of (op records add `body`)."""
LOOKUP_COLUMNS = ("keys", "uniqKey", "msgId")
"""What a trace starts from and follows: a KEYS token, a UNIQ_KEY, an offsetMsgId (§3)."""
EVENT_COLUMNS = ("time", "event", "broker", "topic", "queueId", "queueOffset", "commitLogOffset", "msgId",
                 "uniqKey", "group", "reconsumeTimes", "detail")
"""An event as `rmqstore trace --json` and the `message_life` DataFrame name its fields."""


class Label(StrEnum):
    """What an event says happened (README "A message's life")."""

    STORED = "stored"
    """Sent and stored in its topic."""
    DELAYED = "delayed"
    """Waiting in `SCHEDULE_TOPIC_XXXX` for its delay level (a retry's too: `group` is then set)."""
    TIMER = "timer"
    """Waiting in the 5.x timer topic `rmq_sys_wheel_timer` until TIMER_DELIVER_MS."""
    DELIVERED = "delivered"
    """A delayed or timer copy delivered back to its real topic."""
    HALF = "half"
    """A transaction's half message in `RMQ_SYS_TRANS_HALF_TOPIC`."""
    PREPARED = "prepared"
    """A 3.x-style PREPARED record in the topic itself (in no queue)."""
    COMMIT = "commit"
    """A COMMIT record in the real topic (of a half, or of a 3.x PREPARED record)."""
    OP = "op"
    """An op record closing a half message that was committed."""
    ROLLBACK = "rollback"
    """A 3.x ROLLBACK record, or an op record closing a half message with no commit record."""
    RETRY = "retry"
    """A copy sent back for redelivery to `%RETRY%<group>`."""
    DLQ = "dlq"
    """The copy dead-lettered into `%DLQ%<group>`."""
    AFTER_END = "after-recovered-end"
    """The index names a record past where RocketMQ's recovery ends the log (§6.3): not a row."""
    GONE = "gone-by-retention"
    """A copy refers to a record below the first retained commit-log offset (§2.1)."""
    CONSUMED = "consumed"
    """Group state: the committed offset is past the copy (its last retry, when there were retries)."""
    PENDING = "pending"
    """Group state: the committed offset is not past the copy (or the group has none for its queue)."""
    PENDING_RETRY = "pending-retry"
    """Group state: a retry copy not consumed yet (or still waiting in the schedule topic)."""
    DEAD_LETTERED = "dead-lettered"
    """Group state: the group's retries ended in `%DLQ%<group>`."""
    TRACE = "trace"
    """A message trace record (`RMQ_SYS_TRACE_TOPIC`), decoded elsewhere; `detail` says which."""


@dataclass(frozen=True)
class Copy:
    """One stored record that is a copy of the message, on `broker`."""

    broker: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    msg_id: str
    uniq_key: str | None
    tags: str | None
    sys_flag: int
    store_time: int
    """STORETIMESTAMP, epoch ms."""
    reconsume_times: int
    prepared_offset: int
    properties: Mapping[str, str] = field(hash=False)
    body: bytes | None = field(default=None, hash=False)
    """Read for op records only (their body names half queue offsets)."""

    @classmethod
    def from_row(cls, broker: str, row: Mapping[str, Any]) -> Copy:
        """A table row (`COPY_COLUMNS`, `storeTimestamp` in epoch ms, properties a dict) as a copy."""
        return cls(broker, row["topic"], row["queueId"], row["queueOffset"], row["commitLogOffset"],
                   row["msgId"], row["uniqKey"], row["tags"], row["sysFlag"], row["storeTimestamp"],
                   row["reconsumeTimes"], row["preparedTransactionOffset"], dict(row["properties"] or {}),
                   row.get("body"))

    @property
    def place(self) -> tuple[str, int]:
        return self.broker, self.commit_log_offset

    @property
    def transaction_type(self) -> int:
        return self.sys_flag & SYSFLAG_TRANSACTION_MASK


@dataclass(frozen=True)
class TraceRecord:
    """A message trace record another module decoded (the seam for `RMQ_SYS_TRACE_TOPIC` rows)."""

    time: int
    """Epoch ms of the traced step."""
    kind: str
    """`Pub`, `SubBefore`, `SubAfter`, `EndTransaction`, ... as the trace names it."""
    broker: str | None
    topic: str | None
    group: str | None
    client: str | None
    cost_ms: int | None
    success: bool | None
    msg_id: str | None
    uniq_key: str | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TraceRecord:
        """A trace-record row (docs/format.md §10; `timestamp` in epoch ms): the trace's msgId is the
        traced message's UNIQ_KEY, its offsetMsgId (Pub only) the stored record's msgId."""
        return cls(row["timestamp"], row["traceType"], None, row.get("topic"), row.get("groupName"),
                   row.get("clientHost"), row.get("costTime"), row.get("success"), row.get("offsetMsgId"),
                   row.get("msgId"))


@dataclass(frozen=True)
class BrokerState:
    """What the rule needs of one broker's store besides its copies."""

    broker: str
    min_offset: int
    """The first retained commit-log offset (§2.1)."""
    end_offset: int
    """The valid end of the log, where RocketMQ's recovery ends it (§2.12, §6.3)."""
    offsets: Mapping[tuple[str, str], Mapping[int, int]]
    """(topic, group) -> queue id -> committed offset (§1.4, §4.8)."""


@dataclass(frozen=True)
class Event:
    """One line of a message's life (`EVENT_COLUMNS`)."""

    time: int | None
    event: Label
    broker: str | None
    topic: str | None
    queue_id: int | None
    queue_offset: int | None
    commit_log_offset: int | None
    msg_id: str | None
    uniq_key: str | None
    group: str | None
    reconsume_times: int | None
    detail: str

    def to_json(self) -> dict[str, Any]:
        values = (self.time, str(self.event), self.broker, self.topic, self.queue_id, self.queue_offset,
                  self.commit_log_offset, self.msg_id, self.uniq_key, self.group, self.reconsume_times,
                  self.detail)
        return dict(zip(EVENT_COLUMNS, values, strict=True))


class CopyLookup(Protocol):
    """Where copies come from: every broker's stores, through their index-backed lookups."""

    def find(self, column: str, values: Sequence[str]) -> list[Copy]:
        """The records whose `column` (one of `LOOKUP_COLUMNS`; KEYS: among its tokens) holds one of
        `values`."""

    def op_records(self, queues: Sequence[tuple[str, int]]) -> list[Copy]:
        """The records of `OP_TOPIC` in those (broker, queue id)s, with their bodies."""

    def past_end(self, column: str, values: Sequence[str]) -> list[tuple[str, str, int]]:
        """(value, broker, offset) of index entries for `values` at or past that broker's valid end."""


@dataclass
class Found:
    """What `collect_copies` found: the copies, the asks that found none, the index entries past an end."""

    copies: list[Copy]
    missing: set[tuple[str, str]]
    past_end: list[tuple[str, str, int]]
    """(`column value` asked, broker, offset) of index entries at or past that broker's valid end."""


def links(copy: Copy) -> list[tuple[str, str]]:
    """The lookups that find the copies `copy` is linked to (§3.4): its UNIQ_KEY (every copy keeps it)
    and its ORIGIN_MESSAGE_ID (the offsetMsgId of the record a retry or DLQ copy was made from)."""
    found = [] if copy.uniq_key is None else [("uniqKey", copy.uniq_key)]
    origin = copy.properties.get(ORIGIN_MESSAGE_ID)
    return found if origin is None else [*found, ("msgId", origin.upper())]


def answers(copy: Copy, column: str, value: str) -> bool:
    """`copy` is what the lookup `column = value` asks for."""
    if column == "keys":
        return value in (copy.properties.get(PROPERTY_KEYS) or "").split(KEY_SEPARATOR)
    return (copy.uniq_key if column == "uniqKey" else copy.msg_id) == value


def op_offsets(body: bytes | None) -> list[int]:
    """The half queue offsets an op record's body names (§3.4): one decimal offset (4.9), or several
    joined by `,` (5.x merges them, with a trailing `,`)."""
    text = (body or b"").decode("utf-8", "replace")
    return [int(part) for part in text.split(",") if part.strip().lstrip("-").isdigit()]


def collect_copies(lookup: CopyLookup, column: str, value: str) -> Found:
    """Every copy reachable from `column = value` through `links`, plus the op records of each half
    message found; a msgId that names no record is asked again as a UNIQ_KEY (§3.3). The links found in
    one round are asked together in the next: one lookup per column and round."""
    if column not in LOOKUP_COLUMNS:
        raise ValueError(f"a trace starts from one of {', '.join(LOOKUP_COLUMNS)}, not {column!r}")
    value = value.upper() if column == "msgId" else value
    asks, seen = [(column, value)], set()
    copies: dict[tuple[str, int], Copy] = {}
    missing: set[tuple[str, str]] = set()
    past_end: list[tuple[str, str, int]] = []
    ops_read: set[tuple[str, int]] = set()
    while asks:
        seen.update(asks)
        found = []
        for col in LOOKUP_COLUMNS:
            values = sorted({v for c, v in asks if c == col})
            if values:
                found += lookup.find(col, values)
                past_end += [(f"{col} {v}", b, offset) for v, b, offset in lookup.past_end(col, values)]
        if not found and column == "msgId" and not copies:  # like mqadmin queryMsgById (§3.3)
            found = lookup.find("uniqKey", [value])
        found = [c for c in found if c.topic != TRACE_TOPIC]
        missing.update(a for a in asks if not any(answers(c, *a) for c in found))
        fresh = [c for c in found if c.place not in copies]
        copies.update((c.place, c) for c in fresh)
        queues = sorted({(c.broker, c.queue_id) for c in fresh if c.topic == HALF_TOPIC} - ops_read)
        if queues:
            ops_read.update(queues)
            copies.update((op.place, op) for op in lookup.op_records(queues) if op.place not in copies)
        asks = sorted({link for c in fresh for link in links(c)} - seen)
    halves = {(c.broker, c.queue_id, c.queue_offset) for c in copies.values() if c.topic == HALF_TOPIC}
    kept = [c for c in copies.values() if c.topic != OP_TOPIC or (  # `fillOpRemoveMap` skips other tags
        c.tags == OP_REMOVE_TAG and any((c.broker, c.queue_id, o) in halves for o in op_offsets(c.body)))]
    return Found(sorted(kept, key=_copy_order), missing, sorted(set(past_end), key=lambda p: (p[1], p[2])))


def traced_ids(found: Found) -> list[str]:
    """The UNIQ_KEYs of the copies: the msgIds their trace records carry and their trace messages' KEYS
    hold (§10.1)."""
    return sorted({c.uniq_key for c in found.copies if c.uniq_key is not None})


def about(found: Found, rows: Iterable[Mapping[str, Any]]) -> list[TraceRecord]:
    """The trace records of `rows` (decoded trace-record rows) about the found message: those whose msgId
    is one of its UNIQ_KEYs (a key lookup also finds records of other messages with that key). A record
    without a timestamp (a SubAfter before 4.8.0, §10.2) places no event in time and is left out."""
    ids = set(traced_ids(found))
    return [TraceRecord.from_row(r) for r in rows if r["msgId"] in ids and r["timestamp"] is not None]


def _copy_order(copy: Copy) -> tuple[int, str, int]:
    return copy.store_time, copy.broker, copy.commit_log_offset


def life_events(found: Found, brokers: Sequence[BrokerState],
                trace: Iterable[TraceRecord] = ()) -> list[Event]:
    """The copies labelled in time order, the references past an end or gone by retention, the trace
    records, then each consumer group's state (§3.4)."""
    states = {b.broker: b for b in brokers}
    copies = found.copies
    timed = [_copy_event(c, copies) for c in copies] + [_trace_event(t) for t in trace]
    timed.sort(key=lambda e: (e.time, e.broker or "", e.commit_log_offset or -1))
    untimed = [Event(None, Label.AFTER_END, broker, None, None, None, offset, None, None, None, None,
                     f"the index entry of {what} points at {offset}, at or past the recovered end "
                     f"{states[broker].end_offset}: a restarted broker overwrites it (§6.3)")
               for what, broker, offset in found.past_end if broker in states]
    untimed += _gone(found, states)
    return timed + untimed + _group_states(copies, states)


def _copy_event(copy: Copy, copies: Sequence[Copy]) -> Event:
    label, group, detail = _label(copy, copies)
    return Event(copy.store_time, label, copy.broker, copy.topic, copy.queue_id, copy.queue_offset,
                 copy.commit_log_offset, copy.msg_id, copy.uniq_key, group, copy.reconsume_times, detail)


def _label(copy: Copy, copies: Sequence[Copy]) -> tuple[Label, str | None, str]:
    """(label, group, detail) of one copy (§3.4)."""
    props, topic = copy.properties, copy.topic
    real = f"{props.get(REAL_TOPIC)} queue {props.get(REAL_QID)}"
    retry_group = _group_of(props.get(REAL_TOPIC, ""), RETRY_PREFIX)
    if topic == SCHEDULE_TOPIC:
        level = f"delay level {copy.queue_id + 1} (DELAY {props.get(PROPERTY_DELAY)})"
        return Label.DELAYED, retry_group, f"{level}, for {real}"
    if topic == TIMER_TOPIC:
        return Label.TIMER, retry_group, f"deliver at {props.get(TIMER_DELIVER_MS)} ms, for {real}"
    if topic == HALF_TOPIC:
        checked = props.get(TRANSACTION_CHECK_TIMES)
        again = "" if checked is None else f", put back by the broker's check {checked} time(s)"
        txn = "" if TRANSACTION_ID not in props else f", transaction {props[TRANSACTION_ID]}"
        return Label.HALF, None, f"half message for {real}{txn}{again}"
    if topic == OP_TOPIC:
        commits = [c for c in copies if c.broker == copy.broker and c.transaction_type == TRANSACTION_COMMIT
                   and _prepared(c, copies) is not None]
        closed = f"closes half queue offsets {','.join(map(str, op_offsets(copy.body)))}"
        if commits:
            return Label.OP, None, f"{closed}; committed at {commits[0].commit_log_offset}"
        return Label.ROLLBACK, None, f"{closed}; no commit record: rolled back"
    if topic.startswith(DLQ_PREFIX):
        return Label.DLQ, topic[len(DLQ_PREFIX):], _origin(copy)
    if topic.startswith(RETRY_PREFIX):
        return Label.RETRY, topic[len(RETRY_PREFIX):], _origin(copy)
    kind, producer = copy.transaction_type, f"producer group {props.get('PGROUP')}"
    if kind == TRANSACTION_PREPARED:
        return Label.PREPARED, None, f"{producer}: prepared in its topic (3.x), in no queue"
    if kind == TRANSACTION_COMMIT:
        return Label.COMMIT, None, f"{producer}: commits the record at {copy.prepared_offset}"
    if kind == TRANSACTION_ROLLBACK:
        return Label.ROLLBACK, None, f"{producer}: rolls back the record at {copy.prepared_offset}"
    if _delivered(copy, copies):
        return Label.DELIVERED, None, "delivered back to its topic when due"
    return Label.STORED, None, "stored in its topic"


def _delivered(copy: Copy, copies: Sequence[Copy]) -> bool:
    """`copy` is a delayed or timer message delivered back (§3.4): it still stores REAL_TOPIC (its own topic)
    with DELAY or TIMER_*, or an earlier schedule or timer copy of it names its topic."""
    props = copy.properties
    if TIMER_OUT_MS in props or (props.get(REAL_TOPIC) == copy.topic
                                 and (PROPERTY_DELAY in props or TIMER_DELIVER_MS in props)):
        return True
    return copy.uniq_key is not None and any(
        c.topic in (SCHEDULE_TOPIC, TIMER_TOPIC) and c.properties.get(REAL_TOPIC) == copy.topic
        and c.uniq_key == copy.uniq_key and c.store_time <= copy.store_time for c in copies)


def _group_of(topic: str, prefix: str) -> str | None:
    return topic[len(prefix):] if topic.startswith(prefix) else None


def _origin(copy: Copy) -> str:
    props = copy.properties
    return (f"reconsumeTimes {copy.reconsume_times}, from {props.get(RETRY_TOPIC)} "
            f"(origin {props.get(ORIGIN_MESSAGE_ID)})")


def _trace_event(record: TraceRecord) -> Event:
    outcome = "" if record.success is None else (" ok" if record.success else " failed")
    cost = "" if record.cost_ms is None else f", {record.cost_ms} ms"
    by = "" if record.client is None else f" by {record.client}"
    return Event(record.time, Label.TRACE, record.broker, record.topic, None, None, None, record.msg_id,
                 record.uniq_key, record.group, None, f"{record.kind}{outcome}{by}{cost}")


def _gone(found: Found, states: Mapping[str, BrokerState]) -> list[Event]:
    """References below a broker's first retained offset that no lookup answered (§3.4)."""
    events = []
    for copy in found.copies:
        refs = []
        origin = copy.properties.get(ORIGIN_MESSAGE_ID)
        if origin is not None and ("msgId", origin.upper()) in found.missing:
            with contextlib.suppress(ValueError):  # not an offsetMsgId: names no offset
                refs.append((decode_offset_msg_id(origin)[1], origin.upper(), ORIGIN_MESSAGE_ID))
        if copy.transaction_type == TRANSACTION_COMMIT and _prepared(copy, found.copies) is None:
            refs.append((copy.prepared_offset, None, "its preparedTransactionOffset"))
        state = states.get(copy.broker)
        events += [Event(None, Label.GONE, copy.broker, None, None, None, offset, msg_id, copy.uniq_key,
                         None, None, f"{what} of the copy at {copy.commit_log_offset} names {offset}, "
                         f"below the first retained offset {state.min_offset}")
                   for offset, msg_id, what in refs if state is not None and offset < state.min_offset]
    return events


def _prepared(commit: Copy, copies: Sequence[Copy]) -> Copy | None:
    """The half message or 3.x PREPARED record a COMMIT record names (its preparedTransactionOffset)."""
    return next((c for c in copies if c.broker == commit.broker
                 and c.commit_log_offset == commit.prepared_offset), None)


def _group_states(copies: Sequence[Copy], states: Mapping[str, BrokerState]) -> list[Event]:
    """Per consumer group (§3.4): the state of each consumable copy, for the groups with committed offsets
    for its topic or with retries of it (RocketMQ's `messageTrackDetail` answers the same from the
    committed offset), then the state of its redelivery: the last retry copy's, or dead-lettered."""
    events = []
    redelivered = [c for c in copies if c.topic.startswith((RETRY_PREFIX, DLQ_PREFIX))
                   or (c.topic in (SCHEDULE_TOPIC, TIMER_TOPIC)
                       and c.properties.get(REAL_TOPIC, "").startswith(RETRY_PREFIX))]
    for original in filter(_consumable, copies):
        groups = ({g for (t, g) in _offsets(states, original.broker) if t == original.topic}
                  | {_retry_group(c) for c in redelivered if _linked(c, original)})
        events += [_committed_state(g, original, states, Label.PENDING) for g in groups]
    chains: dict[tuple[str, str | None], list[Copy]] = {}
    for copy in redelivered:  # in time order; one chain per group and message
        message = copy.properties.get(ORIGIN_MESSAGE_ID, copy.uniq_key)
        chains.setdefault((_retry_group(copy), message), []).append(copy)
    for (group, _), chain in chains.items():
        last = chain[-1]
        if last.topic.startswith(DLQ_PREFIX):
            events.append(_state_event(Label.DEAD_LETTERED, group, last, f"dead-lettered into {last.topic}"))
        elif last.topic in (SCHEDULE_TOPIC, TIMER_TOPIC):
            events.append(_state_event(Label.PENDING_RETRY, group, last, f"retry waiting in {last.topic}"))
        else:
            events.append(_committed_state(group, last, states, Label.PENDING_RETRY))
    return sorted(events, key=lambda e: (e.group or "", e.broker or "", e.commit_log_offset or -1))


def _consumable(copy: Copy) -> bool:
    """A copy a consumer of its topic pulls: in a consume queue (§4.1), not a system or retry topic."""
    return (copy.transaction_type in (0, TRANSACTION_COMMIT) and not copy.topic.startswith(
        (RETRY_PREFIX, DLQ_PREFIX, "rmq_sys_", "RMQ_SYS_")) and copy.topic != SCHEDULE_TOPIC)


def _retry_group(copy: Copy) -> str:
    topic = copy.topic if copy.topic.startswith((RETRY_PREFIX, DLQ_PREFIX)) else copy.properties[REAL_TOPIC]
    return topic.split("%", 2)[2]


def _linked(copy: Copy, original: Copy) -> bool:
    """`copy` was made from `original`: it names it as its origin, or keeps its UNIQ_KEY."""
    origin = copy.properties.get(ORIGIN_MESSAGE_ID, "").upper()
    return origin == original.msg_id or (copy.uniq_key is not None and copy.uniq_key == original.uniq_key)


def _offsets(states: Mapping[str, BrokerState], broker: str) -> Mapping[tuple[str, str], Mapping[int, int]]:
    state = states.get(broker)
    return {} if state is None else state.offsets


def _committed_state(group: str, copy: Copy, states: Mapping[str, BrokerState], pending: Label) -> Event:
    committed = _offsets(states, copy.broker).get((copy.topic, group), {}).get(copy.queue_id)
    queue = f"{copy.topic} queue {copy.queue_id}"
    if committed is None:
        return _state_event(pending, group, copy, f"no committed offset for {queue}")
    where = f"committed offset {committed} of {queue}"
    if committed > copy.queue_offset:
        return _state_event(Label.CONSUMED, group, copy, f"{where} is past queue offset {copy.queue_offset}")
    return _state_event(pending, group, copy, f"{where} is not past queue offset {copy.queue_offset}")


def _state_event(label: Label, group: str, copy: Copy, detail: str) -> Event:
    return Event(None, label, copy.broker, copy.topic, copy.queue_id, copy.queue_offset,
                 copy.commit_log_offset, copy.msg_id, copy.uniq_key, group, copy.reconsume_times, detail)
