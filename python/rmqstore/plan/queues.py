"""Queue windows: per-queue offset ranges from startingOffsets / endingOffsets, resolved on a store.

Offsets per (topic, queueId) follow Kafka's JSON convention: a queue offset, -2 = earliest,
-1 = latest. Queues of a listed topic that are not named start at earliest and end at latest.
An `%LMQ%` queue is named like a topic (queue id 0) and counts in its own offsets (§4.6).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from rmqstore.format.record import LMQ_PREFIX
from rmqstore.plan.predicates import QueueWindow, QueueWindows
from rmqstore.plan.tasks import QueueSlice
from rmqstore.store import Store
from rmqstore.store.consumequeue import UnitDamage

EARLIEST = -2
LATEST = -1

QueueOffsets = Mapping[str, Mapping[int, int]]


def resolve_windows(store: Store, starting: QueueOffsets | None, ending: QueueOffsets | None,
                    topics: Iterable[str] | None) -> QueueWindows:
    """Windows for every queue of the topics named in `starting`/`ending` (∩ `topics` when given)."""
    named = set(starting or {}) | set(ending or {})
    if topics is not None:
        named &= set(topics)
    known = set(store.topics())
    windows = []
    for topic in sorted(named & known):
        for queue_id in store.queue_ids(topic):
            cq = store.consume_queue(topic, queue_id)
            first, last = cq.min_offset, cq.max_offset
            given = _resolve((starting or {}).get(topic, {}).get(queue_id, EARLIEST), first, last)
            start = max(cq.floor(given), first)  # inside a BatchCQ batch: the whole batch (§4.5)
            end = min(_resolve((ending or {}).get(topic, {}).get(queue_id, LATEST), first, last), last)
            if start < end:
                windows.append(QueueWindow(topic, queue_id, start, end))
    return QueueWindows(tuple(windows))


def _resolve(offset: int, earliest: int, latest: int) -> int:
    return earliest if offset == EARLIEST else latest if offset == LATEST else offset


def queue_windows_slices(store: Store, windows: QueueWindows) -> list[QueueSlice]:
    """The windows as consume-queue slices (windows are already resolved against the store)."""
    return [QueueSlice(w.topic, w.queue_id, w.start, w.end) for w in windows.windows]


def lost_at_ends(store: Store, slices: Iterable[QueueSlice]) -> tuple[UnitDamage, ...]:
    """The units lost past the end of the queues of the slices that reach it (`Store.lost_at_end`,
    damage.md §3): what a read taking rows from the units alone would silently miss. An `%LMQ%` queue's
    records carry their own topic (§4.6), so none is ever found there: not looked for."""
    return tuple(d for s in slices if not s.topic.startswith(LMQ_PREFIX)
                 and s.end == store.consume_queue(s.topic, s.queue_id).max_offset
                 for d in store.lost_at_end(s.topic, s.queue_id))


def reading_groups(slices: Sequence[QueueSlice]) -> list[list[QueueSlice]]:
    """The slices that may share a read task: those of ordinary queues together, and each `%LMQ%`
    queue's alone. A task reads a record once however many of its slices point at it; a record in an
    LMQ queue is in its own topic's queue (and maybe other LMQ queues) too, so this keeps one row per
    queue unit read, in every plan (§4.6)."""
    groups: dict[str, list[QueueSlice]] = {}
    for s in slices:
        groups.setdefault(s.topic if s.topic.startswith(LMQ_PREFIX) else "", []).append(s)
    return [groups[name] for name in sorted(groups)]
