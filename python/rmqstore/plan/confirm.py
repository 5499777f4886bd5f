"""Exact evaluation of predicates on decoded record batches (the confirmation step, design §3).

Index hashes collide and index times are whole seconds, so every candidate row is checked here
against every consumed predicate with SQL semantics (null never matches).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rmqstore.format.layout import QUEUED_TRANSACTION_TYPES, SYSFLAG_TRANSACTION_MASK
from rmqstore.plan.predicates import Compare, InSet, KeysContainAny, NotNull, Predicate, QueueWindows

_COMPARE = {"=": pc.equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}


def predicate_mask(batch: pa.RecordBatch, predicate: Predicate) -> pa.Array:
    """Boolean mask (nulls count as false) of the rows satisfying one predicate."""
    if isinstance(predicate, KeysContainAny):
        return _keys_contain_any(batch.column("keys"), predicate.values)
    if isinstance(predicate, QueueWindows):
        return _in_windows(batch, predicate)
    column = batch.column(predicate.column)
    if isinstance(predicate, NotNull):
        return pc.is_valid(column)
    if isinstance(predicate, InSet):
        values = pa.array(list(predicate.values), type=column.type)
        return pc.fill_null(pc.is_in(column, value_set=values, skip_nulls=True), False)
    assert isinstance(predicate, Compare)
    scalar = pa.scalar(predicate.value, type=column.type)
    return pc.fill_null(_COMPARE[predicate.op](column, scalar), False)


def _keys_contain_any(keys: pa.Array, values: Sequence[str]) -> pa.Array:
    flat = pc.list_flatten(keys)
    parents = pc.list_parent_indices(keys)
    hits = pc.is_in(flat, value_set=pa.array(list(values), type=pa.string()))
    mask = np.zeros(len(keys), dtype=bool)
    mask[np.asarray(parents)[np.asarray(pc.fill_null(hits, False))]] = True
    return pa.array(mask)


def _in_windows(batch: pa.RecordBatch, predicate: QueueWindows) -> pa.Array:
    topics = batch.column("topic").to_numpy(zero_copy_only=False)
    queue_ids = np.asarray(pc.fill_null(batch.column("queueId"), -1))
    offsets = np.asarray(pc.fill_null(batch.column("queueOffset"), -1))
    transaction = np.asarray(pc.fill_null(batch.column("sysFlag"), 0)) & SYSFLAG_TRANSACTION_MASK
    queued = np.isin(transaction, QUEUED_TRANSACTION_TYPES)
    mask = np.zeros(batch.num_rows, dtype=bool)
    for w in predicate.windows:
        mask |= (topics == w.topic) & (queue_ids == w.queue_id) & (offsets >= w.start) & (offsets < w.end)
    return pa.array(mask & queued)


def confirm(batch: pa.RecordBatch, predicates: Sequence[Predicate]) -> pa.RecordBatch:
    """The rows of `batch` satisfying every predicate."""
    if not predicates or batch.num_rows == 0:
        return batch
    mask = predicate_mask(batch, predicates[0])
    for predicate in predicates[1:]:
        mask = pc.and_(mask, predicate_mask(batch, predicate))
    return batch.filter(mask)
