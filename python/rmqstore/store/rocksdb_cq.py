"""RocksDB consume queues (§4.7, `storeType=defaultRocksDB`): the same reads as `ConsumeQueue`.

`consumequeue/` is then one RocksDB database: the `default` column family holds a 28-byte value per
unit under (topic, queueId, queue offset), the `offset` family each queue's min and max entries. A
queue's units run from its min entry (0 without one) to its max entry; like file queues, units that
point before the commit log's min offset (retention) or at/after its valid end (not recovered) are
left out, found by bisection on the physical offset (units follow log order along a queue).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property

import numpy as np

from rmqstore.format.consumequeue import CQ_DTYPE
from rmqstore.format.rocksdbcq import (
    CQ_VALUE_SIZE,
    MAX_TAG,
    MIN_TAG,
    OFFSET_COLUMN_FAMILY,
    ROCKS_UNIT_DTYPE,
    parse_offset_entry,
    parse_unit_values,
    queue_key_prefix,
    unit_key,
)
from rmqstore.store.consumequeue import UNIT_DTYPE, tags_candidate_mask
from rmqstore.store.errors import StoreCorruptionError
from rmqstore.store.rocksdb import ReadOnlyRocksDB


class RocksConsumeQueues:
    """The queues of a RocksDB `consumequeue/`: (topic, queueId) -> stored [min, max] queue offsets."""

    def __init__(self, db: ReadOnlyRocksDB) -> None:
        self.db = db
        bounds: dict[tuple[str, int], dict[bytes, int]] = {}
        for key, value in db.items(OFFSET_COLUMN_FAMILY):
            entry = parse_offset_entry(key, value)
            if entry is not None and entry[1] in (MAX_TAG, MIN_TAG):
                topic, tag, queue_id, _, queue_offset = entry
                bounds.setdefault((topic, queue_id), {})[tag] = queue_offset
        self.bounds = {name: (b.get(MIN_TAG, 0), b[MAX_TAG]) for name, b in bounds.items() if MAX_TAG in b}
        """(topic, queueId) -> (min entry or 0, max entry): queues with a max entry, as RocketMQ loads
        them."""

    def topics(self) -> set[str]:
        return {topic for topic, _ in self.bounds}

    def queue_ids(self, topic: str) -> list[int]:
        return sorted(q for t, q in self.bounds if t == topic)

    def queue(self, topic: str, queue_id: int, log_min: int, log_max: int) -> RocksConsumeQueue:
        low, high = self.bounds.get((topic, queue_id), (0, -1))
        return RocksConsumeQueue(self.db, topic, queue_id, low, high + 1, log_min, log_max)


class RocksConsumeQueue:
    """Units of one (topic, queueId) in the RocksDB, bounded by the commit log's [min_offset, max_offset)."""

    def __init__(self, db: ReadOnlyRocksDB, topic: str, queue_id: int, stored_min: int, stored_end: int,
                 log_min_offset: int, log_max_offset: int) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self._db = db
        self._stored = (stored_min, max(stored_min, stored_end))
        self._log_min = log_min_offset
        self._log_max = log_max_offset

    def __repr__(self) -> str:
        return f"RocksConsumeQueue({self.topic!r}, {self.queue_id}, [{self.min_offset}, {self.max_offset}))"

    def _raw(self, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """(queue offsets, unit values) of the stored units with keys in [start, end), in order."""
        if start >= end:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=ROCKS_UNIT_DTYPE)
        prefix = queue_key_prefix(self.topic, self.queue_id)
        items = list(self._db.items("default", unit_key(self.topic, self.queue_id, start),
                                    unit_key(self.topic, self.queue_id, end)))
        offsets = np.array([int.from_bytes(k[len(prefix):], "big", signed=True) for k, _ in items],
                           dtype=np.int64)
        try:
            return offsets, parse_unit_values([v for _, v in items])
        except ValueError as exc:
            where = f"queue {self.topic}/{self.queue_id} from queue offset {start}"
            raise StoreCorruptionError(self._db.path, 0, f"{where}: {exc}") from None

    def _phy_at(self, queue_offset: int) -> int | None:
        value = self._db.get("default", unit_key(self.topic, self.queue_id, queue_offset))
        if value is None:
            return None
        if len(value) != CQ_VALUE_SIZE:
            where = f"queue {self.topic}/{self.queue_id} offset {queue_offset}"
            raise StoreCorruptionError(self._db.path, 0,
                                       f"{where}: unit value is {len(value)} bytes, not {CQ_VALUE_SIZE}")
        return int.from_bytes(value[:8], "big", signed=True)

    def _first_at_least(self, lo: int, hi: int, phy: int) -> int:
        """The first queue offset in [lo, hi) whose unit points at or after `phy` (hi if none); a missing
        unit counts as below (RocketMQ's binarySearchInCQ moves past it)."""
        while lo < hi:
            mid = (lo + hi) // 2
            at = self._phy_at(mid)
            if at is None or at < phy:
                lo = mid + 1
            else:
                hi = mid
        return lo

    @cached_property
    def max_offset(self) -> int:
        """One past the last stored unit that points before the log's valid end."""
        low, end = self._stored
        return self._first_at_least(low, end, self._log_max)

    @cached_property
    def min_offset(self) -> int:
        """The first unit at or after the min entry that points at or after the log's min offset."""
        return self._first_at_least(self._stored[0], self.max_offset, self._log_min)

    def last_phy(self) -> int | None:
        """PHYSICALOFFSET of the queue's last stored unit, units past the log's valid end included (None
        without units): a record the dispatcher saw (damage.md §2), as `ConsumeQueue.last_phy`."""
        low, end = self._stored
        return self._phy_at(end - 1) if end > low else None

    def floor(self, offset: int) -> int:
        """`offset`: every unit holds one queue offset (as `ConsumeQueue.floor`)."""
        return offset

    def end_bound(self, upto: int | None = None) -> int:
        """`max_offset`, or `upto` when the queue reaches it (the file queue's planning bound)."""
        return self.max_offset if upto is None else min(self.max_offset, max(upto, 0))

    def unit_span(self) -> tuple[int, int]:
        """Queue offsets [first, end) the queue's storage holds (here: its valid units)."""
        return self.min_offset, self.max_offset

    def units(self, start: int | None = None, end: int | None = None, *,
              tags: Iterable[str] | None = None) -> np.ndarray:
        """Units with queue offset in [start, end) ∩ [min_offset, max_offset), as `UNIT_DTYPE`."""
        lo = self.min_offset if start is None else max(start, self.min_offset)
        hi = self.max_offset if end is None else min(end, self.max_offset)
        return self.slice_units(lo, hi, tags=tags)

    def slice_units(self, start: int, end: int, *, tags: Iterable[str] | None = None) -> np.ndarray:
        """`units(start, end, tags=tags)` of a slice inside [min_offset, max_offset)."""
        offsets, raw = self._raw(start, end)
        out = np.empty(len(raw), dtype=UNIT_DTYPE)
        out["queue_offset"] = offsets
        out["phy"] = raw["phy"]
        out["size"] = raw["size"]
        out["tags_code"] = raw["tags_code"]
        keep = (out["size"] > 0) & (out["phy"] >= self._log_min) & (out["phy"] < self._log_max)
        if tags is not None:
            keep &= tags_candidate_mask(self.topic, out, tags)
        return out[keep]

    def spans(self, start: int, end: int) -> list[tuple[int, int]]:
        """The part of queue offsets [start, end) the queue holds units for."""
        a, b = max(start, self.min_offset), min(end, self.max_offset)
        return [(a, b)] if a < b else []

    def units_from_phy(self, first_phy: int) -> np.ndarray:
        """The queue's units pointing at or after `first_phy`."""
        return self.units(self._first_at_least(self.min_offset, self.max_offset, first_phy), None)

    def stored_units(self) -> tuple[int, np.ndarray]:
        """(queue offset of the first, every stored unit from the min entry to the max entry) for `verify`."""
        offsets, raw = self._raw(*self._stored)
        units = np.empty(len(raw), dtype=CQ_DTYPE)
        for field in CQ_DTYPE.names:
            units[field] = raw[field]
        return (int(offsets[0]) if len(offsets) else self._stored[0]), units
