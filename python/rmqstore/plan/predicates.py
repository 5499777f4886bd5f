"""The predicate model: what a predicate means, written once (design §3.1).

Predicates the planner understands: comparisons, IN lists and NOT NULL on table columns, RocketMQ's
key meaning (`KeysContainAny`) and queue windows. Values use the Arrow representation of the column:
str for strings, int for int/long columns and epoch microseconds (UTC) for timestamps.

Each kind has two meanings, both here: its `Bounds` (what the planner narrows the read with: offset
points and range, a storeTimestamp window in epoch milliseconds, the store's unit, topic / queue /
tags sets, index probe values) and its `mask` (the rows of an Arrow batch it keeps, SQL semantics:
null never matches). Every row a mask keeps is inside the bounds. Consumers handle each kind once
through a `PredicateVisitor` (`visit` dispatches on the kind), in the style of pyiceberg's
expression visitors.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import Generic, Literal, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqstore.format.layout import QUEUED_TRANSACTION_TYPES, SYSFLAG_TRANSACTION_MASK
from rmqstore.format.msgid import decode_offset_msg_id
from rmqstore.format.record import (
    LMQ_PREFIX,
    MULTI_DISPATCH_SKIPPED,
    PROPERTY_INNER_MULTI_DISPATCH,
    PROPERTY_INNER_MULTI_QUEUE_OFFSET,
    dispatched_queues,
)
from rmqstore.format.table import COLUMNS

Op = Literal["=", "<", "<=", ">", ">="]
ProbeKind = Literal["key", "uniqKey", "keysContain"]
"""Which index probe answers a predicate: a whole KEYS string, a UNIQ_KEY, or any KEYS token."""

PLANNABLE_COLUMNS: frozenset[str] = frozenset({
    "topic", "queueId", "queueOffset", "commitLogOffset", "msgId", "uniqKey", "key", "tags",
    "storeTimestamp",
})
"""Columns whose predicates the planner consumes (design §3.1)."""

QUEUE_IDS = 1 << 16
"""Queue ids are below this (a consume-queue directory name is a non-negative int, §4)."""


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
    one of the windows (resolved offsets), or, for the window of an `%LMQ%` queue, whose multi-dispatch
    properties put them in it (the record keeps its own topic, §4.6): at most one window per queue, so
    that intersecting two sets of windows is intersecting each queue's pair."""

    windows: tuple[QueueWindow, ...]

    @property
    def lmq(self) -> tuple[QueueWindow, ...]:
        """The windows of LMQ queues."""
        return tuple(w for w in self.windows if w.topic.startswith(LMQ_PREFIX))

    def __post_init__(self) -> None:
        queues = [(w.topic, w.queue_id) for w in self.windows]
        if len(set(queues)) != len(queues):
            raise ValueError(f"queue windows name a queue more than once: {sorted(queues)}")

    def intersect(self, other: QueueWindows) -> QueueWindows:
        mine = {(w.topic, w.queue_id): w for w in self.windows}
        both = []
        for w in other.windows:
            m = mine.get((w.topic, w.queue_id))
            if m is not None and max(m.start, w.start) < min(m.end, w.end):
                both.append(QueueWindow(w.topic, w.queue_id, max(m.start, w.start), min(m.end, w.end)))
        return QueueWindows(tuple(both))


Predicate = Compare | InSet | NotNull | KeysContainAny | QueueWindows

T = TypeVar("T")


class PredicateVisitor(ABC, Generic[T]):
    """One method per predicate kind; `visit(predicate, visitor)` calls the right one."""

    @abstractmethod
    def visit_compare(self, p: Compare) -> T: ...

    @abstractmethod
    def visit_in_set(self, p: InSet) -> T: ...

    @abstractmethod
    def visit_not_null(self, p: NotNull) -> T: ...

    @abstractmethod
    def visit_keys_contain_any(self, p: KeysContainAny) -> T: ...

    @abstractmethod
    def visit_queue_windows(self, p: QueueWindows) -> T: ...


_METHOD: dict[type, str] = {
    Compare: "visit_compare", InSet: "visit_in_set", NotNull: "visit_not_null",
    KeysContainAny: "visit_keys_contain_any", QueueWindows: "visit_queue_windows",
}


def visit(predicate: Predicate, visitor: PredicateVisitor[T]) -> T:
    """Dispatch `predicate` to the visitor's method for its kind."""
    method = _METHOD.get(type(predicate))
    if method is None:
        raise TypeError(f"not a predicate: {predicate!r}")
    return getattr(visitor, method)(predicate)


# ---- bounds (planning) ------------------------------------------------------------------------


@dataclass
class Bounds:
    """What a conjunction of predicates says about each plannable column; None: unbounded.

    Offsets are half-open [lo, hi); the storeTimestamp window [begin_ms, end_ms] is inclusive epoch
    milliseconds (the store's unit: `Store.time_ranges`, `rmqstore.plan.lookup`); queue offsets are
    [queue_lo, queue_hi). `probes` maps an index probe to the values it must find one of.
    """

    points: set[int] | None = None
    lo: int | None = None
    hi: int | None = None
    begin_ms: int | None = None
    end_ms: int | None = None
    probes: dict[ProbeKind, tuple[str, ...]] = field(default_factory=dict)
    topics: set[str] | None = None
    queue_ids: set[int] | None = None
    queue_lo: int | None = None
    queue_hi: int | None = None
    tags: set[str] | None = None
    windows: QueueWindows | None = None

    @property
    def empty(self) -> bool:
        """True when no row can be inside (an empty set of offsets, topics, queues or tags)."""
        return any(s is not None and not s for s in (self.points, self.topics, self.queue_ids, self.tags))

    def __and__(self, other: Bounds) -> Bounds:
        """The bounds of both conjunctions (for probes: the shorter value list, both are confirmed)."""
        probes = dict(self.probes)
        for kind, values in other.probes.items():
            probes[kind] = _narrowest(probes.get(kind), values)
        windows = other.windows if self.windows is None else \
            self.windows if other.windows is None else self.windows.intersect(other.windows)
        return Bounds(
            points=_intersect(self.points, other.points), lo=_tighter(self.lo, other.lo, max),
            hi=_tighter(self.hi, other.hi, min), begin_ms=_tighter(self.begin_ms, other.begin_ms, max),
            end_ms=_tighter(self.end_ms, other.end_ms, min), probes=probes,
            topics=_intersect(self.topics, other.topics),
            queue_ids=_intersect(self.queue_ids, other.queue_ids),
            queue_lo=_tighter(self.queue_lo, other.queue_lo, max),
            queue_hi=_tighter(self.queue_hi, other.queue_hi, min), tags=_intersect(self.tags, other.tags),
            windows=windows)


def bounds(predicates: Sequence[Predicate]) -> Bounds:
    """The bounds of a conjunction: the intersection of each predicate's bounds."""
    return reduce(lambda acc, p: acc & visit(p, _BOUNDS), predicates, Bounds())


def _intersect(current: set | None, values: set | None) -> set | None:
    return values if current is None else current if values is None else current & values


def _tighter(current: int | None, new: int | None, pick: Callable[[int, int], int]) -> int | None:
    """Combine two optional bounds with `pick` (max for lower bounds, min for upper bounds)."""
    if current is None:
        return new
    return current if new is None else pick(current, new)


def _narrowest(current: tuple[str, ...] | None, values: tuple[str, ...]) -> tuple[str, ...]:
    """Of two value lists for the same probe, the shorter one (the first when equally long)."""
    return values if current is None or len(values) < len(current) else current


def _msg_id_offsets(values: Sequence) -> set[int]:
    offsets = set()
    for value in values:
        try:
            offsets.add(decode_offset_msg_id(str(value))[1])
        except ValueError:
            continue  # not an offsetMsgId: matches no record
    return offsets


_INT_RANGE: dict[str, Callable[[int], tuple[int | None, int | None]]] = {
    "=": lambda v: (v, v + 1), "<": lambda v: (None, v), "<=": lambda v: (None, v + 1),
    ">": lambda v: (v + 1, None), ">=": lambda v: (v, None),
}


def ms_window(lo_us: int | None, hi_us: int | None) -> tuple[int | None, int | None]:
    """The inclusive epoch-ms window of the whole milliseconds in [lo_us, hi_us) (stored times are ms)."""
    begin = None if lo_us is None else -(-lo_us // 1000)
    end = None if hi_us is None else -(-hi_us // 1000) - 1
    return begin, end


def time_predicates(begin_ms: int | None, end_ms: int | None) -> tuple[Predicate, ...]:
    """`storeTimestamp` in the inclusive epoch-ms window [begin_ms, end_ms] (None: open), as predicates."""
    preds: list[Predicate] = []
    if begin_ms is not None:
        preds.append(Compare("storeTimestamp", ">=", begin_ms * 1000))
    if end_ms is not None:
        preds.append(Compare("storeTimestamp", "<", (end_ms + 1) * 1000))
    return tuple(preds)


def _range_bounds(column: str, lo: int | None, hi: int | None) -> Bounds:
    """Bounds of `column` in [lo, hi) (None: open)."""
    if column == "commitLogOffset":
        return Bounds(lo=lo, hi=hi)
    if column == "queueOffset":
        return Bounds(queue_lo=lo, queue_hi=hi)
    if column == "queueId":
        return Bounds(queue_ids=set(range(max(lo or 0, 0), min(QUEUE_IDS if hi is None else hi, QUEUE_IDS))))
    if column == "storeTimestamp":
        begin, end = ms_window(lo, hi)
        return Bounds(begin_ms=begin, end_ms=end)
    return Bounds()


def _value_bounds(column: str, values: tuple[str | int, ...]) -> Bounds:
    """Bounds of `column IN values`."""
    if column == "commitLogOffset":
        return Bounds(points={int(v) for v in values})
    if column == "msgId":
        return Bounds(points=_msg_id_offsets(values))
    if column == "key":
        return Bounds(probes={"key": tuple(str(v) for v in values)})
    if column == "uniqKey":
        return Bounds(probes={"uniqKey": tuple(str(v) for v in values)})
    if column == "topic":
        return Bounds(topics={str(v) for v in values})
    if column == "tags":
        return Bounds(tags={str(v) for v in values})
    if column == "queueId":
        return Bounds(queue_ids={int(v) for v in values})
    if column in ("queueOffset", "storeTimestamp"):
        if not values:
            return _range_bounds(column, 0, 0)
        return _range_bounds(column, int(min(values)), int(max(values)) + 1)
    return Bounds()


class _BoundsVisitor(PredicateVisitor[Bounds]):
    """Each predicate's own bounds (columns the planner does not use give no bound)."""

    def visit_compare(self, p: Compare) -> Bounds:
        if p.op == "=":
            return _value_bounds(p.column, (p.value,))
        if p.column in ("commitLogOffset", "queueOffset", "queueId", "storeTimestamp"):
            return _range_bounds(p.column, *_INT_RANGE[p.op](int(p.value)))
        return Bounds()

    def visit_in_set(self, p: InSet) -> Bounds:
        return _value_bounds(p.column, p.values)

    def visit_not_null(self, p: NotNull) -> Bounds:
        return Bounds()

    def visit_keys_contain_any(self, p: KeysContainAny) -> Bounds:
        return Bounds(probes={"keysContain": p.values})

    def visit_queue_windows(self, p: QueueWindows) -> Bounds:
        return Bounds(windows=p)


_BOUNDS = _BoundsVisitor()


# ---- masks (confirming) -----------------------------------------------------------------------

_COMPARE = {"=": pc.equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}


class _MaskVisitor(PredicateVisitor[pa.Array]):
    """Boolean masks (nulls count as false) over one batch."""

    def __init__(self, batch: pa.RecordBatch) -> None:
        self.batch = batch

    def visit_compare(self, p: Compare) -> pa.Array:
        column = self.batch.column(p.column)
        return pc.fill_null(_COMPARE[p.op](column, pa.scalar(p.value, type=column.type)), False)

    def visit_in_set(self, p: InSet) -> pa.Array:
        column = self.batch.column(p.column)
        values = pa.array(list(p.values), type=column.type)
        return pc.fill_null(pc.is_in(column, value_set=values, skip_nulls=True), False)

    def visit_not_null(self, p: NotNull) -> pa.Array:
        return pc.is_valid(self.batch.column(p.column))

    def visit_keys_contain_any(self, p: KeysContainAny) -> pa.Array:
        keys = self.batch.column("keys")
        hits = pc.is_in(pc.list_flatten(keys), value_set=pa.array(list(p.values), type=pa.string()))
        mask = np.zeros(len(keys), dtype=bool)
        mask[np.asarray(pc.list_parent_indices(keys))[np.asarray(pc.fill_null(hits, False))]] = True
        return pa.array(mask)

    def visit_queue_windows(self, p: QueueWindows) -> pa.Array:
        batch = self.batch
        topics = batch.column("topic").to_numpy(zero_copy_only=False)
        queue_ids = np.asarray(pc.fill_null(batch.column("queueId"), -1))
        offsets = np.asarray(pc.fill_null(batch.column("queueOffset"), -1))
        transaction = np.asarray(pc.fill_null(batch.column("sysFlag"), 0)) & SYSFLAG_TRANSACTION_MASK
        mask = np.zeros(batch.num_rows, dtype=bool)
        for w in p.windows:
            mask |= (topics == w.topic) & (queue_ids == w.queue_id) & (offsets >= w.start) & (offsets < w.end)
        if p.lmq:
            mask |= _in_lmq_windows(batch, p.lmq)
        return pa.array(mask & np.isin(transaction, QUEUED_TRANSACTION_TYPES))


def _in_lmq_windows(batch: pa.RecordBatch, windows: Sequence[QueueWindow]) -> np.ndarray:
    """Rows whose INNER_MULTI_DISPATCH / INNER_MULTI_QUEUE_OFFSET put them in one of the LMQ `windows`
    (§4.6; records of the topics RocketMQ never multi-dispatches are in none)."""
    props = batch.column("properties")
    queues = pc.map_lookup(props, PROPERTY_INNER_MULTI_DISPATCH, "first").to_pylist()
    numbers = pc.map_lookup(props, PROPERTY_INNER_MULTI_QUEUE_OFFSET, "first").to_pylist()
    topics = batch.column("topic").to_pylist()
    by_queue = {(w.topic, w.queue_id): w for w in windows}
    mask = np.zeros(batch.num_rows, dtype=bool)
    for row, (names, offsets, topic) in enumerate(zip(queues, numbers, topics, strict=True)):
        if names is None or offsets is None or topic is None or topic.startswith(MULTI_DISPATCH_SKIPPED):
            continue
        for queue, offset in dispatched_queues(names, offsets, 0):
            w = by_queue.get(queue)
            if w is not None and w.start <= offset < w.end:
                mask[row] = True
    return mask


def mask(batch: pa.RecordBatch, predicates: Sequence[Predicate]) -> pa.Array:
    """Boolean mask of the rows of `batch` satisfying every predicate (all true when there are none)."""
    visitor = _MaskVisitor(batch)
    masks = [visit(p, visitor) for p in predicates]
    return reduce(pc.and_, masks) if masks else pa.array(np.ones(batch.num_rows, dtype=bool))


# ---- columns and text -------------------------------------------------------------------------


class _ColumnsVisitor(PredicateVisitor[tuple[str, ...]]):
    def visit_compare(self, p: Compare) -> tuple[str, ...]:
        return (p.column,)

    def visit_in_set(self, p: InSet) -> tuple[str, ...]:
        return (p.column,)

    def visit_not_null(self, p: NotNull) -> tuple[str, ...]:
        return (p.column,)

    def visit_keys_contain_any(self, p: KeysContainAny) -> tuple[str, ...]:
        return ("keys",)

    def visit_queue_windows(self, p: QueueWindows) -> tuple[str, ...]:
        return ("topic", "queueId", "queueOffset", "sysFlag", *(("properties",) if p.lmq else ()))


def predicate_columns(predicates: Sequence[Predicate]) -> tuple[str, ...]:
    """The columns the predicates' masks read, in table order."""
    needed = {name for p in predicates for name in visit(p, _ColumnsVisitor())}
    return tuple(name for name in COLUMNS if name in needed)


class _DescribeVisitor(PredicateVisitor[str]):
    def visit_compare(self, p: Compare) -> str:
        return f"{p.column} {p.op} {p.value!r}"

    def visit_in_set(self, p: InSet) -> str:
        shown = ", ".join(repr(v) for v in p.values[:5])
        more = f", ... ({len(p.values)} values)" if len(p.values) > 5 else ""
        return f"{p.column} IN ({shown}{more})"

    def visit_not_null(self, p: NotNull) -> str:
        return f"{p.column} IS NOT NULL"

    def visit_keys_contain_any(self, p: KeysContainAny) -> str:
        return f"keys contain any of {list(p.values)!r}"

    def visit_queue_windows(self, p: QueueWindows) -> str:
        return f"queue windows ({len(p.windows)} queues)"


def describe(predicate: Predicate) -> str:
    """A short SQL-like text for logs and error messages."""
    return visit(predicate, _DescribeVisitor())
