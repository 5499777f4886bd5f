"""Where the walk for the valid end of a remote commit log may resume (design §4, spec §2.12).

The valid end is found by walking the segment holding it from its first record (`CommitLog.end`). For
a remote store that downloads the whole active segment on every open: every plan, every trigger of a
stream. The broker only appends to that segment and never rewrites records before its valid end, so
where a walk ended can be remembered (on disk outside the store, `rmqstore.store.segment_cache`, one
kind per BODYCRC setting) with the start and first header bytes of the last record before it: while
the segment has the same size and that record is still there (same header bytes, one small read),
the next walk resumes at the remembered end and reads only what was written since. Another store
uploaded to the same place has other records there, so it is walked from its start. Local stores
are not cached: their walk reads a memory map.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rmqstore.store.segment_cache import SegmentCache
from rmqstore.store.segments import Segment

if TYPE_CHECKING:
    from rmqstore.store.commitlog import CommitLog
    from rmqstore.store.store import Store

CACHE_KIND = "logend"
CACHE_VERSION = 1


class LogEndCache:
    """The remembered end of the walk over the segment that held the valid end of one remote store."""

    def __init__(self, cache: SegmentCache) -> None:
        self._cache = cache

    @classmethod
    def for_store(cls, store: Store, check_crc: bool) -> LogEndCache | None:
        """The cache of a remote store (None for a local one); BODYCRC-checked walks are kept apart."""
        kind = f"{CACHE_KIND}-crc" if check_crc else CACHE_KIND
        cache = SegmentCache.for_store(store, kind, CACHE_VERSION, content_checked=True)
        return None if cache is None or cache.local else cls(cache)

    def resume_at(self, log: CommitLog, seg: Segment) -> int:
        """A record start of `seg` every record before which was walked before (0 when none is known)."""
        entry = self._cache.entries().get(os.path.basename(seg.path))
        if not entry or len(entry) != 4 or entry[0] != seg.size or entry[2] is None:
            return 0
        end, last_start, last_header = entry[1:]
        if not 0 <= last_start < end <= seg.size or log.record_header(seg, last_start) != last_header:
            return 0
        return int(end)

    def remember(self, log: CommitLog, seg: Segment, end: int, last_start: int | None) -> None:
        """The walk over `seg` ended at position `end`; its last record started at `last_start`."""
        header = None if last_start is None else log.record_header(seg, last_start)
        self._cache.save_entries({os.path.basename(seg.path): [seg.size, end, last_start, header]})
