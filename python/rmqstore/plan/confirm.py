"""Exact evaluation of predicates on decoded record batches (the confirmation step, design §3.1).

Index hashes collide and index times are whole seconds, so every candidate row is checked here
against every consumed predicate with SQL semantics (null never matches): the predicates' masks
(`rmqstore.plan.predicates.mask`).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from rmqstore.plan.predicates import Predicate, mask


def confirm(batch: pa.RecordBatch, predicates: Sequence[Predicate]) -> pa.RecordBatch:
    """The rows of `batch` satisfying every predicate (`batch` itself, not a copy, when all do: the
    usual case for rows read by index or queue, whose filter would copy every column)."""
    if not predicates or batch.num_rows == 0:
        return batch
    keep = mask(batch, predicates)
    if keep.null_count == 0 and keep.true_count == batch.num_rows:
        return batch
    return batch.filter(keep)
