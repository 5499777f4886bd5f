"""Records at given positions of one buffer: check and decode many positions at once (spec §2, §2.12).

One interface, `PointReader`, two implementations chosen by `point_reader`:
- "compiled" (the default): every position is checked in one compiled call (`kernels.check_starts`)
  and the records are decoded by `columnar.decode_records`, at the speed per record of a scan.
- "reference": the scalar checker and decoder of `record.py`, record by record. It is the oracle the
  compiled reader is tested against (the same tests run over both).
Both give the same verdicts, rows and errors; reasons for an error always come from
`record.check_record` (`problem_at`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import pyarrow as pa

from rmqstore.format import kernels
from rmqstore.format.columnar import as_byte_array, decode_records
from rmqstore.format.compression import BodyDecompressionError
from rmqstore.format.record import check_record, decode_record
from rmqstore.format.table import TIMESTAMP, arrow_schema

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


def problem_at(buf: Any, pos: int, physical: int, *, check_crc: bool) -> str:
    """Why no valid record starts at pos (for error messages; the position failed `check`)."""
    verdict = check_record(buf, pos, check_crc=check_crc, expected_physical_offset=physical)
    return verdict.reason or "BLANK record"


class CompiledPointReader:
    """Checks all positions in one compiled call, decodes them with the columnar decoder."""

    kind: ReaderKind = "compiled"

    def check(self, buf: Any, positions: np.ndarray, physical: np.ndarray, *, check_crc: bool) -> PointCheck:
        positions, physical = (np.ascontiguousarray(a, dtype=np.int64) for a in (positions, physical))
        kinds, sizes = kernels.check_starts(as_byte_array(buf), positions, physical, check_crc)
        return PointCheck(kinds == kernels.RECORD, sizes)

    def decode(self, buf: Any, positions: np.ndarray, physical: np.ndarray, columns: list[str], *,
               decompress: bool, max_body_size: int, decompress_threads: int | None = None) -> pa.RecordBatch:
        return decode_records(buf, positions, physical, columns, decompress=decompress,
                              max_body_size=max_body_size, decompress_threads=decompress_threads)


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
        """One record at a time on the calling thread (`decompress_threads` is not used)."""
        schema = arrow_schema(columns)
        rows = []
        for row, (pos, offset) in enumerate(zip(positions.tolist(), physical.tolist(), strict=True)):
            try:
                record = decode_record(buf, pos, decompress=decompress, max_body_size=max_body_size)
            except BodyDecompressionError as exc:
                message = f"record at physical offset {offset}: {exc.cause}"
                raise BodyDecompressionError(exc.cause, position=pos, row=row, message=message) from None
            rows.append(record.to_row())
        arrays = []
        for field in schema:
            values = [r[field.name] for r in rows]
            if field.type == TIMESTAMP:
                values = [v * 1000 for v in values]  # ms -> µs
            elif field.name == "properties":
                values = [list(v.items()) for v in values]
            arrays.append(pa.array(values, type=field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def point_reader(kind: ReaderKind = "compiled") -> PointReader:
    """The point reader of that kind (see the module docstring)."""
    if kind == "compiled":
        return CompiledPointReader()
    if kind == "reference":
        return ReferencePointReader()
    raise ValueError(f"unknown point reader {kind!r}: 'compiled' or 'reference'")
