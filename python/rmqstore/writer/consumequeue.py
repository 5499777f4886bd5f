"""Consume-queue files built the way `CommitLogDispatcherBuildConsumeQueue` does (spec §4.1-§4.3).

One 20-byte unit per NOT/COMMIT record at byte `queueOffset * 20` of `consumequeue/<topic>/<queueId>/`,
split into pre-sized segments named by their start byte offset.
"""

from __future__ import annotations

from pathlib import Path

from rmqstore.format.consumequeue import CQ_UNIT_SIZE, encode_unit
from rmqstore.writer.files import offset_file_name, write_presized


def cq_segment_bytes(configured: int) -> int:
    """`mappedFileSizeConsumeQueue` as the broker uses it: rounded up to a multiple of 20 (§1.3)."""
    if configured < CQ_UNIT_SIZE:
        raise ValueError(f"consume-queue segment size {configured} is smaller than one unit")
    return -(-configured // CQ_UNIT_SIZE) * CQ_UNIT_SIZE


class ConsumeQueueWriter:
    """Collects the units of every (topic, queueId) and writes them as segment files on `close`."""

    def __init__(self, directory: Path, segment_size: int) -> None:
        self.directory = directory
        self.segment_size = cq_segment_bytes(segment_size)
        self._queues: dict[tuple[str, int], bytearray] = {}

    def add(self, topic: str, queue_id: int, queue_offset: int, phy: int, size: int, tags_code: int) -> None:
        """Put the unit of the record at `queue_offset` (units arrive in queue-offset order)."""
        units = self._queues.setdefault((topic, queue_id), bytearray())
        expected = len(units) // CQ_UNIT_SIZE
        if queue_offset != expected:
            raise ValueError(f"queue {topic}/{queue_id}: unit for offset {queue_offset}, expected {expected}")
        units += encode_unit(phy, size, tags_code)

    def close(self) -> None:
        """Write every queue as segments of `segment_size` bytes (the last one zero-padded)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for (topic, queue_id), units in self._queues.items():
            queue_dir = self.directory / topic / str(queue_id)
            queue_dir.mkdir(parents=True, exist_ok=True)
            view = memoryview(units)
            for start in range(0, max(len(units), 1), self.segment_size):
                write_presized(
                    queue_dir / offset_file_name(start),
                    view[start : start + self.segment_size],
                    self.segment_size,
                )
