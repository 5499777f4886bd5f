"""Consumer lag per group, topic and queue (design §10): from the consume queues (§4.3-§4.7) and the
committed offsets (§4.8), reading record headers only (a store time), never a body.

A lag that cannot be known is a named state with null counts, never 0 (`LagState`); a negative difference
is never clamped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from rmqstore.format.record import RETRY_PREFIX
from rmqstore.store.errors import PERMISSIVE, UnknownNameError
from rmqstore.store.queues import Queue
from rmqstore.store.store import Store

UNIT_WINDOW = 1 << 20
"""Queue offsets whose units are read at once (28 MiB) when summing a backlog's bytes."""

LAG_COLUMNS = ("group", "topic", "queueId", "state", "committedOffset", "minOffset", "maxOffset",
               "lagMessages", "lagBytes", "oldestStoreTimestamp", "lagMs")
"""A queue's lag as rows name it (the DataFrame adds `logEndTimestamp`)."""


class LagState(StrEnum):
    """Whether a queue's lag is known (design §10)."""

    OK = "ok"
    """min <= committed <= max: the lag is max - committed (0 when caught up)."""
    NO_OFFSET = "no-offset"
    """The group consumes the topic but committed no offset for this queue."""
    PAST_END = "offset-past-end"
    """The committed offset is past the queue's max offset (a queue lost or truncated by recovery)."""
    RETAINED_AWAY = "retained-away"
    """The committed offset is below the queue's min offset: retention deleted unconsumed messages."""


@dataclass(frozen=True)
class QueueLag:
    """One queue's lag for one group; the counts are None unless `state` is OK."""

    group: str
    topic: str
    queue_id: int
    state: LagState
    committed_offset: int | None
    min_offset: int
    max_offset: int
    messages: int | None
    """max offset - committed offset (BatchCQ: inner messages, §4.5)."""
    bytes: int | None
    """Sum of the unconsumed units' sizes (a BatchCQ unit holding the committed offset counts whole)."""
    oldest_store_time: int | None
    """STORETIMESTAMP (ms) of the record at the committed offset; None when caught up, when the lag is
    unknown, or when that record cannot be read."""
    age_ms: int | None
    """`LagReport.log_end_time` - `oldest_store_time` (0 when caught up): negative when a broker clock
    stepped back."""

    def to_json(self) -> dict[str, Any]:
        """The row as `rmqstore lag --json` and the lag DataFrame name its columns (`LAG_COLUMNS`)."""
        values = (self.group, self.topic, self.queue_id, str(self.state), self.committed_offset,
                  self.min_offset, self.max_offset, self.messages, self.bytes, self.oldest_store_time,
                  self.age_ms)
        return dict(zip(LAG_COLUMNS, values, strict=True))


@dataclass(frozen=True)
class LagReport:
    """The lag of every (group, topic, queue), and the store time that ages are measured against."""

    log_end_time: int | None
    """STORETIMESTAMP (ms) of the newest dispatched record: the one furthest into the log that a queue's
    last unit points at (None when the queues hold no unit)."""
    queues: list[QueueLag]


def consumer_lag(store: Store, group: str | None = None, topic: str | None = None) -> LagReport:
    """The lag of `group`'s queues (every group's when None), of `topic` only when given (design §10).

    UnknownNameError naming the group when it committed no offset (`Store.group_offsets`), or the topic
    when no group (or not `group`) consumes it, so a typo never reads as no lag.
    """
    table = store.consumer_offsets() if group is None else {
        (t, group): offsets for t, offsets in store.group_offsets(group).items()}
    known = set(store.topics())
    for g in {g for _, g in table}:  # a retry topic the group never committed to still holds its backlog
        if RETRY_PREFIX + g in known:
            table.setdefault((RETRY_PREFIX + g, g), {})
    if topic is not None and all(t != topic for t, _ in table):
        raise UnknownNameError("topic", topic, sorted({t for t, _ in table}),
                               "has no committed offsets" + ("" if group is None else f" of group {group!r}"))
    pending = []
    for (t, g), offsets in sorted(table.items(), key=lambda item: (item[0][1], item[0][0])):
        if topic is not None and t != topic:
            continue
        queue_ids = sorted(set(offsets) | set(store.queue_ids(t) if t in known else ()))
        pending.extend((g, t, q, offsets.get(q)) for q in queue_ids)
    lags, phys = zip(*(_queue_lag(store, *item) for item in pending), strict=True) if pending else ((), ())
    times = store_times(store, [phy for phy in phys if phy is not None])
    end = log_end_time(store)
    return LagReport(end, [_timed(lag, times.get(phy), end) for lag, phy in zip(lags, phys, strict=True)])


def _queue_lag(store: Store, group: str, topic: str, queue_id: int,
               committed: int | None) -> tuple[QueueLag, int | None]:
    """The lag of one queue without its times, and where its oldest unconsumed record is (None: none)."""
    queue = store.consume_queue(topic, queue_id)
    lo, hi = queue.min_offset, queue.max_offset
    state = (LagState.NO_OFFSET if committed is None else LagState.PAST_END if committed > hi
             else LagState.RETAINED_AWAY if committed < lo else LagState.OK)
    lag = QueueLag(group, topic, queue_id, state, committed, lo, hi, None, None, None, None)
    if state is not LagState.OK:
        return lag, None
    size, phy = _backlog_units(queue, queue.floor(committed), hi)
    return replace(lag, messages=hi - committed, bytes=size), phy


def _backlog_units(queue: Queue, start: int, end: int) -> tuple[int, int | None]:
    """(sum of the sizes, physical offset of the first) of the units from the one at `start` to `end`, read
    `UNIT_WINDOW` queue offsets at a time."""
    total, first = 0, None
    for lo in range(start, end, UNIT_WINDOW):
        units = queue.units(lo, min(lo + UNIT_WINDOW, end))
        units = units[units["queue_offset"] >= lo]  # a BatchCQ unit holding `lo` is the window before's
        total += int(units["size"].sum())
        first = int(units["phy"][0]) if first is None and len(units) else first
    return total, first


def _timed(lag: QueueLag, oldest: int | None, end: int | None) -> QueueLag:
    """`lag` with the store time of its oldest unconsumed record and its age against `end`."""
    caught_up = lag.messages == 0
    age = 0 if caught_up else None if oldest is None or end is None else end - oldest
    return replace(lag, oldest_store_time=oldest, age_ms=age)


def store_times(store: Store, offsets: Iterable[int]) -> dict[int, int]:
    """Physical offset -> STORETIMESTAMP (ms) of the records there, headers only; a damaged record is left
    out (PERMISSIVE, docs/damage.md §3), so its time reads as unknown."""
    wanted = sorted(set(offsets))
    if not wanted:
        return {}
    batch = store.read_offsets(wanted, ["commitLogOffset", "storeTimestamp"], mode=PERMISSIVE,
                               decompress=False, strict=False)
    stamps = pc.cast(batch.column("storeTimestamp"), pa.int64()).to_pylist()
    phys = batch.column("commitLogOffset").to_pylist()
    return {phy: us // 1000 for phy, us in zip(phys, stamps, strict=True)}


def log_end_time(store: Store) -> int | None:
    """STORETIMESTAMP (ms) of the record that the queues' last units point at furthest into the log."""
    last = None
    for t in store.topics():
        for q in store.queue_ids(t):
            queue = store.consume_queue(t, q)
            if queue.max_offset > queue.min_offset:
                units = queue.units(queue.floor(queue.max_offset - 1), queue.max_offset)
                if len(units):
                    last = max(last or 0, int(units["phy"][-1]))
    return None if last is None else store_times(store, [last]).get(last)
