"""Which commit-log bytes hold records that no consume-queue unit points to (design §3, spec §4.1).

A consume queue only gets units for transaction type NOT / COMMIT records (§4.1): PREPARED and
ROLLBACK records, records not dispatched yet (consume queues lag behind the log after a crash) and
records of a topic whose `consumequeue/<topic>` is gone are in no queue. A plan that reads queues
must scan such bytes too, or pushdown would return fewer rows than a scan.

Rule, per segment: records are contiguous from the segment's first byte up to the valid end (the
segment holding it) or a BLANK (a sealed segment, §2.6), and every unit points at a whole record.
So the records without a unit are exactly the holes between the units pointing into the segment (all
queues, only units inside [min_offset, max_offset)), before the first one and after the last one
(unless a BLANK starts there). The holes are the "gaps" a plan scans: a few PREPARED records cost a
few records' worth of scanning, queues behind the log cost the tail they lag. Units that overlap or
point past the records leave the whole segment uncovered.

Index lookups need less: the index has every record of a gap but ROLLBACK-typed ones (§5.4; the
broker dispatches each record to the consume queues and the index in log order, so a gap record
before the index's end that is in no queue is still indexed unless it is a ROLLBACK). A verdict also
keeps these `unindexed` parts of its gaps - ROLLBACK records and bytes that hold no valid record -
which are all a key plan must scan (records after the index's end are the lookup's own tail scan).

Reading every queue costs a few % of the log's bytes, so verdicts are cached on disk outside the
store, in `coverage/<sha256 of the store location>.json` under `rmqstore.cachedir.cache_root()`,
keyed by segment name, size, mtime and (for the segment holding the valid end)
where its records end, plus the set of queues (see `_DiskCache`); segments decided again only need
the tails of the queues (units are in log order along a queue). Remote stores are not cached on
disk (no mtime).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rmqstore.cachedir import cache_root
from rmqstore.format.consumequeue import CQ_UNIT_SIZE
from rmqstore.format.layout import BLANK_MAGIC, SYSFLAG_TRANSACTION_MASK, TRANSACTION_ROLLBACK
from rmqstore.io.local import LocalFileSystem
from rmqstore.store.consumequeue import ConsumeQueue
from rmqstore.store.errors import PERMISSIVE
from rmqstore.store.segments import Segment

if TYPE_CHECKING:
    from rmqstore.store.store import Store

log = logging.getLogger("rmqstore.store")

CACHE_VERSION = 3
BLANK_HEADER_SIZE = 8
"""TOTALSIZE and MAGICCODE of a BLANK record (§2.6)."""


Gap = tuple[int, int]
"""Commit-log byte range [start, end) whose records no consume-queue unit points to."""


@dataclass(frozen=True)
class SegmentVerdict:
    """The uncovered byte ranges of one segment, in log order (none: every record has a unit), and
    the parts of them an index lookup cannot find (ROLLBACK records, bytes holding no valid record)."""

    segment: Segment
    gaps: tuple[Gap, ...]
    unindexed: tuple[Gap, ...]


def cache_dir() -> str:
    """Where coverage verdicts are cached (never inside a store)."""
    return str(cache_root() / "coverage")


def uncovered_ranges(store: Store) -> list[Gap]:
    """Commit-log byte ranges [start, end) holding the records no consume queue points to."""
    return [gap for verdict in segment_verdicts(store) for gap in verdict.gaps]


def unindexed_ranges(store: Store) -> list[Gap]:
    """The parts of `uncovered_ranges` an index lookup cannot find (module docstring)."""
    return [gap for verdict in segment_verdicts(store) for gap in verdict.unindexed]


def segment_verdicts(store: Store) -> list[SegmentVerdict]:
    """A verdict for every segment holding records (base offset below the valid end), in log order."""
    live = [s for s in store.segments if s.base_offset < store.max_offset]
    if not live:
        return []
    queues = [store.consume_queue(t, q) for t in store.topics() for q in store.queue_ids(t)]
    cache = _DiskCache.for_store(store, queues)
    known = cache.load(store, live) if cache else {}
    fresh = _compute(store, [s for s in live if s.base_offset not in known], queues)
    if cache and fresh:
        cache.save(store, [*known.values(), *fresh])
    verdicts = {**known, **{v.segment.base_offset: v for v in fresh}}
    return [verdicts[s.base_offset] for s in live]


def _compute(store: Store, segments: Sequence[Segment],
             queues: Sequence[ConsumeQueue]) -> list[SegmentVerdict]:
    """Verdicts for `segments` from the units of every queue (module docstring)."""
    if not segments:
        return []
    first = segments[0].base_offset
    phy_parts, size_parts = [], []
    for queue in queues:
        units = _units_from(queue, first)
        phy_parts.append(units["phy"])
        size_parts.append(units["size"].astype(np.int64))
    phy = np.concatenate(phy_parts) if phy_parts else np.empty(0, dtype=np.int64)
    size = np.concatenate(size_parts) if size_parts else np.empty(0, dtype=np.int64)
    order = np.argsort(phy, kind="stable")
    phy, size = phy[order], size[order]
    bounds = np.searchsorted(phy, [s.base_offset for s in segments] + [segments[-1].end_offset])
    verdicts = []
    for seg, lo, hi in zip(segments, bounds[:-1], bounds[1:], strict=True):
        gaps = _gaps(store, seg, phy[lo:hi] - seg.base_offset, size[lo:hi])
        verdicts.append(SegmentVerdict(seg, gaps, _unindexed(store, gaps)))
    return verdicts


def _units_from(queue: ConsumeQueue, first_phy: int) -> np.ndarray:
    """The queue's units pointing at or after `first_phy`: its last files, read backwards.

    Units follow log order along a queue, so the files before the first one holding a unit below
    `first_phy` point below it too (a queue out of order would lose units here, which only makes a
    segment uncovered: scanned, never missed).
    """
    parts = []
    for seg in reversed(queue.segments):
        units = queue.units(seg.base_offset // CQ_UNIT_SIZE, seg.end_offset // CQ_UNIT_SIZE)
        parts.append(units)
        if len(units) and units["phy"][0] < first_phy:
            break
    parts.reverse()
    return np.concatenate(parts) if parts else queue.units(0, 0)


def _gaps(store: Store, seg: Segment, starts: np.ndarray, sizes: np.ndarray) -> tuple[Gap, ...]:
    """The byte ranges of `seg` no unit covers, from its units' positions (sorted) and sizes.

    Records are contiguous from position 0 up to the valid end (the segment holding it) or a BLANK
    (a sealed segment), so the records without a unit are exactly the holes between the units, before
    the first and after the last one. Units that overlap or point past the records are not what the
    broker writes: then the whole segment counts as uncovered.
    """
    holding_end = seg.contains(store.max_offset)
    records_end = store.max_offset - seg.base_offset if holding_end else seg.size
    keep = np.ones(len(starts), dtype=bool)  # a record in several queues counts once
    keep[1:] = (starts[1:] != starts[:-1]) | (sizes[1:] != sizes[:-1])
    starts, sizes = starts[keep], sizes[keep]
    ends = starts + sizes
    if len(starts) and (np.any(starts[1:] < ends[:-1]) or ends[-1] > records_end):
        return ((seg.base_offset, seg.base_offset + records_end),)
    holes_from = np.concatenate(([0], ends))
    holes_to = np.concatenate((starts, [records_end]))
    if not holding_end and _blank_at(store, seg, int(holes_from[-1])):
        holes_to[-1] = holes_from[-1]  # the BLANK ends the records of a sealed segment
    open_holes = holes_from < holes_to
    return tuple((seg.base_offset + int(a), seg.base_offset + int(b))
                 for a, b in zip(holes_from[open_holes], holes_to[open_holes], strict=True))


def _unindexed(store: Store, gaps: tuple[Gap, ...]) -> tuple[Gap, ...]:
    """The bytes of `gaps` outside every valid record the index has (all but ROLLBACK-typed, §5.4)."""
    if not gaps:
        return ()
    indexed: list[Gap] = []
    for batch in store.scan_ranges(gaps, ["commitLogOffset", "storeSize", "sysFlag"], mode=PERMISSIVE):
        rows = batch.to_pydict()
        indexed += [(offset, offset + size) for offset, size, flag in
                    zip(rows["commitLogOffset"], rows["storeSize"], rows["sysFlag"], strict=True)
                    if flag & SYSFLAG_TRANSACTION_MASK != TRANSACTION_ROLLBACK]
    return _subtract(gaps, sorted(indexed))


def _subtract(ranges: Sequence[Gap], holes: Sequence[Gap]) -> tuple[Gap, ...]:
    """`ranges` (sorted, disjoint) without `holes` (sorted, disjoint, each inside one range)."""
    out: list[Gap] = []
    i = 0
    for start, end in ranges:
        while i < len(holes) and holes[i][1] <= start:
            i += 1
        while i < len(holes) and holes[i][0] < end:
            if holes[i][0] > start:
                out.append((start, holes[i][0]))
            start = max(start, holes[i][1])
            i += 1
        if start < end:
            out.append((start, end))
    return tuple(out)


def _blank_at(store: Store, seg: Segment, pos: int) -> bool:
    """A BLANK (§2.6) filling the segment from `pos`."""
    if pos + BLANK_HEADER_SIZE > seg.size:
        return False
    head = store.log.read(seg, pos, BLANK_HEADER_SIZE)
    total, magic = struct.unpack(">iI", head.tobytes())
    return magic == BLANK_MAGIC and total == seg.size - pos


class _DiskCache:
    """Verdicts of one local store, in one JSON file outside it.

    An entry is reused while its segment has the same size and mtime and (for the segment holding
    the valid end) the same records' end, and the same queues exist. While those hold, queues can
    only gain units (catching up with the log), so a cached gap may since have been filled: it is
    scanned for nothing, never a record missed.
    """

    def __init__(self, path: str, queues_digest: str) -> None:
        self.path = path
        self.queues_digest = queues_digest

    @classmethod
    def for_store(cls, store: Store, queues: Sequence[ConsumeQueue]) -> _DiskCache | None:
        if not isinstance(store.fs, LocalFileSystem):
            return None
        dirs = [os.path.realpath(d) for d in store.commitlog_dirs]
        identity = json.dumps([os.path.realpath(store.path), dirs])
        name = hashlib.sha256(identity.encode()).hexdigest() + ".json"
        queue_names = sorted(f"{q.topic}/{q.queue_id}" for q in queues)
        digest = hashlib.sha256(json.dumps(queue_names).encode()).hexdigest()
        return cls(os.path.join(cache_dir(), name), digest)

    def load(self, store: Store, live: Sequence[Segment]) -> dict[int, SegmentVerdict]:
        """Cached verdicts still valid for these segments (see the class docstring)."""
        try:
            with open(self.path) as fh:
                doc = json.load(fh)
        except (OSError, ValueError):
            return {}
        if doc.get("version") != CACHE_VERSION or doc.get("queues") != self.queues_digest:
            return {}
        entries = doc.get("segments", {})
        known = {}
        for seg in live:
            entry = entries.get(os.path.basename(seg.path))
            if entry and entry[:3] == _segment_key(store, seg):
                known[seg.base_offset] = SegmentVerdict(seg, tuple((a, b) for a, b in entry[3]),
                                                        tuple((a, b) for a, b in entry[4]))
        return known

    def save(self, store: Store, verdicts: Sequence[SegmentVerdict]) -> None:
        """Write the verdicts (atomic rename); a cache that cannot be written is only logged."""
        entries = {os.path.basename(v.segment.path): [*_segment_key(store, v.segment), v.gaps, v.unindexed]
                   for v in verdicts}
        doc = {"version": CACHE_VERSION, "queues": self.queues_digest, "segments": entries}
        directory = os.path.dirname(self.path)
        try:
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
            try:
                with os.fdopen(fd, "w") as fh:
                    json.dump(doc, fh)
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as exc:
            log.debug("coverage cache %s not written: %s", self.path, exc)


def _segment_key(store: Store, seg: Segment) -> list[int | None]:
    """Size, mtime and, for the segment holding the valid end, where its records end."""
    records_end = store.max_offset - seg.base_offset if seg.contains(store.max_offset) else None
    return [seg.size, os.stat(seg.path).st_mtime_ns, records_end]
