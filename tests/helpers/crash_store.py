"""A crash copy RocketMQ's abnormal recovery cuts short (docs/format.md §6.3), written by the project's
`StoreWriter`: a store copied while the broker ran (`abort`, torn tail), one 4 KiB page inside a record
never written, three whole records after that record. Recovery ends the log at the damaged record; the
newest index file and the consume queues still point at the three records after it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rmqstore.writer import MessageSpec, StoreWriter
from rmqstore.writer.message import AppendResult

SEGMENT = 1 << 16
PAGE = 4096
RECORDS = 12


@dataclass(frozen=True)
class LostPage:
    root: str
    kept: list[AppendResult]
    """The records before the damaged one: every row a reader returns."""
    damaged: AppendResult
    after: list[AppendResult]
    """The three whole records after the damaged one: no reader returns them."""
    page: int
    """Physical offset of the zeroed page."""


def lost_page_crash_copy(path: Path) -> LostPage:
    """The store above under `path` (two 64 KiB segments plus the pre-allocated one, 9 KiB records with
    one key `k<i>` each, alternately of topics T and U, two queues each)."""
    writer = StoreWriter(path, segment_size=SEGMENT, cq_segment_size=8 * 20, index_hash_slots=16,
                         index_entries=64)
    written = [writer.append(MessageSpec("TU"[i % 2], bytes([65 + i]) * 9000, keys=f"k{i}",
                                         queue_id=i // 2 % 2)) for i in range(RECORDS)]
    writer.close(crashed=True)
    damaged = written[-4]
    page = (damaged.physical_offset // PAGE + 1) * PAGE
    assert page + PAGE <= damaged.physical_offset + damaged.store_size
    base = page - page % SEGMENT
    with open(path / "commitlog" / f"{base:020d}", "r+b") as fh:
        fh.seek(page - base)
        fh.write(bytes(PAGE))
    return LostPage(str(path), written[:-4], damaged, written[-3:], page)
