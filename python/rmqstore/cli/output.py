"""Output forms of the CLI: JSON lines of table rows, aligned text tables, JSON documents."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.compute as pc

_MAX_CELL = 60
"""Table cells longer than this are cut (JSON output keeps everything)."""


def _column_values(column: pa.Array) -> list[Any]:
    """One column as JSON values: timestamps -> epoch ms, binary -> base64, map -> object, list -> list."""
    kind = column.type
    if pa.types.is_timestamp(kind):
        micros = pc.cast(column, pa.int64()).to_pylist()
        return [None if v is None else v // 1000 for v in micros]
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return [None if v is None else base64.b64encode(v).decode("ascii") for v in column.to_pylist()]
    if pa.types.is_map(kind):
        return [None if v is None else dict(v) for v in column.to_pylist()]
    if pa.types.is_list(kind):
        return [[] if v is None else v for v in column.to_pylist()]
    return column.to_pylist()


def json_rows(batch: pa.RecordBatch) -> Iterator[dict[str, Any]]:
    """The rows of a batch as JSON-ready dicts keyed by the table's column names."""
    names = batch.schema.names
    columns = [_column_values(column) for column in batch.columns]
    for values in zip(*columns, strict=True):
        yield dict(zip(names, values, strict=True))


def write_jsonl(batch: pa.RecordBatch, out: TextIO) -> int:
    """Write one JSON object per row; returns the number of rows."""
    count = 0
    for row in json_rows(batch):
        out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
        out.write("\n")
        count += 1
    return count


def print_json(doc: Any, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    json.dump(doc, out, ensure_ascii=False, indent=2)
    out.write("\n")


def print_table(
    title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]], out: TextIO | None = None
) -> None:
    """A titled, column-aligned text table (numbers right-aligned)."""
    out = out or sys.stdout
    out.write(f"{title}\n")
    if not rows:
        out.write("  (none)\n\n")
        return
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [all(isinstance(row[i], int | float) for row in rows) for i in range(len(headers))]
    for n, row in enumerate(cells):
        parts = [
            cell.rjust(w) if numeric[i] else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.write("  " + "  ".join(parts).rstrip() + "\n")
        if n == 0:
            out.write("  " + "  ".join("-" * w for w in widths) + "\n")
    out.write("\n")


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 1] + "…"


def print_fields(title: str, fields: Sequence[tuple[str, Any]], out: TextIO | None = None) -> None:
    """`name: value` lines under a title."""
    out = out or sys.stdout
    out.write(f"{title}\n")
    width = max((len(name) for name, _ in fields), default=0)
    for name, value in fields:
        out.write(f"  {name.ljust(width)}  {value}\n")
    out.write("\n")
