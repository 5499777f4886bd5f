"""Running one read task against an open store: Arrow record batches of the requested columns.

The batches hold candidate rows; the caller confirms them with `rmqstore.plan.confirm`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from rmqstore.plan.planner import probe_offsets
from rmqstore.plan.tasks import (
    KeyProbeTask,
    OffsetsTask,
    QueueSliceTask,
    RangesTask,
    RangeTask,
    ReadTask,
    probe_bucket,
    within,
)
from rmqstore.store import Store
from rmqstore.store.consumequeue import ConsumeQueue, UnitDamage
from rmqstore.store.errors import FAILFAST, StoreCorruptionError
from rmqstore.store.timeline import SUMMARY_COLUMNS, summarizing


@dataclass(frozen=True)
class ReadSettings:
    """How records are decoded (source options verifyCrc, mode, decompress)."""

    check_crc: bool = False
    mode: str = "FAILFAST"
    decompress: bool = True


def run_task(task: ReadTask, store: Store, columns: Sequence[str],
             settings: ReadSettings) -> Iterator[pa.RecordBatch]:
    """Candidate rows of one task, as batches with exactly `columns`."""
    if isinstance(task, RangeTask) and task.summarize:
        yield from _summarizing_scan(task, store, columns, settings)
        return
    if isinstance(task, RangeTask):
        yield from store.scan(task.start, task.end, list(columns), check_crc=settings.check_crc,
                              mode=settings.mode, decompress=settings.decompress)
        return
    if isinstance(task, RangesTask):
        yield from store.scan_ranges(task.ranges, list(columns), check_crc=settings.check_crc,
                                     mode=settings.mode, decompress=settings.decompress)
        return
    if isinstance(task, OffsetsTask):
        offsets = np.asarray(task.offsets, dtype=np.int64)
        strict = not task.user_points  # offsets the store names are damage where no record is (damage.md §4)
    elif isinstance(task, KeyProbeTask):
        yield from _probe(task, store, columns, settings)
        return
    else:
        offsets = _queue_offsets(store, task, settings.mode)
        strict = True  # damage.md §3
    yield from _read(store, offsets, columns, settings, strict)


def _summarizing_scan(task: RangeTask, store: Store, columns: Sequence[str],
                      settings: ReadSettings) -> Iterator[pa.RecordBatch]:
    """The scan of `task`, decoding what a store-time summary needs too, which it caches."""
    decode = list(dict.fromkeys([*columns, *SUMMARY_COLUMNS]))
    batches = store.scan(task.start, task.end, decode, check_crc=settings.check_crc, mode=settings.mode,
                         decompress=settings.decompress)
    for batch in summarizing(store, task.start, task.end, batches):
        yield batch.select(list(columns))


def _probe(task: KeyProbeTask, store: Store, columns: Sequence[str],
           settings: ReadSettings) -> Iterator[pa.RecordBatch]:
    """Probe on the executor; keep only the rows this task owns (see KeyProbeTask)."""
    found = probe_offsets(store, task.values, task.topics)
    offsets = within(found, task.lo, task.hi)
    token_column = "uniqKey" if task.kind == "uniqKey" else "keys"
    decode = list(columns) if token_column in columns else [*columns, token_column]
    probes = set(task.all_values)
    for batch in _read(store, offsets, decode, settings, strict=True):  # index entries: damage.md §4
        owned = [_owner([t] if task.kind == "uniqKey" else t, probes, task.buckets) == task.bucket
                 for t in batch.column(token_column).to_pylist()]
        kept = batch.filter(pa.array(owned, type=pa.bool_()))
        yield kept if token_column in columns else kept.select(list(columns))


def _owner(tokens: Sequence[str | None] | None, probes: set[str], buckets: int) -> int:
    matching = [t for t in tokens or () if t in probes]
    return probe_bucket(min(matching), buckets) if matching else -1


def _queue_offsets(store: Store, task: QueueSliceTask, mode: str) -> np.ndarray:
    """Physical offsets of the slices' units; a damaged unit, and a unit lost past a queue's end
    (`task.lost`), fails the read (FAILFAST) or is counted, one record and no bytes (PERMISSIVE), unless
    the plan's coverage scan reads its record (damage.md §3)."""
    parts = []
    for s in task.slices:
        queue = store.consume_queue(s.topic, s.queue_id)
        if isinstance(queue, ConsumeQueue) and not task.coverage:
            damage: list[UnitDamage] = []
            units = queue.slice_units(s.start, s.end, tags=task.tags, damage=damage)
            _report(store, damage, mode)
        else:
            units = queue.slice_units(s.start, s.end, tags=task.tags)
        parts.append(units["phy"].astype(np.int64))
    _report(store, task.lost, mode)
    offsets = np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
    return within(offsets, task.lo, task.hi, task.exclude)  # one ascending run per queue: the store sorts


def _report(store: Store, damage: Sequence[UnitDamage], mode: str) -> None:
    """Damaged units: the first fails the read (FAILFAST); each counts one record, no bytes (PERMISSIVE)."""
    for d in damage:
        if mode == FAILFAST:
            raise StoreCorruptionError(d.path, d.position, d.cause)
        store.stats.skip(d.path, d.position, 0, d.cause)


def _read(store: Store, offsets: np.ndarray, columns: Sequence[str], settings: ReadSettings,
          strict: bool) -> Iterator[pa.RecordBatch]:
    for batch in store.read_offsets_batches(offsets, list(columns), mode=settings.mode,
                                            decompress=settings.decompress, check_crc=settings.check_crc,
                                            strict=strict):
        if batch.num_rows:
            yield batch

