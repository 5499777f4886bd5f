"""Where the walk for the valid end of the commit log may resume (design §4.2, spec §2.12).

The valid end is found by walking the segment holding it, with BODYCRC checked, from its first record
or from the last record the broker indexed (`CommitLog.end`): on every open, so on every plan (the log
past the index's end; all of the active segment on a store without index files). The broker only
appends to that segment and never rewrites records before its valid end, so where a walk ended can be
remembered (on disk outside the store, `rmqstore.store.segment_cache`, one kind per BODYCRC setting)
with the start and first header bytes of the last record before it: while the segment has the same
size and that record is still there (same header bytes, one small read), the next walk resumes at the
remembered end (when it is further than the index's) and reads only what was written since. Another
store uploaded to the same place has other records there, so it is walked from its start (or E).
With `abort` the walk is abnormal recovery's (§6.3), which may cross several segments: its entries
(one per segment walked, the newest `KEPT_SEGMENTS`) are kept apart, under their own kind.

A local file is also held to its modification time: an entry is used only while the file's mtime is
the one seen before the walk, and only if that mtime was `RACY_NS` older than the walk (like git's
racily clean index entries: a write in the same timestamp tick as the walk could leave the mtime
unchanged). So a local file written since, in place (a damaged record, another store at the same
path), is walked from its start (or E); appends by a running broker are walked from the remembered end.
"""

from __future__ import annotations

import os
import time
from typing import Protocol

from rmqstore.store.cache_identity import CacheIdentity
from rmqstore.store.contract_store import LOGEND_CACHE_KIND, LOGEND_CACHE_VERSION
from rmqstore.store.segment_cache import SegmentCache
from rmqstore.store.segments import Segment

KEPT_SEGMENTS = 8
"""Entries kept per store, of the newest segments (a recovery walk may cross several, §6.3)."""
RACY_NS = 2_000_000_000
"""A local file's mtime must be this much older than the walk for the walk's end to be remembered."""


class RecordHeaders(Protocol):
    """What tells a remembered record from another: its header bytes (a `CommitLog`)."""

    def record_header(self, seg: Segment, pos: int) -> str: ...


class LogEndCache:
    """The remembered ends of the walks over the newest segments of one store."""

    def __init__(self, cache: SegmentCache) -> None:
        self._cache = cache
        self._seen_mtime: dict[str, int | None] = {}
        """A local segment's mtime before its walk, when old enough to be trusted (else None)."""

    @classmethod
    def for_identity(cls, identity: CacheIdentity, check_crc: bool, *,
                     recovery: bool = False) -> LogEndCache | None:
        """The cache of the store of `identity` (None when there is nowhere to keep it); BODYCRC-checked
        walks are kept apart, and so are `recovery` walks (like abnormal recovery, §6.3: every record of
        a segment before the end they remember was checked, so any such walk may resume there)."""
        kind = f"{LOGEND_CACHE_KIND}-crc" if check_crc else LOGEND_CACHE_KIND
        kind += "-recovery" if recovery else ""
        cache = SegmentCache.for_identity(identity, kind, LOGEND_CACHE_VERSION, content_checked=True)
        return None if cache is None else cls(cache)

    def resume_at(self, log: RecordHeaders, seg: Segment) -> int:
        """A record start of `seg` where an earlier walk for the end stopped (0 when none is known)."""
        mtime = self._local_mtime(seg)
        entry = self._cache.entries().get(os.path.basename(seg.path))
        if not entry or len(entry) != 5 or entry[0] != seg.size or entry[2] is None:
            return 0
        end, last_start, last_header, seen = entry[1:]
        if self._cache.local and (mtime is None or seen != mtime):
            return 0
        if not 0 <= last_start < end <= seg.size or log.record_header(seg, last_start) != last_header:
            return 0
        return int(end)

    def remember(self, log: RecordHeaders, seg: Segment, end: int, last_start: int | None) -> None:
        """The walk over `seg` ended at position `end`; its last record started at `last_start`."""
        mtime = self._seen_mtime.get(seg.path)
        if self._cache.local and mtime is None:
            return  # written too recently to tell a later write from this one
        header = None if last_start is None else log.record_header(seg, last_start)
        entries = self._cache.entries()
        entries[os.path.basename(seg.path)] = [seg.size, end, last_start, header, mtime]
        self._cache.save_entries({name: entries[name] for name in sorted(entries)[-KEPT_SEGMENTS:]})

    def _local_mtime(self, seg: Segment) -> int | None:
        """A local segment's mtime, when `RACY_NS` older than now (kept for `remember`); else None."""
        if not self._cache.local:
            return None
        try:
            mtime = os.stat(seg.path).st_mtime_ns
        except OSError:
            mtime = None
        trusted = mtime if mtime is not None and mtime <= time.time_ns() - RACY_NS else None
        self._seen_mtime[seg.path] = trusted
        return trusted
