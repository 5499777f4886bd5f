"""The Spark schema of the rmqstore table (design §2) plus the `broker` column.

The message columns and their Arrow types come from `rmqstore.format.table`; `broker` (string,
last) names the store a row came from, so several brokers' stores can be read as one table
(`load([storeA, storeB])`). A user schema given with `.schema(...)` may be any subset of these
columns in any order; only those columns are decoded. Unknown columns or wrong types are errors
that name the column.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_type, to_arrow_schema
from pyspark.sql.types import StructField, StructType

from rmqstore.format.table import COLUMN_NAMES, COLUMNS

BROKER = "broker"
TABLE_COLUMNS: tuple[str, ...] = (*COLUMN_NAMES, BROKER)
"""Every column of the Spark table, in table order."""


def _arrow_type(name: str) -> pa.DataType:
    return pa.string() if name == BROKER else COLUMNS[name]


def table_schema() -> StructType:
    """The full table: every message column, then `broker`."""
    return StructType([StructField(name, from_arrow_type(_arrow_type(name)), True)
                       for name in TABLE_COLUMNS])


_FULL = table_schema()


def validate_schema(schema: StructType) -> StructType:
    """Check a user schema: known columns, table types, no duplicates; returns it unchanged."""
    if not schema.fields:
        raise ValueError("rmqstore: the schema has no columns")
    seen: set[str] = set()
    for spark_field in schema.fields:
        name = spark_field.name
        if name not in TABLE_COLUMNS:
            raise ValueError(f"rmqstore: unknown column {name!r}; the table has: {', '.join(TABLE_COLUMNS)}")
        if name in seen:
            raise ValueError(f"rmqstore: column {name!r} is listed twice in the schema")
        seen.add(name)
        expected = _FULL[name].dataType
        if spark_field.dataType != expected:
            raise ValueError(f"rmqstore: column {name!r} has type {spark_field.dataType.simpleString()}, "
                             f"the table's type is {expected.simpleString()}")
    return schema


def message_columns(schema: StructType) -> tuple[str, ...]:
    """The store columns a schema needs decoded (everything except `broker`)."""
    return tuple(name for name in schema.fieldNames() if name != BROKER)


def output_arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects from read(): `to_arrow_schema(schema, timezone="UTC")`."""
    return to_arrow_schema(schema, timezone="UTC")


def output_batch(batch: pa.RecordBatch, target: pa.Schema, broker: str) -> pa.RecordBatch:
    """`batch` in the query's column order with the `broker` column filled in: `target` exactly."""
    arrays = [pa.repeat(pa.scalar(broker, pa.string()), batch.num_rows) if field.name == BROKER
              else batch.column(field.name) for field in target]
    return pa.RecordBatch.from_arrays(arrays, schema=target)
