"""Units lost at the end of a consume queue (damage.md §3), and the dispatch frontier that is the evidence.

Zeroed units at a queue's end look like the zeros the broker pre-allocates past it, units pointing past
the log's valid end like those recovery truncates: either way the queue just seems shorter. The broker
dispatches records in log order (format §4.1), so a record of the queue (its topic and queue id, a
transaction type that gets a unit) with QUEUEOFFSET at or past the queue's end, at or before the furthest
record start a consume queue or the index names (`dispatch_frontier`), had its unit written: that unit is
lost. A record past the frontier is one the dispatcher has not reached yet. Such a record is in no unit's
range, so only the bytes no unit covers (`Coverage` gaps) between the queue's last record and the frontier
are read, never the log between (a queue idle for days costs no scan of what the others wrote since).
"""

from __future__ import annotations

from functools import cached_property

from rmqstore.format.layout import QUEUED_TRANSACTION_TYPES, SYSFLAG_TRANSACTION_MASK
from rmqstore.store.consumequeue import ConsumeQueue, UnitDamage
from rmqstore.store.coverage import Coverage
from rmqstore.store.errors import PERMISSIVE
from rmqstore.store.index import IndexFiles
from rmqstore.store.queues import Queues
from rmqstore.store.ranges import clip_ranges
from rmqstore.store.records import RecordReader

HEADER_COLUMNS = ["commitLogOffset", "topic", "queueId", "queueOffset", "sysFlag"]
"""What is read of a record in a gap: where it is, its queue and queue offset (§2.2), and whether it gets
a unit at all (PREPARED and ROLLBACK records never do, §4.1)."""


def dispatch_frontier(index: IndexFiles, queues: Queues) -> int | None:
    """The furthest record start a consume queue (each queue's last valid unit) or the index (the newest
    file's endPhyOffset) names, None when none does: the broker had dispatched every record up to it
    (damage.md §2)."""
    known = [index.last_indexed_offset()]
    for topic in queues.topics():
        known += [queues.consume_queue(topic, qid).last_phy() for qid in queues.queue_ids(topic)]
    named = [k for k in known if k is not None]
    return max(named) if named else None


class LostUnits:
    """The units lost at the ends of the consume queues of `queues` (module docstring), found in the
    `coverage` gaps of the log `records` reads, below the frontier `index` and `queues` name."""

    def __init__(self, records: RecordReader, coverage: Coverage, index: IndexFiles, queues: Queues) -> None:
        self.records = records
        self.coverage = coverage
        self.index = index
        self.queues = queues

    @cached_property
    def frontier(self) -> int | None:
        """`dispatch_frontier`, read once, before the units a lost one is confirmed by are read again."""
        return dispatch_frontier(self.index, self.queues)

    def lost_at_end(self, topic: str, queue_id: int) -> list[UnitDamage]:
        """The units missing at the end of the consume queue of (topic, queueId), in queue order, each
        naming the commit-log offset of the record it should point to. Only unit files can lose units
        this way (a BatchConsumeQueue ends at its first invalid unit, §4.5; a RocksDB queue has none)."""
        queue = self.queues.consume_queue(topic, queue_id)
        if not isinstance(queue, ConsumeQueue) or not queue.segments or self.frontier is None:
            return []
        frontier = self.frontier
        end = queue.max_offset
        last = queue.slice_units(end - 1, end) if end > queue.min_offset else []
        start = int(last["phy"][0]) + int(last["size"][0]) if len(last) else self.records.log.min_offset
        if start > frontier:  # the queue's last record is the furthest dispatched: nothing can be lost
            return []
        gaps = clip_ranges(self.coverage.uncovered_ranges(), start, frontier + 1)
        orphans: dict[int, int] = {}  # queue offset -> the first record holding it
        for batch in self.records.scan_ranges(gaps, HEADER_COLUMNS, mode=PERMISSIVE, decompress=False):
            rows = batch.to_pydict()
            for phy, t, q, qo, flag in zip(*(rows[c] for c in HEADER_COLUMNS), strict=True):
                if ((t, q) == (topic, queue_id) and qo >= end and phy <= frontier
                        and flag & SYSFLAG_TRANSACTION_MASK in QUEUED_TRANSACTION_TYPES):
                    orphans[qo] = min(orphans.get(qo, phy), phy)
        lost = []
        for qo, phy in sorted(orphans.items()):
            unit = queue.slice_units(qo, qo + 1)  # read again: a broker dispatching now may have written it
            if len(unit) and int(unit["phy"][0]) == phy:
                continue
            lost.append(queue.unit_damage(qo, f"is missing (the queue's units end at {end}): the record "
                                              f"of {topic}/{queue_id} at queue offset {qo} is at commit-log "
                                              f"offset {phy}, and the broker had dispatched up to {frontier} "
                                              "(a consume queue or the index names it)"))
        return lost
