"""Commit-log segments written the way `CommitLog.doAppend` fills them (spec §2.1, §2.6).

Segments are pre-sized files named by their 20-digit start offset. A block (one record, or all
records of a batch) is written only if its length + 8 fits in the bytes left in the segment;
otherwise an 8-byte BLANK (rest-of-segment length, BLANK magic) closes the segment and the block
goes to offset 0 of the next one. Writes are buffered per segment.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rmqstore.format.layout import END_FILE_MIN_BLANK_LENGTH
from rmqstore.format.record import encode_blank
from rmqstore.writer.files import offset_file_name

_FLUSH_BYTES = 8 << 20

BlockEncoder = Callable[[int], list[bytes]]
"""Encodes a block's records for a given start physical offset (records embed their offset)."""


class CommitLogWriter:
    """Appends blocks of records to `directory`, rolling segments of `segment_size` bytes."""

    def __init__(self, directory: Path, segment_size: int) -> None:
        if segment_size <= END_FILE_MIN_BLANK_LENGTH:
            raise ValueError(f"segment size {segment_size} is too small")
        self.directory = directory
        self.segment_size = segment_size
        directory.mkdir(parents=True, exist_ok=True)
        self._segment_start = 0
        self._written = 0
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._file = self._open_segment(0)

    @property
    def position(self) -> int:
        """Physical offset where the next block would start (the end of the log so far)."""
        return self._segment_start + self._written + self._pending_bytes

    def append(self, encode: BlockEncoder) -> tuple[int, list[bytes]]:
        """Write the block `encode(offset)` at the end of the log; returns (offset, its records)."""
        start = self.position
        records = encode(start)
        length = sum(len(r) for r in records)
        if length + END_FILE_MIN_BLANK_LENGTH > self.segment_size:
            raise ValueError(
                f"a block of {length} bytes (+{END_FILE_MIN_BLANK_LENGTH} for the BLANK) "
                f"does not fit a segment of {self.segment_size} bytes"
            )
        if length + END_FILE_MIN_BLANK_LENGTH > self._space_left():
            self._roll()
            start = self.position
            records = encode(start)
        for record in records:
            self._buffer(record)
        return start, records

    def read(self, offset: int, size: int) -> bytes:
        """The `size` bytes written at physical offset `offset` (what `lookMessageByOffset` reads)."""
        if offset < 0 or offset + size > self.position:
            raise ValueError(f"no {size} bytes at commit-log offset {offset}: the log ends at "
                             f"{self.position}")
        if offset + size > self._segment_start + self._written:
            self._flush()
        self._file.flush()
        start = offset - offset % self.segment_size
        with open(self.directory / offset_file_name(start), "rb") as segment:
            segment.seek(offset - start)
            return segment.read(size)

    def write_torn(self, data: bytes) -> int:
        """Write `data` after the last block without making it part of the log (a torn tail).

        Returns the number of bytes written (clipped to what the segment can hold).
        """
        piece = data[: self._space_left()]
        self._buffer(piece)
        return len(piece)

    def close(self, *, preallocate_next: bool) -> None:
        """Flush the current segment; optionally add the all-zero pre-allocated next segment (§1.2)."""
        self._flush()
        self._file.close()
        if preallocate_next:
            self._open_segment(self._segment_start + self.segment_size).close()

    def _space_left(self) -> int:
        return self.segment_size - self._written - self._pending_bytes

    def _roll(self) -> None:
        self._buffer(encode_blank(self._space_left()))
        self._flush()
        self._file.close()
        self._segment_start += self.segment_size
        self._written = 0
        self._file = self._open_segment(self._segment_start)

    def _open_segment(self, start: int):
        handle = open(self.directory / offset_file_name(start), "wb")  # noqa: SIM115 (kept open per segment)
        handle.truncate(self.segment_size)
        return handle

    def _buffer(self, data: bytes) -> None:
        self._pending.append(data)
        self._pending_bytes += len(data)
        if self._pending_bytes >= _FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        self._file.write(b"".join(self._pending))
        self._written += self._pending_bytes
        self._pending = []
        self._pending_bytes = 0
