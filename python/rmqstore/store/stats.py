"""Counters of the work a Store did, so tests (and users) can see what a pushdown really read."""

from __future__ import annotations

from dataclasses import dataclass, field

from rmqstore.io.base import IOStats


@dataclass
class StoreStats(IOStats):
    """`IOStats` (bytes read, read calls, files opened, paths read) plus store-level counters."""

    records_decoded: int = 0
    """Records turned into rows (scans, offset reads, lookup confirmations)."""
    records_walked: int = 0
    """Record headers stepped over by scans and walks (decoded or not)."""
    invalid_records_skipped: int = 0
    """Invalid records skipped in PERMISSIVE mode (the rest of their segment is skipped too)."""
    bytes_skipped: int = 0
    """Bytes of log skipped after those invalid records."""
    segments_touched: set[int] = field(default_factory=set)
    """Base offsets of the commit-log segments read from."""
    index_files_probed: int = 0
