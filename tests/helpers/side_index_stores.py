"""Stores whose index lacks records (ROLLBACK-heavy, index file deleted, index lagging) and a counter
of the bytes read per store file, for the side-index tests and benchmark."""

from __future__ import annotations

import random
import shutil
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from rmqstore.format.layout import TRANSACTION_ROLLBACK
from rmqstore.io.local import LocalFile
from rmqstore.store import Store
from rmqstore.writer import MessageSpec, StoreWriter

TOPICS = ("Orders", "Payments")
Rows = list[tuple[int, list[str] | None, str | None]]
"""(commitLogOffset, keys, uniqKey) of records."""


def write_keyed_store(path: Path, records: int, *, rollback_every: int = 30, segment_size: int = 512 << 10,
                      index_entries: int = 3_000, body_bytes: tuple[int, int] = (300, 900),
                      seed: int = 7) -> None:
    """`records` messages with KEYS "k<i> g<i % 50>" and UNIQ_KEY "u<i>"; every `rollback_every`-th
    (from the 7th) is a raw ROLLBACK record, so its k / u keys are only on ROLLBACK records. The
    index has room for `index_entries` - 1 entries per file (3 per record): several files. Writing the
    same arguments with fewer records gives the same first records, byte for byte."""
    rng = random.Random(seed)
    with StoreWriter(path, segment_size=segment_size, cq_segment_size=600 * 20, index_hash_slots=1024,
                     index_entries=index_entries, seed=seed) as writer:
        for topic in TOPICS:
            writer.declare_topic(topic, 2)
        for i in range(records):
            rollback = rollback_every and i % rollback_every == 7
            writer.append(MessageSpec(topic=TOPICS[i % 2], body=bytes(rng.randint(*body_bytes)),
                                      keys=f"k{i} g{i % 50}", uniq_key=f"u{i}",
                                      transaction=TRANSACTION_ROLLBACK if rollback else 0))
            writer.advance_clock(7)


def copy_store(source: Path, target: Path) -> Path:
    """A copy to change (fixtures are never changed in place); file times are kept."""
    shutil.copytree(source, target)
    return target


def delete_index_file(store: Path, number: int) -> Path:
    """Delete the `number`-th index file (oldest 0, newest -1), as abnormal recovery does (§5.7)."""
    victim = sorted((store / "index").iterdir())[number]
    victim.unlink()
    return victim


def scanned_rows(store: Path) -> Rows:
    """Every record, from a full scan."""
    with Store.open(store) as s:
        return [row for batch in s.scan(columns=["commitLogOffset", "keys", "uniqKey"])
                for row in zip(*(batch.column(i).to_pylist() for i in range(3)), strict=True)]


def expected_offsets(rows: Rows, column: str, value: str) -> list[int]:
    """What a full scan filtered returns: offsets of the records whose `keys` hold / `uniqKey` is value."""
    if column == "keys":
        return [offset for offset, keys, _ in rows if value in (keys or ())]
    return [offset for offset, _, uniq_key in rows if uniq_key == value]


@contextmanager
def bytes_read_per_file() -> Iterator[Counter[str]]:
    """Counts the bytes every local store file hands out (views of a map count whole), per path."""
    counted: Counter[str] = Counter()
    read, read_ranges = LocalFile.read, LocalFile.read_ranges

    def counting_read(self: LocalFile, offset: int, length: int) -> np.ndarray:
        out = read(self, offset, length)
        counted[self.path] += len(out)
        return out

    def counting_read_ranges(self: LocalFile, offsets: Sequence[int], lengths: Sequence[int]) -> np.ndarray:
        out = read_ranges(self, offsets, lengths)
        counted[self.path] += len(out)
        return out

    LocalFile.read, LocalFile.read_ranges = counting_read, counting_read_ranges  # type: ignore[method-assign]
    try:
        yield counted
    finally:
        LocalFile.read, LocalFile.read_ranges = read, read_ranges  # type: ignore[method-assign]


def log_bytes(counted: Counter[str]) -> int:
    return sum(n for path, n in counted.items() if "/commitlog/" in path)


def log_size(store: Path) -> int:
    with Store.open(store) as s:
        return s.max_offset - s.min_offset
