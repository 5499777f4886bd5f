"""Which commit-log bytes hold records that no consume-queue unit points to (design §3.2, spec §4.1).

Per segment, the records without a unit are the holes between the units pointing into it (`gaps`, what a
topic plan scans besides its queue slices). A verdict also keeps the `unindexed` parts of its gaps
(ROLLBACK records and bytes holding no valid record, part of what `rmqstore.store.side_index` indexes) and
the topics of the gaps' indexed records (`Coverage.indexed_topics`). Verdicts are cached outside the store
(`rmqstore.store.segment_cache`, kind `coverage`, salted with the set of queues; design §8); segments
decided again only need the tails of the queues (units are in log order along a queue).
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from rmqstore.format.layout import BLANK_MAGIC, SYSFLAG_TRANSACTION_MASK, TRANSACTION_ROLLBACK
from rmqstore.store.cache_identity import CacheIdentity
from rmqstore.store.commitlog import CommitLog
from rmqstore.store.consumequeue import BatchConsumeQueue, ConsumeQueue
from rmqstore.store.contract_store import COVERAGE_CACHE_KIND, COVERAGE_CACHE_VERSION
from rmqstore.store.errors import PERMISSIVE
from rmqstore.store.queues import Queues
from rmqstore.store.ranges import merge_ranges, subtract_ranges
from rmqstore.store.records import RecordReader
from rmqstore.store.segment_cache import SegmentCache
from rmqstore.store.segment_cache import cache_dir as kind_cache_dir
from rmqstore.store.segments import Segment

BLANK_HEADER_SIZE = 8
"""TOTALSIZE and MAGICCODE of a BLANK record (§2.6)."""


Gap = tuple[int, int]
"""Commit-log byte range [start, end) whose records no consume-queue unit points to."""


@dataclass(frozen=True)
class SegmentVerdict:
    """The uncovered byte ranges of one segment, in log order (none: every record has a unit), the
    parts of them an index lookup cannot find (ROLLBACK records, bytes holding no valid record) and
    the topics of the indexed records in them, sorted."""

    segment: Segment
    gaps: tuple[Gap, ...]
    unindexed: tuple[Gap, ...]
    topics: tuple[str, ...]


class Coverage:
    """The verdicts of the segments of `log` from the units of `queues` (module docstring), decided once
    and cached outside the store under `cache_identity`."""

    def __init__(self, log: CommitLog, records: RecordReader, queues: Queues,
                 cache_identity: CacheIdentity) -> None:
        self.log = log
        self.records = records
        self.queues = queues
        self.cache_identity = cache_identity
        self.note: str | None = None
        """What deciding the verdicts read, when some were not cached (None: all came from the cache):
        a one-time cost per segment the plan reports (design §3.2)."""

    @cached_property
    def verdicts(self) -> list[SegmentVerdict]:
        """A verdict for every segment holding records, in log order (`segment_verdicts`)."""
        return segment_verdicts(self)

    @cached_property
    def _uncovered(self) -> list[Gap]:
        return [gap for verdict in self.verdicts for gap in verdict.gaps]

    def uncovered_ranges(self) -> list[Gap]:
        """Commit-log byte ranges [start, end) that may hold records no consume-queue unit points to.

        Transaction PREPARED / ROLLBACK records (§4.1), records the queues have not caught up with and
        records of topics without a queue directory; everything else is found through the queues.
        Decided per segment, computed once and cached on disk outside the store for sealed segments.
        """
        return list(self._uncovered)

    def uncovered_ranges_of(self, topics: Iterable[str]) -> list[Gap]:
        """The parts of `uncovered_ranges` that may hold a record of one of `topics`: every gap of a
        segment whose gaps' indexed records include one of them, and elsewhere only the `unindexed` parts
        (ROLLBACK records and bytes holding no valid record, whose topics a verdict does not keep). A
        `topic =` plan scans these (design §3.2), not every gap of the log."""
        wanted = set(topics)
        return [gap for verdict in self.verdicts
                for gap in (verdict.gaps if wanted.intersection(verdict.topics) else verdict.unindexed)]

    def unindexed_ranges(self) -> list[Gap]:
        """The parts of `uncovered_ranges` that key and uniqKey lookups cannot find through the index.

        ROLLBACK records (the only transaction type the broker does not index, §5.4) and bytes holding
        no valid record; the lookups find them, and the records past the index's end, in the side index.
        """
        return [gap for verdict in self.verdicts for gap in verdict.unindexed]

    def indexed_topics(self) -> list[str]:
        """Every topic that can have records in the index, sorted: the queues' topics and those of the
        records in `uncovered_ranges` the index has (a topic holding only transaction PREPARED records
        has no queue directory and may be in no topics.json, yet they are indexed, §5.4).

        Key and uniqKey lookups without topics probe `topic#key` for each of these.
        """
        return sorted(set(self.queues.topics()).union(*(verdict.topics for verdict in self.verdicts)))

    def uncovered_segments(self) -> list[Segment]:
        """The segments holding `uncovered_ranges`, by base offset."""
        return [seg for seg in self.log.segments if any(seg.contains(start) for start, _ in self._uncovered)]


def cache_dir() -> str:
    """Where coverage verdicts are cached (never inside a store)."""
    return kind_cache_dir(COVERAGE_CACHE_KIND)


def segment_verdicts(cov: Coverage) -> list[SegmentVerdict]:
    """A verdict for every segment holding records (base offset below the valid end), in log order."""
    live = [s for s in cov.log.segments if s.base_offset < cov.log.max_offset]
    if not live:
        return []
    names = [(t, q) for t in cov.queues.topics() for q in cov.queues.queue_ids(t)]
    digest = hashlib.sha256(json.dumps(sorted(f"{t}/{q}" for t, q in names)).encode()).hexdigest()
    cache = SegmentCache.for_store(cov, COVERAGE_CACHE_KIND, COVERAGE_CACHE_VERSION, digest)
    by_base = {s.base_offset: s for s in live}
    known = {base: SegmentVerdict(by_base[base], tuple((a, b) for a, b in gaps),
                                  tuple((a, b) for a, b in unindexed), tuple(topics))
             for base, (gaps, unindexed, topics) in (cache.load(cov.log, live) if cache else {}).items()}
    lacking = [s for s in live if s.base_offset not in known]
    # the queues' files are listed and read only when a verdict is decided again
    queues = [cov.queues.consume_queue(t, q) for t, q in names] if lacking else []
    fresh = _compute(cov, lacking, queues)
    if cache and fresh:
        cache.save(cov.log, [(v.segment, [v.gaps, v.unindexed, v.topics]) for v in [*known.values(), *fresh]])
    if fresh:
        where = f"cached in {cache_dir()}" if cache else "kept per Store"
        cov.note = (f"decided which bytes of {len(fresh)} commit-log segment(s) no consume queue covers, "
                    f"from the units of {len(names)} queue(s) and a scan of the uncovered bytes, once: "
                    f"{where}")
    verdicts = {**known, **{v.segment.base_offset: v for v in fresh}}
    return [verdicts[s.base_offset] for s in live]


def _compute(cov: Coverage, segments: Sequence[Segment],
             queues: Sequence[ConsumeQueue | BatchConsumeQueue]) -> list[SegmentVerdict]:
    """Verdicts for `segments` from the units of every queue (module docstring)."""
    if not segments:
        return []
    first = segments[0].base_offset
    phy_parts, size_parts = [], []
    for queue in queues:
        units = queue.units_from_phy(first)  # a queue out of order only leaves a segment uncovered
        phy_parts.append(units["phy"])
        size_parts.append(units["size"].astype(np.int64))
    phy = np.concatenate(phy_parts) if phy_parts else np.empty(0, dtype=np.int64)
    size = np.concatenate(size_parts) if size_parts else np.empty(0, dtype=np.int64)
    order = np.argsort(phy, kind="stable")
    phy, size = phy[order], size[order]
    bounds = np.searchsorted(phy, [s.base_offset for s in segments] + [segments[-1].end_offset])
    verdicts = []
    for seg, lo, hi in zip(segments, bounds[:-1], bounds[1:], strict=True):
        gaps = _gaps(cov, seg, phy[lo:hi] - seg.base_offset, size[lo:hi])
        verdicts.append(SegmentVerdict(seg, gaps, *_unindexed(cov, gaps)))
    return verdicts


def _gaps(cov: Coverage, seg: Segment, starts: np.ndarray, sizes: np.ndarray) -> tuple[Gap, ...]:
    """The byte ranges of `seg` no unit covers, from its units' positions (sorted) and sizes.

    Records are contiguous from position 0 up to the valid end (the segment holding it) or a BLANK
    (a sealed segment), so the records without a unit are exactly the holes between the units, before
    the first and after the last one. Units that overlap or point past the records are not what the
    broker writes: then the whole segment counts as uncovered. In a DLedger log (§2.13) a record's
    entry header (`lead` bytes) before it belongs to it.
    """
    lead = cov.log.lead
    holding_end = seg.contains(cov.log.max_offset)
    records_end = cov.log.max_offset - seg.base_offset if holding_end else seg.size
    keep = np.ones(len(starts), dtype=bool)  # a record in several queues counts once
    keep[1:] = (starts[1:] != starts[:-1]) | (sizes[1:] != sizes[:-1])
    starts, sizes = starts[keep], sizes[keep]
    ends = starts + sizes
    if len(starts) and (np.any(starts[1:] - lead < ends[:-1]) or starts[0] < lead or ends[-1] > records_end):
        return ((seg.base_offset, seg.base_offset + records_end),)
    holes_from = np.concatenate(([0], ends))
    holes_to = np.concatenate((starts - lead, [records_end]))
    if not holding_end and _blank_at(cov, seg, int(holes_from[-1])):
        holes_to[-1] = holes_from[-1]  # the BLANK ends the records of a sealed segment
    open_holes = holes_from < holes_to
    return tuple((seg.base_offset + int(a), seg.base_offset + int(b))
                 for a, b in zip(holes_from[open_holes], holes_to[open_holes], strict=True))


def _unindexed(cov: Coverage, gaps: tuple[Gap, ...]) -> tuple[tuple[Gap, ...], tuple[str, ...]]:
    """The bytes of `gaps` outside every valid record the index has (all but ROLLBACK-typed, §5.4),
    and the topics of those indexed records."""
    if not gaps:
        return (), ()
    indexed: list[Gap] = []
    topics: set[str] = set()
    columns = ["commitLogOffset", "storeSize", "sysFlag", "topic"]
    for batch in cov.records.scan_ranges(gaps, columns, mode=PERMISSIVE, decompress=False):
        rows = batch.to_pydict()
        for offset, size, flag, topic in zip(rows["commitLogOffset"], rows["storeSize"], rows["sysFlag"],
                                             rows["topic"], strict=True):
            if flag & SYSFLAG_TRANSACTION_MASK != TRANSACTION_ROLLBACK:
                indexed.append((offset, offset + size))
                topics.add(topic)
    return subtract_ranges(gaps, merge_ranges(indexed)), tuple(sorted(topics))


def _blank_at(cov: Coverage, seg: Segment, pos: int) -> bool:
    """A BLANK (§2.6) filling the segment from `pos`, or a DLedger blank (§2.13)."""
    if cov.log.lead:
        return cov.log.check_at(seg, pos + cov.log.lead, check_crc=False).kind == "blank"
    if pos + BLANK_HEADER_SIZE > seg.size:
        return False
    head = cov.log.read_at(seg, pos, BLANK_HEADER_SIZE)
    total, magic = struct.unpack(">iI", head.tobytes())
    return magic == BLANK_MAGIC and total == seg.size - pos
