"""`rmqstore info STORE`: what is in a store, without reading every record (the log past its valid
end is searched for records a restarted broker would overwrite, `CommitLog.after_end`)."""

from __future__ import annotations

import argparse
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from rmqstore.cli.options import add_output_arguments, add_store_arguments, format_time, open_store
from rmqstore.cli.output import print_fields, print_json, print_table
from rmqstore.plan.lag import LagReport, LagState, consumer_lag
from rmqstore.plan.tasks import split_spans
from rmqstore.store import Store, StoreError

_TAIL_RANGE_BYTES = 16 << 20
"""Scan ranges of this size from the end to find the last record (a record is at most 4 MiB)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "info", help="segments, topics and queues, index files, checkpoint, abort state"
    )
    add_store_arguments(parser)
    add_output_arguments(parser)
    parser.set_defaults(func=run)


def _times(batch: pa.RecordBatch) -> list[int]:
    return [v // 1000 for v in pc.cast(batch.column("storeTimestamp"), pa.int64()).to_pylist()]


def store_time_span(store: Store) -> tuple[int | None, int | None]:
    """(first, last) storeTimestamp of the valid log; reads the first and the last record only."""
    first = None
    for batch in store.scan(columns=["storeTimestamp"]):
        if batch.num_rows:
            first = _times(batch)[0]
            break
    if first is None:
        return None, None
    for start, end in reversed(split_spans(store.segment_spans(), _TAIL_RANGE_BYTES)):
        times = [t for batch in store.scan(start, end, ["storeTimestamp"]) for t in _times(batch)]
        if times:
            return first, times[-1]
    return first, None


def group_lags(report: LagReport) -> list[dict[str, Any]]:
    """Per (topic, group): its queues and its lag in messages, None when a queue's lag is unknown (design §10;
    `unknown` counts those queues)."""
    by_key: dict[tuple[str, str], list] = {}
    for lag in report.queues:
        by_key.setdefault((lag.topic, lag.group), []).append(lag)
    groups = []
    for (topic, group), lags in sorted(by_key.items()):
        unknown = sum(lag.state is not LagState.OK for lag in lags)
        total = None if unknown else sum(lag.messages for lag in lags)
        groups.append({"topic": topic, "group": group, "queues": len(lags), "lag": total, "unknown": unknown})
    return groups


def collect(store: Store) -> dict[str, Any]:
    """Everything `info` shows, as one JSON-ready document."""
    max_offset = store.max_offset
    segments = [
        {
            "baseOffset": s.base_offset,
            "path": s.path,
            "size": s.size,
            "state": "data" if s.base_offset < max_offset else "empty (pre-allocated or stale)",
        }
        for s in store.segments
    ]
    notes: list[str] = []  # optional metadata that cannot be read: a problem, the rest is still shown
    queues: list[dict[str, Any]] = []
    for topic in store.topics():
        for queue_id in store.queue_ids(topic):
            queue = store.consume_queue(topic, queue_id)
            queues.append(
                {
                    "topic": topic,
                    "queueId": queue_id,
                    "minOffset": queue.min_offset,
                    "maxOffset": queue.max_offset,
                }
            )
    try:
        groups = group_lags(consumer_lag(store))
    except StoreError as exc:
        groups = []
        notes.append(str(exc))
    index_files = []
    for info in store.index_files:
        header = info.header
        index_files.append(
            {
                "name": info.name,
                "size": info.size,
                "hashSlots": info.geometry[0] if info.geometry else None,
                "indexEntries": info.geometry[1] if info.geometry else None,
                "entries": header.entry_count if header else None,
                "usedSlots": header.used_slots if header else None,
                "beginTimestamp": header.begin_timestamp if header else None,
                "endTimestamp": header.end_timestamp if header else None,
                "beginPhyOffset": header.begin_phy_offset if header else None,
                "endPhyOffset": header.end_phy_offset if header else None,
                "problem": info.problem,
            }
        )
    after = store.log.after_end()
    first, last = store_time_span(store)
    try:
        checkpoint = store.checkpoint
    except StoreError as exc:
        checkpoint = None
        notes.append(str(exc))
    return {
        "store": store.location,
        "shape": store.shape.to_json(),
        "segmentSize": store.segment_size,
        "minOffset": store.min_offset,
        "maxOffset": max_offset,
        "logEnd": store.log_end.reason,
        "afterEnd": {"records": after.records, "bytes": after.bytes, "firstOffset": after.first,
                     "text": after.describe() if after.records else None},
        "firstStoreTimestamp": first,
        "lastStoreTimestamp": last,
        "abortPresent": store.abort_present,
        "checkpoint": None
        if checkpoint is None
        else {
            "physicMsgTimestamp": checkpoint.physic_msg_timestamp,
            "logicsMsgTimestamp": checkpoint.logics_msg_timestamp,
            "indexMsgTimestamp": checkpoint.index_msg_timestamp,
            "masterFlushedOffset": checkpoint.master_flushed_offset,
            "confirmPhyOffset": checkpoint.confirm_phy_offset,
        },
        "segments": segments,
        "queues": queues,
        "indexFiles": index_files,
        "consumerGroups": groups,
        "problems": store.problems + notes,
    }


def run(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        doc = collect(store)
    if args.json:
        print_json(doc)
        return 0
    shutdown = (
        "abort file present: crashed, or a broker is running" if doc["abortPresent"] else "clean shutdown"
    )
    print_fields(
        "Store",
        [
            ("path", doc["store"]),
            ("shape", doc["shape"]["description"]),
            ("segment size", doc["segmentSize"]),
            (
                "log",
                f"[{doc['minOffset']}, {doc['maxOffset']})  ({doc['maxOffset'] - doc['minOffset']} bytes)",
            ),
            ("log end", doc["logEnd"]),
            ("after the end", doc["afterEnd"]["text"] or "no valid record"),
            (
                "store times",
                f"{format_time(doc['firstStoreTimestamp'])} .. {format_time(doc['lastStoreTimestamp'])}",
            ),
            ("state", shutdown),
        ],
    )
    print_table(
        "Commit-log segments",
        ["base offset", "size", "state"],
        [(s["baseOffset"], s["size"], s["state"]) for s in doc["segments"]],
    )
    print_table(
        "Consume queues",
        ["topic", "queue", "min offset", "max offset", "messages"],
        [
            (q["topic"], q["queueId"], q["minOffset"], q["maxOffset"], q["maxOffset"] - q["minOffset"])
            for q in doc["queues"] or ()
        ],
    )
    print_table(
        "Index files",
        [
            "name",
            "slots",
            "entries cap",
            "entries",
            "used slots",
            "begin time",
            "end time",
            "begin phy",
            "end phy",
            "problem",
        ],
        [
            (
                f["name"],
                f["hashSlots"],
                f["indexEntries"],
                f["entries"],
                f["usedSlots"],
                format_time(f["beginTimestamp"]),
                format_time(f["endTimestamp"]),
                f["beginPhyOffset"],
                f["endPhyOffset"],
                f["problem"] or "",
            )
            for f in doc["indexFiles"]
        ],
    )
    checkpoint = doc["checkpoint"]
    if checkpoint is not None:
        print_fields(
            "Checkpoint",
            [
                (
                    "physicMsgTimestamp",
                    f"{checkpoint['physicMsgTimestamp']}  {format_time(checkpoint['physicMsgTimestamp'])}",
                ),
                (
                    "logicsMsgTimestamp",
                    f"{checkpoint['logicsMsgTimestamp']}  {format_time(checkpoint['logicsMsgTimestamp'])}",
                ),
                (
                    "indexMsgTimestamp",
                    f"{checkpoint['indexMsgTimestamp']}  {format_time(checkpoint['indexMsgTimestamp'])}",
                ),
                ("masterFlushedOffset", checkpoint["masterFlushedOffset"]),
                ("confirmPhyOffset", checkpoint["confirmPhyOffset"]),
            ],
        )
    print_table(
        "Consumer groups",
        ["topic", "group", "queues", "lag"],
        [(g["topic"], g["group"], g["queues"],
          g["lag"] if g["lag"] is not None else f"unknown ({g['unknown']} queues: rmqstore lag)")
         for g in doc["consumerGroups"]],
    )
    if doc["problems"]:
        print_fields("Problems", [(str(i + 1), p) for i, p in enumerate(doc["problems"])])
    return 0
