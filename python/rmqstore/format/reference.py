"""The scalar reference reader behind the columnar API (§2.2-§2.13): the walk, the decoder and the
boundary search of `columnar.py` and `resync.py`, record by record with `record.py`.

Used when numba cannot be imported (`rmqstore.speedups`): the same records, rows, stops and reasons as
the compiled kernels, at a fraction of their speed, which one note says (`slow_note`). It is also the
oracle the compiled point reader is tested against (`points.ReferencePointReader`).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa

from rmqstore.format.compression import BodyDecompressionError
from rmqstore.format.contract_layout import (
    BLANK_MAGIC,
    DLEDGER_BLANK_MAGIC,
    MAGIC_V1,
    MAGIC_V2,
    MIN_RECORD_SIZE,
    OFF_MAGIC,
)
from rmqstore.format.dledger import entry_problem
from rmqstore.format.record import check_record, decode_record
from rmqstore.format.table import TIMESTAMP, arrow_schema
from rmqstore.notes import note_once

SLOW_NOTE = ("numba cannot be imported: records are read by the pure-Python reference decoder, "
             "tens of times slower; install numba for full speed")
_INT = struct.Struct(">i")
_MAGIC_BYTES = (MAGIC_V1 >> 24, BLANK_MAGIC >> 24)
"""First bytes of the record magics (V1 and V2 share 0xDA) and of the BLANK magic (§2.2, §2.6)."""
_noted = False


def slow_note() -> None:
    """Say once per process (and Spark application, `notes.note_once`) that reads are slow; called by
    the users of this module when it stands in for the kernels."""
    global _noted
    if not _noted:
        _noted = True
        note_once(SLOW_NOTE)


def walk(buf: np.ndarray, base_offset: int, start: int, end: int, check_crc: bool,
         lead: int) -> tuple[np.ndarray, int, str]:
    """`kernels.walk.walk` with the BODYCRC check of `columnar.walk_records`: (record starts, stop
    position, "end" / "blank" / "invalid")."""
    starts: list[int] = []
    pos = start
    while pos < end:
        if lead and pos >= lead and _INT.unpack_from(buf, pos - lead)[0] == DLEDGER_BLANK_MAGIC:
            return np.array(starts, dtype=np.int64), pos, "blank"
        verdict = check_record(buf, pos, check_crc=check_crc, expected_physical_offset=base_offset + pos)
        if verdict.kind == "blank" and not lead:
            return np.array(starts, dtype=np.int64), pos, "blank"
        if verdict.kind != "record" or verdict.size < MIN_RECORD_SIZE or (
                lead and entry_problem(buf, pos - lead, base_offset, verdict.size) is not None):
            return np.array(starts, dtype=np.int64), pos, "invalid"
        starts.append(pos)
        pos += verdict.size + lead
    return np.array(starts, dtype=np.int64), pos, "end"


def walk_ranges(buf: np.ndarray, at: np.ndarray, physical: np.ndarray, length: np.ndarray,
                check_crc: bool) -> tuple[np.ndarray, np.ndarray]:
    """`kernels.walk.walk_ranges` with the BODYCRC check: (record starts of every range, clean)."""
    found, clean = [], np.ones(len(at), dtype=np.bool_)
    for r, (begin, offset, size) in enumerate(zip(at.tolist(), physical.tolist(), length.tolist(),
                                                  strict=True)):
        starts, stop, kind = walk(buf[: begin + size], offset - begin, begin, begin + size, check_crc, 0)
        found.append(starts)
        clean[r] = kind == "end" and stop == begin + size
    return (np.concatenate(found) if found else np.zeros(0, dtype=np.int64)), clean


def next_boundary(buf: np.ndarray, lo: int, hi: int, base_offset: int) -> int:
    """`kernels.walk.next_boundary`: the first record start (or BLANK reaching the buffer's end) in
    [lo, hi), -1 when none; only positions whose magic's first byte matches are checked."""
    lo, hi = max(lo, 0), min(hi, len(buf) - 7)
    if lo >= hi:
        return -1
    first = buf[lo + OFF_MAGIC : hi + OFF_MAGIC]
    for p in (lo + np.flatnonzero(np.isin(first, _MAGIC_BYTES))).tolist():
        magic = int.from_bytes(buf[p + OFF_MAGIC : p + OFF_MAGIC + 4].tobytes(), "big")
        if magic == BLANK_MAGIC:
            if _INT.unpack_from(buf, p)[0] == len(buf) - p:
                return p
        elif magic in (MAGIC_V1, MAGIC_V2):
            verdict = check_record(buf, p, check_crc=False, expected_physical_offset=base_offset + p)
            if verdict.kind == "record" and verdict.size >= MIN_RECORD_SIZE:
                return p
    return -1


def no_record(pos: int, offset: int, reason: str) -> ValueError:
    """The error of a decode asked for a position that holds no valid record."""
    return ValueError(f"no record at physical offset {offset} (position {pos}): {reason}")


def decode(buf: Any, positions: np.ndarray, physical: np.ndarray, columns: Any, *, decompress: bool,
           max_body_size: int) -> pa.RecordBatch:
    """`columnar.decode_records` one record at a time (`record.decode_record`); bodies are decompressed
    only when the body is asked for, and the first that cannot be raises BodyDecompressionError."""
    schema = arrow_schema(columns)
    decompress = decompress and "body" in schema.names
    rows = []
    for row, (pos, offset) in enumerate(zip(positions.tolist(), physical.tolist(), strict=True)):
        verdict = check_record(buf, pos, check_crc=False)
        if verdict.kind != "record":
            raise no_record(pos, offset, verdict.reason or verdict.kind)
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
