"""Counters of the work a Store did, so tests (and users) can see what a pushdown really read."""

from __future__ import annotations

from dataclasses import dataclass, field

from rmqstore.io.base import IOStats


@dataclass(frozen=True)
class Skipped:
    """One damaged place a PERMISSIVE read stepped over: `length` bytes of `path` from the physical
    `offset` (where the invalid record starts) to where reading resumed."""

    path: str
    offset: int
    length: int
    cause: str

    def __str__(self) -> str:
        return f"{self.path}: at physical offset {self.offset}: {self.cause}; {self.length} bytes skipped"


@dataclass
class StoreStats(IOStats):
    """`IOStats` (bytes read, read calls, files opened, paths read) plus store-level counters."""

    records_decoded: int = 0
    """Records turned into rows (scans, offset reads, lookup confirmations)."""
    records_walked: int = 0
    """Record headers stepped over by scans and walks (decoded or not)."""
    invalid_records_skipped: int = 0
    """Damaged places skipped in PERMISSIVE mode, each counted once: an invalid record where a walk
    stopped (reading resumes at the next valid record start), a record whose body cannot be
    decompressed, or an offset asked for that holds no valid record (`read_offsets`)."""
    bytes_skipped: int = 0
    """Bytes of log skipped at those places: from the invalid record to where reading resumed; the
    record's size for a body that cannot be decompressed; 0 for an offset that holds no record."""
    skipped: dict[tuple[str, int], Skipped] = field(default_factory=dict)
    """Each damaged place by (file, physical offset), in the order found."""
    segments_touched: set[int] = field(default_factory=set)
    """Base offsets of the commit-log segments read from."""
    index_files_probed: int = 0

    def skip(self, path: str, offset: int, length: int, cause: str) -> None:
        """Count a damaged place once (several reads of one store may meet it)."""
        if (path, offset) in self.skipped:
            return
        self.skipped[(path, offset)] = Skipped(path, offset, length, cause)
        self.invalid_records_skipped += 1
        self.bytes_skipped += length

    def skip_summary(self) -> str | None:
        """One line for stderr naming the counts and the first damaged place; None when none."""
        if not self.skipped:
            return None
        first = next(iter(self.skipped.values()))
        return (f"rmqstore: PERMISSIVE skipped {self.invalid_records_skipped} damaged record(s), "
                f"{self.bytes_skipped} bytes; first at {first.path} physical offset {first.offset}: "
                f"{first.cause}")
