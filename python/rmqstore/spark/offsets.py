"""Stream offsets of the "rmqstore" source: their JSON form and how far they may advance.

One offset per store (keyed by broker name, in option order), in one of two modes:
- log mode (no `topics`): the commit-log position of the next record to read,
  `{"broker-a": {"commitLogOffset": 1048576}}`. A position is always a record start or a segment
  start, never the middle of a record.
- queue mode (`topics`, per-queue `startingOffsets` or `group:`): the next queue offset of every
  (topic, queueId), `{"broker-a": {"queueOffsets": {"TopicA": {"0": 12, "1": 7}}}}`; an `%LMQ%`
  queue is keyed by its name and queue id 0, in its own offsets (§4.6).
Keys come out in a fixed order (brokers as given, topics sorted, queue ids ascending) because Spark
compares offsets as JSON strings.

The torn-record rule that decides how far a log-mode offset may advance is in the store layer,
`rmqstore.store.tail`; this module keeps the offsets' JSON form and the admission of queue units.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rmqstore.format.layout import MIN_RECORD_SIZE
from rmqstore.spark.options import OffsetSpec, OptionError
from rmqstore.store import Store, UnknownNameError
from rmqstore.store.tail import NO_LIMITS, Limits


def check_group_known(stores: Iterable[Store], spec: OffsetSpec, option: str) -> None:
    """For `group:<name>`: OptionError naming the option and the group (close and known groups) when no
    store has offsets committed by it; a typo must not read as an empty result."""
    if spec.kind != "group" or spec.group is None:
        return
    unknown = []
    for store in stores:
        try:
            store.group_offsets(spec.group)
            return
        except UnknownNameError as exc:
            unknown.append(str(exc))
    raise OptionError(option, "; ".join(unknown))


LOG_KEY = "commitLogOffset"
QUEUES_KEY = "queueOffsets"

QueueKey = tuple[str, int]
"""(topic, queueId)."""


@dataclass(frozen=True)
class StoreOffset:
    """Where the stream stands in one store: `position` (log mode) or `queues` (queue mode)."""

    position: int | None = None
    queues: Mapping[QueueKey, int] | None = None

    @property
    def is_log(self) -> bool:
        return self.position is not None

    def to_json(self) -> dict[str, Any]:
        if self.position is not None:
            return {LOG_KEY: self.position}
        by_topic: dict[str, dict[str, int]] = {}
        for (topic, queue_id), offset in sorted((self.queues or {}).items()):
            by_topic.setdefault(topic, {})[str(queue_id)] = offset
        return {QUEUES_KEY: by_topic}

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> StoreOffset:
        if LOG_KEY in doc:
            return StoreOffset(position=int(doc[LOG_KEY]))
        if QUEUES_KEY in doc:
            return StoreOffset(queues={(topic, int(qid)): int(offset)
                                       for topic, queues in doc[QUEUES_KEY].items()
                                       for qid, offset in queues.items()})
        raise ValueError(f"rmqstore: not a stream offset: {dict(doc)!r} "
                         f"(expected '{LOG_KEY}' or '{QUEUES_KEY}')")


def offsets_to_json(offsets: Mapping[str, StoreOffset]) -> dict[str, Any]:
    """The JSON object Spark stores in the checkpoint, brokers in the given order."""
    return {broker: offset.to_json() for broker, offset in offsets.items()}


def offsets_from_json(doc: Mapping[str, Any], brokers: Iterable[str]) -> dict[str, StoreOffset]:
    """Parse a checkpointed offset; every broker of the query must be present."""
    missing = [b for b in brokers if b not in doc]
    if missing:
        raise ValueError(f"rmqstore: the checkpointed offset {dict(doc)!r} has no entry for store(s) "
                         f"{missing}; the stores of a query cannot change between restarts "
                         "(use a new checkpoint)")
    return {broker: StoreOffset.from_json(doc[broker]) for broker in brokers}


def admit_queue_units(starts: Mapping[QueueKey, int], ends: Mapping[QueueKey, int],
                      units_of: Callable[[QueueKey, int, int], np.ndarray],
                      limits: Limits) -> dict[QueueKey, int]:
    """New queue offsets after admitting units in commit-log order (oldest message first) within `limits`.

    `units_of(queue, start, end)` returns that queue's units (numpy, CQ_DTYPE fields phy/size).
    Without limits every queue moves to its end. A queue can contribute at most `limits.records` units,
    and at most bytes/91 (the smallest record) units, so only that many are read per queue.
    """
    if limits == NO_LIMITS:
        return dict(ends)
    by_bytes = None if limits.bytes is None else limits.bytes // MIN_RECORD_SIZE + 1
    cap = min(x for x in (limits.records, by_bytes) if x is not None)
    phys, sizes, owners = [], [], []
    queues = [q for q in sorted(ends) if ends[q] > starts.get(q, ends[q])]
    for number, queue in enumerate(queues):
        start = starts[queue]
        units = units_of(queue, start, min(ends[queue], start + cap))
        phys.append(units["phy"].astype(np.int64))
        sizes.append(units["size"].astype(np.int64))
        owners.append(np.full(len(units), number, dtype=np.int64))
    result = {q: starts.get(q, ends[q]) for q in ends}
    if not queues:
        return result
    phy = np.concatenate(phys)
    order = np.argsort(phy, kind="stable")
    size_sorted = np.concatenate(sizes)[order]
    keep = len(order)
    if limits.records is not None:
        keep = min(keep, limits.records)
    if limits.bytes is not None:
        within = int(np.searchsorted(np.cumsum(size_sorted), limits.bytes, side="right"))
        keep = min(keep, max(within, 1))
    admitted = np.bincount(np.concatenate(owners)[order][:keep], minlength=len(queues))
    for number, queue in enumerate(queues):
        result[queue] = starts[queue] + int(admitted[number])
    return result
