"""`rmqstore query`: messages by key, unique key, message id, or topic and time range, without caps.

Keys follow RocketMQ's queryMsgByKey meaning (K is one of the record's space-separated KEYS). The
options become predicates, and the store is read the way the Spark source reads it
(`rmqstore.plan.lookup`: plan, read, confirm): index candidates confirmed against the record, so hash
collisions never show up, ROLLBACK records and records the index lacks come from the side index, and
there is no 64/32-result cap; when the index cannot answer completely the planner scans instead. The
plan's notes (a side index built, a scan instead of the index) go to stderr through `rmqstore.notes`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

import pyarrow as pa

from rmqstore.cli.dump import add_columns_argument
from rmqstore.cli.options import (
    add_store_arguments,
    check_topic_found,
    open_store,
    parse_msg_id,
    parse_time_ms,
    progress,
)
from rmqstore.cli.output import write_jsonl
from rmqstore.format.record import LMQ_PREFIX
from rmqstore.format.table import COLUMN_NAMES
from rmqstore.notes import note
from rmqstore.plan.lookup import find, key_predicates, msg_id_predicates, uniq_key_predicates
from rmqstore.plan.predicates import InSet, Predicate, time_predicates
from rmqstore.store import Store

_READ_CHUNK = 4096


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("query", help="messages by key, uniq key, msg id, or topic + time range")
    add_store_arguments(parser)
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--key", help="a business key: messages whose KEYS include it")
    what.add_argument("--uniq-key", help="a client message id (UNIQ_KEY)")
    what.add_argument("--msg-id", type=parse_msg_id,
                      help="a broker offsetMsgId (a UNIQ_KEY is accepted too, like mqadmin)")
    parser.add_argument("--topic", help="only this topic (required without --key/--uniq-key/--msg-id); "
                        "alone, an %%LMQ%% queue name reads that queue's messages")
    parser.add_argument("--begin", type=parse_time_ms, help="storeTimestamp >= this (epoch ms or ISO-8601)")
    parser.add_argument("--end", type=parse_time_ms, help="storeTimestamp <= this (epoch ms or ISO-8601)")
    add_columns_argument(parser)
    parser.set_defaults(func=run)


def _predicates(args: argparse.Namespace, *, msg_id_as_uniq_key: bool = False) -> tuple[Predicate, ...]:
    """The query's options as predicates (`--msg-id` read as a UNIQ_KEY when asked)."""
    topics = None if args.topic is None else [args.topic]
    if args.key is not None:
        return key_predicates(args.key, topics, args.begin, args.end)
    if args.uniq_key is not None or msg_id_as_uniq_key:
        uniq_key = args.uniq_key if args.uniq_key is not None else args.msg_id
        return uniq_key_predicates(uniq_key, topics, args.begin, args.end)
    if args.msg_id is not None:
        return msg_id_predicates(args.msg_id, topics, args.begin, args.end)
    return (InSet("topic", (args.topic,)), *time_predicates(args.begin, args.end))


def _find(store: Store, predicates: tuple[Predicate, ...], args: argparse.Namespace) -> list[int]:
    """Offsets of the matching records, ascending; the plan's notes shown (`rmqstore.notes`)."""
    with progress(args, None, "read", unit="task") as bar:
        found = find(store, predicates, task_done=lambda: bar.update(1))
    for text in found.plan.notes:
        note(text)
    return found.offsets


def _lmq_offsets(store: Store, args: argparse.Namespace) -> tuple[int, ...] | None:
    """The records of the LMQ queue `--topic` names, when it names one and nothing else is asked (§4.6):
    they keep their own topic, so the queue's units say which they are."""
    topic = args.topic
    if (topic is None or not topic.startswith(LMQ_PREFIX) or topic not in store.topics()
            or (args.key, args.uniq_key, args.msg_id) != (None, None, None)):
        return None
    units = [store.consume_queue(topic, q).units()["phy"] for q in store.queue_ids(topic)]
    return tuple(sorted({int(phy) for part in units for phy in part}))


def find_offsets(store: Store, args: argparse.Namespace) -> list[int]:
    """Physical offsets of the matching records, ascending."""
    lmq = _lmq_offsets(store, args)
    if lmq is not None:
        return _find(store, (InSet("commitLogOffset", lmq), *time_predicates(args.begin, args.end)), args)
    offsets = _find(store, _predicates(args), args)
    if not offsets and args.msg_id is not None:  # like mqadmin queryMsgById: the id as a UNIQ_KEY (§3.3)
        offsets = _find(store, _predicates(args, msg_id_as_uniq_key=True), args)
    return offsets


def read_in_order(store: Store, offsets: Iterable[int], columns: list[str]) -> Iterable[pa.RecordBatch]:
    ordered = sorted(set(offsets))
    for first in range(0, len(ordered), _READ_CHUNK):
        yield store.read_offsets(ordered[first : first + _READ_CHUNK], columns, strict=False)


def run(args: argparse.Namespace) -> int:
    if args.key is None and args.uniq_key is None and args.msg_id is None and args.topic is None:
        raise SystemExit("rmqstore query: give --key, --uniq-key, --msg-id, or --topic (with --begin/--end)")
    columns = args.columns or list(COLUMN_NAMES)
    count = 0
    with open_store(args) as store:
        for batch in read_in_order(store, find_offsets(store, args), columns):
            count += write_jsonl(batch, sys.stdout)
        check_topic_found(store, args.topic, count)
    print(f"{count} messages", file=sys.stderr)
    return 0
