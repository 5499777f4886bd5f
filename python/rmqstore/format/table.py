"""The message table: one row per stored message (design §2).

The Arrow types are exactly the ones Spark's `to_arrow_schema(schema, timezone="UTC")` produces for
the table's Spark schema, so record batches built with them can go to Spark without a cast:
int32/int64, `timestamp[us, tz=UTC]`, `string` and `binary` (never the large variants),
`list<element: string>`, and `map<string, string>` with a non-null key.
"""

from __future__ import annotations

import pyarrow as pa

TIMESTAMP = pa.timestamp("us", tz="UTC")
STRING_LIST = pa.list_(pa.field("element", pa.string()))
STRING_MAP = pa.map_(pa.string(), pa.string())

COLUMNS: dict[str, pa.DataType] = {
    "topic": pa.string(),
    "queueId": pa.int32(),
    "queueOffset": pa.int64(),
    "commitLogOffset": pa.int64(),
    "storeSize": pa.int32(),
    "msgId": pa.string(),
    "uniqKey": pa.string(),
    "key": pa.string(),
    "keys": STRING_LIST,
    "tags": pa.string(),
    "body": pa.binary(),
    "bodyCrc": pa.int32(),
    "flag": pa.int32(),
    "sysFlag": pa.int32(),
    "bornTimestamp": TIMESTAMP,
    "storeTimestamp": TIMESTAMP,
    "bornHost": pa.string(),
    "storeHost": pa.string(),
    "reconsumeTimes": pa.int32(),
    "preparedTransactionOffset": pa.int64(),
    "properties": STRING_MAP,
}
"""Column name -> Arrow type, in the table's column order."""

COLUMN_NAMES: tuple[str, ...] = tuple(COLUMNS)


def arrow_schema(columns: tuple[str, ...] | list[str] | None = None) -> pa.Schema:
    """The Arrow schema of the given columns (all of them when None), in the given order.

    Raises ValueError naming the first unknown column.
    """
    names = COLUMN_NAMES if columns is None else tuple(columns)
    for name in names:
        if name not in COLUMNS:
            raise ValueError(f"unknown column {name!r}; the table has: {', '.join(COLUMN_NAMES)}")
    return pa.schema([pa.field(name, COLUMNS[name], nullable=True) for name in names])
