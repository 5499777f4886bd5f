"""Batch readers of the "rmqstore" source: thin glue over `rmqstore.plan` and `rmqstore.store`.

`StoreReader` declares no `pushFilters`: Spark uses it when filter pushdown is off (the session
conf `spark.sql.python.filterPushdown.enabled`, or the source option `pushdown=false`) and for
queries without filters, so such reads always work as full, correct scans. `PushdownStoreReader`
adds `pushFilters`: filters it can answer exactly (design §3) are consumed (shown as
PushedFilters in explain()) and planned; the rest go back to Spark. Every decoded row is
confirmed against all consumed predicates before it is returned.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import uuid
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from rmqstore.format.record import LMQ_PREFIX
from rmqstore.format.table import COLUMN_NAMES
from rmqstore.notes import note_once
from rmqstore.plan.confirm import confirm
from rmqstore.plan.execute import ReadSettings, run_task
from rmqstore.plan.planner import PlanSettings, ReadPlan, plan_read
from rmqstore.plan.predicates import (
    Compare,
    InSet,
    KeysContainAny,
    Predicate,
    describe,
    predicate_columns,
    time_predicates,
)
from rmqstore.plan.queues import resolve_windows
from rmqstore.plan.tasks import RangesTask, RangeTask, ReadTask
from rmqstore.spark.contract_options import ENDING_OFFSETS, STARTING_OFFSETS
from rmqstore.spark.errors import cause_first
from rmqstore.spark.filters import to_predicate
from rmqstore.spark.guard import application_key, claim, new_plan_token
from rmqstore.spark.offsets import check_group_known
from rmqstore.spark.options import OffsetSpec, OptionError, RmqOptions
from rmqstore.spark.schema import message_columns, output_arrow_schema, output_batch
from rmqstore.spark.stores import open_store
from rmqstore.store import Store

log = logging.getLogger("rmqstore.spark")


class RmqPartition(InputPartition):
    """One read task plus what read() needs to confirm and label its rows.

    The store travels pickled with the valid end the planner found, so every task reads the
    same snapshot and none walks the active segment again.
    """

    def __init__(self, index: int, task: ReadTask, predicates: tuple[Predicate, ...], store: Store) -> None:
        super().__init__(index)
        self.index = index
        self.task = task
        self.predicates = predicates
        self.store = store


class StoreReader(DataSourceReader):
    """Reads the table without filter pushdown (options still restrict the rows)."""

    def __init__(self, options: RmqOptions, schema: StructType) -> None:
        _check_batch_offsets(options)
        self.options = options
        self.schema = schema
        self.pushed: list[Predicate] = []
        self.plan_token: str | None = None
        self.plan_key: str | None = None
        self.pushed_text = ""

    def partitions(self) -> list[InputPartition]:
        with cause_first():
            stores = [open_store(self.options, path) for path in self.options.paths]
        try:
            check_group_known(stores, self.options.starting_offsets, STARTING_OFFSETS)
            check_group_known(stores, self.options.ending_offsets, ENDING_OFFSETS)
            per_store = [tuple(self.pushed) + _option_predicates(self.options, store) for store in stores]
            plan = plan_read(stores, per_store, PlanSettings(
                max_bytes_per_partition=self.options.max_bytes_per_partition,
                min_partitions=self.options.min_partitions,
                key_probe_partition_threshold=self.options.key_probe_partition_threshold))
        finally:
            for store in stores:
                store.close()
        _log_plan(plan, self.pushed)
        range_bytes = sum(_scanned_bytes(t) for t in plan.tasks)
        self._write_stats({"event": "plan", "access": plan.access, "tasks": len(plan.tasks),
                           "range_bytes": range_bytes,
                           "notes": plan.notes, "pushed": [describe(p) for p in self.pushed]})
        return [RmqPartition(i, task, per_store[task.store_index], stores[task.store_index])
                for i, task in enumerate(plan.tasks)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RmqPartition):
            return  # an empty plan: Spark turns [] into [InputPartition(None)]
        if self.plan_token is not None and self.options.stale_reader_check:
            claim(self.plan_token, partition.index, self.pushed_text, self.plan_key)
        task = partition.task
        broker = self.options.broker_names[task.store_index]
        store = partition.store
        wanted = message_columns(self.schema)
        decode = _decode_columns(wanted, partition.predicates)
        target = output_arrow_schema(self.schema)
        settings = ReadSettings(check_crc=self.options.verify_crc, mode=self.options.mode,
                                decompress=self.options.decompress)
        rows = 0
        try:
            for batch in run_task(task, store, decode, settings):
                confirmed = confirm(batch, partition.predicates)
                if confirmed.num_rows:
                    rows += confirmed.num_rows
                    yield output_batch(confirmed, target, broker)
        finally:
            stats = store.stats
            self._write_stats({"event": "read", "partition": partition.index, "task": type(task).__name__,
                               "store": task.store_index, "rows": rows,
                               "records_decoded": stats.records_decoded,
                               "bytes_read": stats.bytes_read,
                               "segments_touched": sorted(stats.segments_touched),
                               "index_files_probed": stats.index_files_probed,
                               "invalid_records_skipped": stats.invalid_records_skipped,
                               "bytes_skipped": stats.bytes_skipped})
            skipped = stats.skip_summary()
            if skipped:  # once per task, on the worker's stderr (the executor log)
                print(f"{skipped} (task {partition.index})", file=sys.stderr)
            store.close()

    def _write_stats(self, record: dict) -> None:
        """Append one JSON line to a file under the `statsDir` option (diagnostics, tests)."""
        if not self.options.stats_dir:
            return
        os.makedirs(self.options.stats_dir, exist_ok=True)
        name = os.path.join(self.options.stats_dir, f"{os.getpid()}-{uuid.uuid4().hex}.jsonl")
        with open(name, "a") as f:
            f.write(json.dumps(record) + "\n")


class PushdownStoreReader(StoreReader):
    """`StoreReader` with filter pushdown."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        consumed: list[Predicate] = []
        for spark_filter in filters:
            predicate = to_predicate(spark_filter)
            if predicate is None:
                yield spark_filter
            else:
                consumed.append(predicate)
        self.pushed = consumed
        if consumed:
            self.plan_token = new_plan_token()
            self.plan_key = application_key()
            self.pushed_text = "; ".join(describe(p) for p in consumed)


def _check_batch_offsets(options: RmqOptions) -> None:
    if options.starting_offsets.kind == "latest":
        raise OptionError(STARTING_OFFSETS, "'latest' is not allowed for batch queries (it reads nothing)")
    if options.ending_offsets.kind == "earliest":
        raise OptionError(ENDING_OFFSETS, "'earliest' is not allowed for batch queries (it reads nothing)")


def _option_predicates(options: RmqOptions, store: Store) -> tuple[Predicate, ...]:
    """Row restrictions given as options (part of the DataFrame, not pushed filters)."""
    preds: list[Predicate] = []
    starting = _queue_offsets(options.starting_offsets, store)
    ending = _queue_offsets(options.ending_offsets, store)
    if options.topics is not None and any(t.startswith(LMQ_PREFIX) for t in options.topics):
        # an LMQ queue's records keep their own topic: naming one makes the read a queue read (§4.6)
        starting = {**{t: {} for t in options.topics}, **(starting or {})}
    elif options.topics is not None:
        preds.append(InSet("topic", options.topics))
    if options.keys is not None:
        preds.append(KeysContainAny(options.keys))
    ending_ms = options.ending_timestamp  # exclusive, like Kafka's endingTimestamp
    preds.extend(time_predicates(options.starting_timestamp, None if ending_ms is None else ending_ms - 1))
    if options.starting_offsets.kind == "physical":
        preds.append(Compare("commitLogOffset", ">=", options.starting_offsets.physical))
    if options.ending_offsets.kind == "physical":
        preds.append(Compare("commitLogOffset", "<", options.ending_offsets.physical))
    if starting is not None or ending is not None:
        preds.append(resolve_windows(store, starting, ending, options.topics))
    return tuple(preds)


def _queue_offsets(spec: OffsetSpec, store: Store) -> dict[str, dict[int, int]] | None:
    if spec.kind == "queues":
        return {topic: dict(queues) for topic, queues in spec.queues.items()}
    if spec.kind == "group":
        return {topic: dict(queues) for (topic, group), queues in store.consumer_offsets().items()
                if group == spec.group}
    return None


def _decode_columns(wanted: Sequence[str], predicates: Sequence[Predicate]) -> tuple[str, ...]:
    """The user's columns plus those the confirmation needs, in table order."""
    needed = set(wanted) | set(predicate_columns(predicates))
    return tuple(name for name in COLUMN_NAMES if name in needed)


def _scanned_bytes(task: ReadTask) -> int:
    """Commit-log bytes a task plans to scan (0 for index, offset and queue reads)."""
    if isinstance(task, RangeTask):
        return task.end - task.start
    if isinstance(task, RangesTask):
        return sum(end - start for start, end in task.ranges)
    return 0


def _log_plan(plan: ReadPlan, pushed: Sequence[Predicate]) -> None:
    text = "; ".join(describe(p) for p in pushed) or "none"
    message = f"rmqstore plan: access={plan.access} tasks={len(plan.tasks)} pushed filters: {text}"
    log.info(message)
    for note in plan.notes:
        note_once(note)
