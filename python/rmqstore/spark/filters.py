"""Spark `Filter`s -> planner predicates.

Only filters the reader answers exactly are translated (design §3): =, <=>, IN, <, <=, >, >= and
IS NOT NULL on the plannable columns. Everything else (LIKE, NOT, IS NULL, filters on other
columns, `array_contains`, which Spark passes only as `IsNotNull(keys)`) goes back to Spark.
Timestamps arrive as tz-aware datetimes and become epoch microseconds, like the Arrow column.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
)

from rmqstore.format.table import COLUMNS, TIMESTAMP
from rmqstore.plan.predicates import PLANNABLE_COLUMNS, Compare, InSet, NotNull, Predicate

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_OPS = {EqualTo: "=", EqualNullSafe: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<",
        LessThanOrEqual: "<="}


def to_predicate(spark_filter: Filter) -> Predicate | None:
    """The predicate for one Spark filter, or None when it must stay with Spark."""
    attribute = getattr(spark_filter, "attribute", None)
    if not attribute or len(attribute) != 1 or attribute[0] not in PLANNABLE_COLUMNS:
        return None
    column = attribute[0]
    if isinstance(spark_filter, IsNotNull):
        return NotNull(column)
    if isinstance(spark_filter, In):
        values = [_value(column, v) for v in spark_filter.value if v is not None]
        if not values or any(v is None for v in values):
            return None
        return InSet(column, tuple(dict.fromkeys(values)))
    op = _OPS.get(type(spark_filter))
    if op is None:
        return None
    value = _value(column, spark_filter.value)
    return None if value is None else Compare(column, op, value)  # type: ignore[arg-type]


def _value(column: str, value: object) -> str | int | None:
    """The Arrow-side value for a filter literal, None when its type does not fit the column."""
    arrow_type = COLUMNS[column]
    if arrow_type == TIMESTAMP:
        if isinstance(value, datetime) and value.tzinfo is not None:
            return (value - _EPOCH) // timedelta(microseconds=1)
        return None
    if isinstance(value, bool):
        return None
    if pa.types.is_integer(arrow_type):
        return value if isinstance(value, int) else None
    if pa.types.is_string(arrow_type):
        return value if isinstance(value, str) else None
    return None
