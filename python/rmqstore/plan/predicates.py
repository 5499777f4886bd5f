"""Predicates the planner understands: comparisons, IN lists and NOT NULL on table columns.

Values use the Arrow representation of the column: str for strings, int for int/long columns and
epoch microseconds (UTC) for timestamps. A `KeysContainAny` predicate is RocketMQ's key meaning:
at least one of the values is among the message's KEYS tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rmqstore.format.table import COLUMNS

Op = Literal["=", "<", "<=", ">", ">="]

PLANNABLE_COLUMNS: frozenset[str] = frozenset({
    "topic", "queueId", "queueOffset", "commitLogOffset", "msgId", "uniqKey", "key", "tags",
    "storeTimestamp",
})
"""Columns whose predicates the planner consumes (design §3 table)."""


@dataclass(frozen=True)
class Compare:
    """`column op value`."""

    column: str
    op: Op
    value: str | int


@dataclass(frozen=True)
class InSet:
    """`column IN (values)`; null values never match (SQL semantics)."""

    column: str
    values: tuple[str | int, ...]


@dataclass(frozen=True)
class NotNull:
    """`column IS NOT NULL`."""

    column: str


@dataclass(frozen=True)
class KeysContainAny:
    """At least one of `values` is among the KEYS tokens (RocketMQ's `queryMsgByKey` meaning)."""

    values: tuple[str, ...]


@dataclass(frozen=True)
class QueueWindow:
    """Queue offsets [start, end) of one consume queue."""

    topic: str
    queue_id: int
    start: int
    end: int


@dataclass(frozen=True)
class QueueWindows:
    """Queue units (not PREPARED / ROLLBACK records, §4.1) whose (topic, queueId, queueOffset) falls in
    one of the windows (resolved offsets)."""

    windows: tuple[QueueWindow, ...]

    def intersect(self, other: QueueWindows) -> QueueWindows:
        mine = {(w.topic, w.queue_id): w for w in self.windows}
        both = []
        for w in other.windows:
            m = mine.get((w.topic, w.queue_id))
            if m is not None and max(m.start, w.start) < min(m.end, w.end):
                both.append(QueueWindow(w.topic, w.queue_id, max(m.start, w.start), min(m.end, w.end)))
        return QueueWindows(tuple(both))


Predicate = Compare | InSet | NotNull | KeysContainAny | QueueWindows


def predicate_columns(predicates: list[Predicate] | tuple[Predicate, ...]) -> tuple[str, ...]:
    """The columns the predicates read, in table order."""
    needed: set[str] = set()
    for p in predicates:
        if isinstance(p, KeysContainAny):
            needed.add("keys")
        elif isinstance(p, QueueWindows):
            needed.update(("topic", "queueId", "queueOffset", "sysFlag"))
        else:
            needed.add(p.column)
    return tuple(name for name in COLUMNS if name in needed)


def describe(predicate: Predicate) -> str:
    """A short SQL-like text for logs and error messages."""
    if isinstance(predicate, Compare):
        return f"{predicate.column} {predicate.op} {predicate.value!r}"
    if isinstance(predicate, InSet):
        shown = ", ".join(repr(v) for v in predicate.values[:5])
        more = f", ... ({len(predicate.values)} values)" if len(predicate.values) > 5 else ""
        return f"{predicate.column} IN ({shown}{more})"
    if isinstance(predicate, NotNull):
        return f"{predicate.column} IS NOT NULL"
    if isinstance(predicate, QueueWindows):
        return f"queue windows ({len(predicate.windows)} queues)"
    return f"keys contain any of {list(predicate.values)!r}"
