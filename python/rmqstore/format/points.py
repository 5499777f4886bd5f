"""Records at given positions of one buffer: check and decode many positions at once (spec §2, §2.12).

One interface, `PointReader`, two implementations chosen by `point_reader`:
- "compiled" (the default): every position is checked in one compiled call (`kernels.points.check_starts`)
  and the records are decoded by `columnar.decode_records`, at the speed per record of a scan.
- "reference": the scalar checker and decoder of `record.py`, record by record. It is the oracle the
  compiled reader is tested against (the same tests run over both).
Both give the same verdicts, rows and errors; reasons for an error always come from
`record.check_record` (`problem_at`). Without numba (`rmqstore.speedups`) the reference one is the default.

Valid records that lie far apart or are few (`worth_gathering`) are first copied back to back into one
buffer (`PointReader.gather`, several buffers into one): the decoder then reads them sequentially like
a scan, and the records of several buffers (segments) are decoded in one call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import pyarrow as pa

from rmqstore.format import reference
from rmqstore.format.columnar import as_byte_array, decode_records
from rmqstore.format.record import check_record
from rmqstore.speedups import NUMBA

if NUMBA:  # else every reader is the reference one
    from rmqstore.format.kernels import crc, recordscan
    from rmqstore.format.kernels import points as point_kernels

ReaderKind = Literal["compiled", "reference"]


@dataclass(frozen=True)
class PointCheck:
    """Verdicts of `PointReader.check`, one per position.

    `ok`: a valid record starts there (`check_record` with expected_physical_offset). `sizes`: the
    TOTALSIZE field there, -1 when at most 4 bytes are left (a record cut by the buffer's end has
    ok False and a size reaching past the buffer).
    """

    ok: np.ndarray
    sizes: np.ndarray


@dataclass(frozen=True)
class PointRecords:
    """Valid records of one buffer: their `positions` in `buf`, `sizes` (TOTALSIZE) and `physical`
    commit-log offsets, in the order they are decoded."""

    buf: Any
    positions: np.ndarray
    sizes: np.ndarray
    physical: np.ndarray

    def __len__(self) -> int:
        return len(self.positions)

    def part(self, start: int, stop: int) -> PointRecords:
        """Records start to stop (exclusive), same buffer."""
        return PointRecords(self.buf, self.positions[start:stop], self.sizes[start:stop],
                            self.physical[start:stop])


SPARSE_FILL = 0.25
"""Records filling less than this share of the bytes they span are sparse (measured: every 2nd
record of a log decodes faster in place, every 10th faster copied together first)."""
FEW_RECORDS = 2048
"""Fewer records than this are copied together whatever their density: copying them costs less than
a decode call of their own (about 0.3 ms of fixed cost for all columns)."""


def worth_gathering(records: PointRecords) -> bool:
    """Copy these records together before decoding (`PointReader.gather`): they are few (their copy
    costs less than a decode call, and joins them with other records into one), or sparse (they fill
    less than `SPARSE_FILL` of the span from the first start to the end of the last)."""
    if len(records) < FEW_RECORDS:
        return True
    span = int(records.positions[-1] + records.sizes[-1] - records.positions[0])
    return int(records.sizes.sum()) < SPARSE_FILL * span


class PointReader(Protocol):
    """Checks and decodes the records at positions of a buffer; `physical[i]` is the commit-log
    offset of position i (the record's PHYSICALOFFSET must equal it)."""

    kind: ReaderKind

    def check(self, buf: Any, positions: np.ndarray, physical: np.ndarray, *,
              check_crc: bool) -> PointCheck: ...

    def decode(self, buf: Any, positions: np.ndarray, physical: np.ndarray, columns: list[str], *,
               decompress: bool, max_body_size: int, decompress_threads: int | None = None) -> pa.RecordBatch:
        """`columnar.decode_records` of valid records (same columns, errors and BodyDecompressionError)."""
        ...

    def gather(self, parts: Sequence[PointRecords]) -> PointRecords:
        """The records of all parts, in order, copied back to back into one new buffer."""
        ...


def problem_at(buf: Any, pos: int, physical: int, *, check_crc: bool) -> str:
    """Why no valid record starts at pos (for error messages; the position failed `check`)."""
    verdict = check_record(buf, pos, check_crc=check_crc, expected_physical_offset=physical)
    return verdict.reason or "BLANK record"


class CompiledPointReader:
    """Checks all positions in one compiled call, decodes them with the columnar decoder."""

    kind: ReaderKind = "compiled"

    def check(self, buf: Any, positions: np.ndarray, physical: np.ndarray, *, check_crc: bool) -> PointCheck:
        positions, physical = (np.ascontiguousarray(a, dtype=np.int64) for a in (positions, physical))
        kinds, sizes = point_kernels.check_starts(as_byte_array(buf), positions, physical, check_crc,
                                             crc.NATIVE_CRC32)
        return PointCheck(kinds == recordscan.RECORD, sizes)

    def decode(self, buf: Any, positions: np.ndarray, physical: np.ndarray, columns: list[str], *,
               decompress: bool, max_body_size: int, decompress_threads: int | None = None) -> pa.RecordBatch:
        return decode_records(buf, positions, physical, columns, decompress=decompress,
                              max_body_size=max_body_size, decompress_threads=decompress_threads)

    def gather(self, parts: Sequence[PointRecords]) -> PointRecords:
        """One `kernels.points.gather` call per part into one buffer."""
        if not parts:
            return _no_records()
        sizes = np.concatenate([p.sizes for p in parts]).astype(np.int64, copy=False)
        positions = np.cumsum(sizes) - sizes
        out = np.empty(int(sizes.sum()), dtype=np.uint8)
        at = 0
        for p in parts:
            at = point_kernels.gather(as_byte_array(p.buf), np.ascontiguousarray(p.positions, dtype=np.int64),
                                np.ascontiguousarray(p.sizes, dtype=np.int64), out, at)
        return PointRecords(out, positions, sizes, np.concatenate([p.physical for p in parts]))


class ReferencePointReader:
    """`record.check_record` and `record.decode_record` per position: the oracle."""

    kind: ReaderKind = "reference"

    def check(self, buf: Any, positions: np.ndarray, physical: np.ndarray, *, check_crc: bool) -> PointCheck:
        ok, sizes = [], []
        for pos, offset in zip(positions.tolist(), physical.tolist(), strict=True):
            verdict = check_record(buf, pos, check_crc=check_crc, expected_physical_offset=offset)
            ok.append(verdict.kind == "record")
            sizes.append(int.from_bytes(bytes(buf[pos:pos + 4]), "big", signed=True)
                         if pos >= 0 and len(buf) - pos > 4 else -1)
        return PointCheck(np.array(ok, dtype=bool), np.array(sizes, dtype=np.int64))

    def decode(self, buf: Any, positions: np.ndarray, physical: np.ndarray, columns: list[str], *,
               decompress: bool, max_body_size: int, decompress_threads: int | None = None) -> pa.RecordBatch:
        """`reference.decode`: one record at a time on the calling thread (`decompress_threads` is not
        used)."""
        return reference.decode(buf, positions, physical, columns, decompress=decompress,
                                max_body_size=max_body_size)

    def gather(self, parts: Sequence[PointRecords]) -> PointRecords:
        """Slices of each buffer joined as bytes."""
        if not parts:
            return _no_records()
        chunks = [bytes(p.buf[pos:pos + size]) for p in parts
                  for pos, size in zip(p.positions.tolist(), p.sizes.tolist(), strict=True)]
        sizes = np.array([len(c) for c in chunks], dtype=np.int64)
        return PointRecords(np.frombuffer(b"".join(chunks), dtype=np.uint8), np.cumsum(sizes) - sizes, sizes,
                            np.concatenate([p.physical for p in parts]))


def _no_records() -> PointRecords:
    empty = np.zeros(0, dtype=np.int64)
    return PointRecords(np.zeros(0, dtype=np.uint8), empty, empty, empty)


def point_reader(kind: ReaderKind | None = None) -> PointReader:
    """The point reader of that kind (see the module docstring); by default the compiled one, or the
    reference one when numba is missing (`rmqstore.speedups`)."""
    kind = kind or ("compiled" if NUMBA else "reference")
    if kind == "compiled":
        return CompiledPointReader()
    if kind == "reference":
        return ReferencePointReader()
    raise ValueError(f"unknown point reader {kind!r}: 'compiled' or 'reference'")
