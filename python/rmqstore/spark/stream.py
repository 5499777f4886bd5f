"""The streaming reader of the "rmqstore" source: tail broker stores while brokers write them (design §4.4).

Spark runs three instances of this class (design §7.3): a long-lived driver-side one (initialOffset,
latestOffset, partitions, reportLatestOffset, commit), one in a planning worker, and pickled copies
on the executors that only call `read`. So `read` gets everything it needs from its
`StreamPartition`, and driver-side caches are plain dicts that are merely an optimisation.

Offsets are in `rmqstore.spark.offsets`, the rule that keeps torn records out in `rmqstore.store.tail`.
A micro-batch is read like a batch read: its offsets are planned by `rmqstore.plan.stream` and each
task is run by `rmqstore.plan.execute`.
Data loss (retention deleted files the query still needs) follows Spark's Kafka source: `failOnDataLoss=true`
(default) fails the query with an error naming the lost offsets and files; `false` logs a warning
and continues after the gap.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from rmqstore.format.compression import MAX_MESSAGE_SIZE
from rmqstore.plan.execute import ReadSettings, run_task
from rmqstore.plan.planner import PlanSettings
from rmqstore.plan.predicates import Compare, Predicate, QueueWindow, QueueWindows
from rmqstore.plan.stream import plan_stream_batch
from rmqstore.plan.tasks import RangeTask, ReadTask
from rmqstore.spark.contract_options import ENDING_OFFSETS, ENDING_TIMESTAMP, STARTING_OFFSETS
from rmqstore.spark.offsets import (
    QueueKey,
    StoreOffset,
    admit_queue_units,
    check_group_known,
    offsets_from_json,
    offsets_to_json,
)
from rmqstore.spark.options import (
    OffsetSpec,
    OptionError,
    RmqOptions,
    parse_options,
)
from rmqstore.spark.schema import message_columns, output_arrow_schema, output_batch
from rmqstore.store import LogEnd, Store
from rmqstore.store.names import segment_file_name
from rmqstore.store.tail import NO_LIMITS, CommitLogTail, Limits, LogWalkCache

log = logging.getLogger(__name__)

DATA_LOSS_ADVICE = (
    "Retention (or someone) deleted these files before the query read them. If you accept the loss, "
    "restart the query with the option failOnDataLoss=false (it skips to the earliest data still there "
    "and logs a warning); to read everything that is still stored, start a new query (new checkpoint) "
    "with startingOffsets=earliest. To avoid this, keep the query within the broker's fileReservedTime."
)


class DataLossError(RuntimeError):
    """Data the query still needed is gone from the store (failOnDataLoss=true)."""


@dataclass(frozen=True)
class StreamPartition(InputPartition):
    """One task of a micro-batch's plan (`rmqstore.plan.stream`): a commit-log range (log mode) or
    queue slices, and the store it reads."""

    location: str
    broker: str
    columns: tuple[str, ...]
    """Store columns to decode (the query's columns without `broker`)."""
    output_schema: pa.Schema
    """The Arrow schema `read` must yield (design §7.3: exactly Spark's `to_arrow_schema`)."""
    task: ReadTask
    verify_crc: bool = False
    mode: str = "FAILFAST"
    decompress: bool = True
    fail_on_data_loss: bool = True
    index_geometry: tuple[int, int] | None = None
    max_message_size: int = MAX_MESSAGE_SIZE
    storage_options: Mapping[str, str] | None = field(default=None, repr=False)
    """Credentials and settings of an s3:// store (never shown)."""
    log_end: int | None = None
    """A valid end of the log the driver proved (log mode: the batch's end; queue mode: the end its
    store found): `read` bounds its reads by it instead of walking the active segment again."""


def _open_store(location: str, index_geometry: tuple[int, int] | None, max_message_size: int,
                storage_options: Mapping[str, str] | None, log_end: int | None = None) -> Store:
    """A fresh view of a store (files come and go between triggers).

    The store's own valid end is found without BODYCRC checks: ranges handed to `read` are already
    proven complete by the torn-record rule, so the end only needs to bound them, not re-prove them;
    with `log_end` (proven by the driver) it is not searched at all.
    """
    store = Store.open(location, index_geometry=index_geometry, check_crc_at_end=False,
                       max_message_size=max_message_size, storage_options=storage_options)
    if log_end is not None:
        store.log.end = LogEnd(log_end, store.log.segment_at(log_end - 1), "proven by the stream's driver")
    return store


def _data_loss(fail: bool, what: str) -> None:
    """Raise DataLossError (failOnDataLoss=true) or log a warning that data is skipped."""
    if fail:
        raise DataLossError(f"rmqstore: data loss: {what}. {DATA_LOSS_ADVICE}")
    log.warning("rmqstore: data loss (failOnDataLoss=false, skipping): %s", what)


def _lost_log_range(store: Store, location: str, start: int) -> str:
    size = store.segment_size or 1
    first = start - start % size
    names = [segment_file_name(base) for base in range(first, store.min_offset, size)]
    shown = ", ".join(names[:4]) + (f" ... ({len(names)} files)" if len(names) > 4 else "")
    return (f"store {location}: commit-log offsets [{start}, {store.min_offset}) are gone "
            f"(segment file(s) {shown} no longer exist; the earliest offset now is {store.min_offset})")


def _lost_queue_range(location: str, queue: QueueKey, start: int, min_offset: int) -> str:
    return (f"store {location}: queue {queue[0]}/{queue[1]} offsets [{start}, {min_offset}) are gone "
            f"(its consume-queue or commit-log files no longer exist; the earliest queue offset now is "
            f"{min_offset})")


class StoreStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """`spark.readStream.format("rmqstore").load(storeDir)`: JSON offsets, read limits, availableNow."""

    def __init__(self, options: Mapping[str, str] | RmqOptions, schema: StructType) -> None:
        self.opts = options if isinstance(options, RmqOptions) else parse_options(options)
        for batch_only in (ENDING_OFFSETS, ENDING_TIMESTAMP):
            if batch_only in self.opts.raw:
                raise OptionError(batch_only, "is for batch reads only; a stream has no end (use "
                                              "Trigger.AvailableNow to stop at the data present at start)")
        self.schema = schema
        self.columns = message_columns(schema)
        self.output_schema = output_arrow_schema(schema)
        starting = self.opts.starting_offsets
        self.queue_mode = bool(self.opts.topics) or starting.kind in ("queues", "group")
        if starting.kind == "physical" and self.queue_mode:
            raise OptionError(STARTING_OFFSETS, "a physical commit-log offset cannot start a stream that "
                                                "reads topics by queue; give per-queue JSON offsets instead")
        self.stores = dict(zip(self.opts.broker_names, self.opts.paths, strict=True))
        # Driver-side state (the first instance of design §7.3); never needed by read().
        self._walk_caches: dict[str, LogWalkCache] = {}
        self._target: dict[str, StoreOffset] | None = None
        self._last_end: dict[str, StoreOffset] | None = None

    def _open(self, location: str) -> Store:
        return _open_store(location, self.opts.index_geometry, self.opts.max_message_size,
                           self.opts.storage_options_for(location))

    # ---- offsets -------------------------------------------------------------------------------

    def initialOffset(self) -> dict:
        stores = [self._open(location) for location in self.stores.values()]
        try:
            check_group_known(stores, self.opts.starting_offsets, STARTING_OFFSETS)
        finally:
            for store in stores:
                store.close()
        return offsets_to_json({broker: self._starting_offset(broker) for broker in self.stores})

    def _starting_offset(self, broker: str) -> StoreOffset:
        location = self.stores[broker]
        store = self._open(location)
        spec = self.opts.starting_offsets
        ts = self.opts.starting_timestamp
        if not self.queue_mode:
            tail = self._tail(broker, store)
            if ts is not None:  # no record that late: the sealed end (in a DLedger log not max_offset, §2.13)
                found, end = store.seek_time(ts), tail.walk(tail.min_offset).end
                found = end if found >= store.max_offset else min(found, end)
                return StoreOffset(position=tail.canonical(found))
            if spec.kind == "earliest":
                return StoreOffset(position=tail.min_offset)
            if spec.kind == "latest":
                return StoreOffset(position=tail.walk(tail.min_offset).end)
            position = spec.physical
            if position is None or not tail.is_record_start(position):
                raise OptionError(STARTING_OFFSETS, f"{position} is not the start of a record in {location}")
            return StoreOffset(position=tail.canonical(position))
        queues = self._queue_bounds(store, broker)
        ts_offset = None if ts is None else store.seek_time(ts)
        return StoreOffset(queues={queue: self._queue_start(store, queue, bounds, spec, ts_offset)
                                   for queue, bounds in queues.items()})

    def _queue_start(self, store: Store, queue: QueueKey, bounds: tuple[int, int], spec: OffsetSpec,
                     ts_offset: int | None) -> int:
        """Start of one queue; with startingTimestamp, the first unit at or after the log's time position."""
        low, high = bounds
        if ts_offset is not None:
            units = store.consume_queue(*queue).units(low, high)
            index = int(units["phy"].searchsorted(ts_offset))
            return int(units["queue_offset"][index]) if index < len(units) else high
        if spec.kind == "latest":
            return high
        if spec.kind == "queues":
            given = (spec.queues or {}).get(queue[0], {}).get(queue[1], -2)
            return low if given == -2 else high if given == -1 else store.consume_queue(*queue).floor(given)
        if spec.kind == "group":
            committed = store.consumer_offsets().get((queue[0], spec.group), {})
            # inside a BatchCQ batch: getMessage returns the whole batch (§4.5)
            return store.consume_queue(*queue).floor(committed.get(queue[1], low))
        return low

    def _topics(self, store: Store) -> tuple[str, ...]:
        if self.opts.topics:
            return self.opts.topics
        spec = self.opts.starting_offsets
        if spec.kind == "queues":
            return tuple(sorted(spec.queues or {}))
        committed = store.consumer_offsets()
        return tuple(sorted({topic for topic, group in committed if group == spec.group}))

    def _queue_bounds(self, store: Store, broker: str, *,
                      within_target: bool = True) -> dict[QueueKey, tuple[int, int]]:
        """(min, max) queue offset of each queue of the stream's topics; max within an availableNow target."""
        bounds: dict[QueueKey, tuple[int, int]] = {}
        target = self._target[broker].queues if self._target is not None and within_target else None
        for topic in self._topics(store):
            for queue_id in store.queue_ids(topic):
                queue = store.consume_queue(topic, queue_id)
                high = queue.max_offset
                if target is not None:
                    high = min(high, target.get((topic, queue_id), queue.min_offset))
                bounds[(topic, queue_id)] = (queue.min_offset, max(high, queue.min_offset))
        return bounds

    def _tail(self, broker: str, store: Store) -> CommitLogTail:
        cache = self._walk_caches.setdefault(broker, LogWalkCache())
        return CommitLogTail.of(store, cache, permissive=self.opts.mode == "PERMISSIVE")

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.max_bytes_per_trigger is not None:
            return ReadMaxBytes(self.opts.max_bytes_per_trigger)
        return ReadAllAvailable()

    def _limits(self, limit: ReadLimit) -> Limits:
        """Spark's limit for this trigger, combined with the other configured option (one ReadLimit only)."""
        if isinstance(limit, ReadAllAvailable):
            return NO_LIMITS
        records = limit.max_rows if isinstance(limit, ReadMaxRows) else self.opts.max_offsets_per_trigger
        nbytes = limit.max_bytes if isinstance(limit, ReadMaxBytes) else self.opts.max_bytes_per_trigger
        per_store = max(len(self.stores), 1)
        return Limits(records=None if records is None else max(records // per_store, 1),
                      bytes=None if nbytes is None else max(nbytes // per_store, 1))

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the end of an availableNow run: the sealed end of every store now (read limits still apply)."""
        self._target = None
        self._target = {broker: self._log_end(broker) for broker in self.stores}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        starts = offsets_from_json(start, self.stores)
        limits = self._limits(limit)
        ends = {broker: self._advance(broker, starts[broker], limits) for broker in self.stores}
        self._last_end = ends
        return offsets_to_json(ends)

    def _advance(self, broker: str, start: StoreOffset, limits: Limits) -> StoreOffset:
        location = self.stores[broker]
        store = self._open(location)
        if start.is_log:
            tail = self._tail(broker, store)
            position = start.position
            if position < tail.min_offset:
                _data_loss(self.opts.fail_on_data_loss, _lost_log_range(store, location, position))
                position = tail.min_offset
            stop = self._target[broker].position if self._target is not None else None
            end = tail.walk(position, limits, stop).end
            for skipped in tail.skipped:
                log.warning("rmqstore: %s", skipped)
            return StoreOffset(position=max(end, start.position))
        bounds = self._queue_bounds(store, broker)
        starts: dict[QueueKey, int] = {}
        for queue, (low, _high) in bounds.items():
            begin = (start.queues or {}).get(queue, low)
            if begin < low:
                _data_loss(self.opts.fail_on_data_loss, _lost_queue_range(location, queue, begin, low))
                begin = low
            starts[queue] = begin
        ends = {queue: max(high, starts[queue]) for queue, (_low, high) in bounds.items()}
        advanced = admit_queue_units(starts, ends, lambda queue, first, stop: store.consume_queue(*queue)
                                     .units(first, stop), limits)
        merged = dict(start.queues or {})
        merged.update(advanced)
        return StoreOffset(queues=merged)

    def _log_end(self, broker: str) -> StoreOffset:
        """The sealed end of a store now: where a stream with no limits would stop."""
        location = self.stores[broker]
        store = self._open(location)
        if self.queue_mode:
            bounds = self._queue_bounds(store, broker)
            return StoreOffset(queues={queue: high for queue, (_low, high) in bounds.items()})
        tail = self._tail(broker, store)
        return StoreOffset(position=tail.walk(tail.min_offset).end)

    def reportLatestOffset(self) -> dict:
        """The end of each log now, plus how far the latest planned batch end is behind it ("lag").

        Spark shows this as the source's `latestOffset` in the query progress (the Python API has no
        custom source metrics in 4.3): `{"<broker>": {"commitLogOffset": end, "lag": {"messages": m,
        "bytes": b}}}`, or `queueOffsets` ends in queue mode; in log mode `"heldAt": p` too while the
        log ends in a record still being written at p (docs/damage.md §2).
        """
        report: dict[str, Any] = {}
        for broker, location in self.stores.items():
            store = self._open(location)
            behind = self._last_end.get(broker) if self._last_end else None
            if self.queue_mode:
                end, messages, nbytes = self._queue_lag(store, broker, behind)
                held = None
            else:
                end, messages, nbytes, held = self._log_lag(store, broker, behind)
            report[broker] = {**end.to_json(), "lag": {"messages": messages, "bytes": nbytes}}
            if held is not None:
                report[broker]["heldAt"] = held
        return report

    def _log_lag(self, store: Store, broker: str,
                 behind: StoreOffset | None) -> tuple[StoreOffset, int, int, int | None]:
        """(sealed end of the log, records and bytes from `behind` to it, where the walk is held)."""
        tail = self._tail(broker, store)
        walked = tail.walk(tail.min_offset)
        end = walked.end
        at = end if behind is None else max(behind.position, tail.min_offset)
        nbytes = max(end - at, 0)
        return StoreOffset(position=end), tail.count_records(at, end) if nbytes else 0, nbytes, walked.held

    def _queue_lag(self, store: Store, broker: str,
                   behind: StoreOffset | None) -> tuple[StoreOffset, int, int]:
        """(max offset of every queue, messages and record bytes from `behind` to them)."""
        bounds = self._queue_bounds(store, broker, within_target=False)
        messages = nbytes = 0
        for queue, (low, high) in bounds.items():
            at = high if behind is None else max((behind.queues or {}).get(queue, low), low)
            if high > at:
                messages += high - at
                nbytes += int(store.consume_queue(*queue).units(at, high)["size"].sum())
        return StoreOffset(queues={queue: high for queue, (_low, high) in bounds.items()}), messages, nbytes

    def commit(self, end: dict) -> None:
        """Nothing to do: the store is read-only, and Spark commits one batch late anyway (design §7.3)."""

    # ---- planning and reading ------------------------------------------------------------------

    def partitions(self, start: dict, end: dict) -> list[StreamPartition]:
        """The batch's plan (`rmqstore.plan.stream`), a partition per task."""
        starts = offsets_from_json(start, self.stores)
        ends = offsets_from_json(end, self.stores)
        brokers = list(self.stores)
        stores = [self._open(self.stores[broker]) for broker in brokers]
        try:
            batches = [_batch_predicates(store, starts[broker], ends[broker])
                       for broker, store in zip(brokers, stores, strict=True)]
            plan = plan_stream_batch(stores, batches, PlanSettings(
                max_bytes_per_partition=self.opts.max_bytes_per_partition))
            log_ends = [ends[broker].position if ends[broker].is_log else store.max_offset
                        for broker, store in zip(brokers, stores, strict=True)]
        finally:
            for store in stores:
                store.close()
        return [self._partition(brokers[task.store_index], task, log_ends[task.store_index])
                for task in plan.tasks]

    def _partition(self, broker: str, task: ReadTask, log_end: int | None) -> StreamPartition:
        location = self.stores[broker]
        return StreamPartition(
            location=location, broker=broker, columns=self.columns, output_schema=self.output_schema,
            task=task, log_end=log_end, verify_crc=self.opts.verify_crc, mode=self.opts.mode,
            decompress=self.opts.decompress, fail_on_data_loss=self.opts.fail_on_data_loss,
            index_geometry=self.opts.index_geometry, max_message_size=self.opts.max_message_size,
            storage_options=self.opts.storage_options_for(location))

    def read(self, partition: StreamPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition)


def _batch_predicates(store: Store, first: StoreOffset, last: StoreOffset) -> tuple[Predicate, ...]:
    """A store's micro-batch [first, last) as the predicates a batch read of those offsets uses: a
    commit-log range (log mode) or queue windows (queue mode; a queue that appeared after `first` starts
    at its earliest offset, like a new Kafka partition)."""
    if first.is_log:
        return (Compare("commitLogOffset", ">=", first.position),
                Compare("commitLogOffset", "<", last.position))
    known = first.queues or {}
    windows = []
    for (topic, queue_id), stop in sorted((last.queues or {}).items()):
        begin = known[(topic, queue_id)] if (topic, queue_id) in known else \
            store.consume_queue(topic, queue_id).min_offset
        windows.append(QueueWindow(topic, queue_id, begin, stop))
    return (QueueWindows(tuple(windows)),)


def read_partition(part: StreamPartition) -> Iterator[pa.RecordBatch]:
    """Record batches of one partition in commit-log order (so every queue in queue-offset order): its
    task, less what retention deleted (`_still_stored`), run by `rmqstore.plan.execute`, the batch
    source's executor."""
    store = _open_store(part.location, part.index_geometry, part.max_message_size, part.storage_options,
                        part.log_end)
    wanted = list(part.columns) or ["commitLogOffset"]
    settings = ReadSettings(check_crc=part.verify_crc, mode=part.mode, decompress=part.decompress)
    for batch in run_task(_still_stored(store, part), store, wanted, settings):
        if batch.num_rows:
            yield output_batch(batch, part.output_schema, part.broker)


def _still_stored(store: Store, part: StreamPartition) -> ReadTask:
    """The partition's task; data it needs that is gone from the store is reported (`_data_loss`), and a
    commit-log range then starts at the earliest offset still stored."""
    task = part.task
    if isinstance(task, RangeTask):
        if task.start >= store.min_offset:
            return task
        _data_loss(part.fail_on_data_loss, _lost_log_range(store, part.location, task.start))
        return replace(task, start=store.min_offset, end=max(store.min_offset, task.end))
    for s in task.slices:
        first = store.consume_queue(s.topic, s.queue_id).min_offset
        if s.start < first:
            _data_loss(part.fail_on_data_loss,
                       _lost_queue_range(part.location, (s.topic, s.queue_id), s.start, first))
    return task
