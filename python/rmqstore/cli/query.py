"""`rmqstore query`: messages by key, unique key, message id, or topic and time range, without caps.

Keys follow RocketMQ's queryMsgByKey meaning (K is one of the record's space-separated KEYS), but
every index candidate is confirmed against the record, so hash collisions never show up, and there
is no 64/32-result cap. When the index cannot answer completely the commit log is scanned instead.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence

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
from rmqstore.format.table import COLUMN_NAMES
from rmqstore.plan.confirm import confirm
from rmqstore.plan.predicates import Compare, KeysContainAny, Predicate, predicate_columns, time_predicates
from rmqstore.store import IndexUnavailableError, Store

_READ_CHUNK = 4096


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("query", help="messages by key, uniq key, msg id, or topic + time range")
    add_store_arguments(parser)
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--key", help="a business key: messages whose KEYS include it")
    what.add_argument("--uniq-key", help="a client message id (UNIQ_KEY)")
    what.add_argument("--msg-id", type=parse_msg_id,
                      help="a broker offsetMsgId (a UNIQ_KEY is accepted too, like mqadmin)")
    parser.add_argument("--topic", help="only this topic (required without --key/--uniq-key/--msg-id)")
    parser.add_argument("--begin", type=parse_time_ms, help="storeTimestamp >= this (epoch ms or ISO-8601)")
    parser.add_argument("--end", type=parse_time_ms, help="storeTimestamp <= this (epoch ms or ISO-8601)")
    add_columns_argument(parser)
    parser.set_defaults(func=run)


def _scan_matching(store: Store, start: int, end: int, predicates: Sequence[Predicate],
                   args: argparse.Namespace) -> list[int]:
    """Offsets of the records in [start, end) satisfying every predicate."""
    found: list[int] = []
    with progress(args, max(end - start, 0), "scan") as bar:
        for batch in store.scan(start, end, ["commitLogOffset", *predicate_columns(predicates)]):
            if not batch.num_rows:
                continue
            found += confirm(batch, predicates).column("commitLogOffset").to_pylist()
            bar.update(batch.column("commitLogOffset")[-1].as_py() - start - bar.n)
    return found


def _topic_and_time(args: argparse.Namespace) -> tuple[Predicate, ...]:
    """--topic, --begin and --end as predicates (the window is inclusive epoch ms)."""
    topic = () if args.topic is None else (Compare("topic", "=", args.topic),)
    return (*topic, *time_predicates(args.begin, args.end))


def _by_index(store: Store, args: argparse.Namespace, value: str, column: str) -> list[int]:
    topics = [args.topic] if args.topic else None
    lookup = store.find_by_key if column == "keys" else store.find_by_uniq_key
    try:
        found = lookup(value, topics, args.begin, args.end)
        if store.side_index().note:
            print(f"rmqstore: {store.side_index().note}", file=sys.stderr)
        return found
    except IndexUnavailableError as exc:
        print(f"index unusable ({exc}); scanning the commit log", file=sys.stderr)
    match = KeysContainAny((value,)) if column == "keys" else Compare("uniqKey", "=", value)
    return _scan_matching(store, store.min_offset, store.max_offset, (match, *_topic_and_time(args)), args)


def _by_topic_and_time(store: Store, args: argparse.Namespace) -> list[int]:
    ranges = store.time_ranges(args.begin, args.end)  # the first to the last record of the window
    start, end = (ranges[0][0], ranges[-1][1]) if ranges else (store.min_offset, store.min_offset)
    return _scan_matching(store, start, end, _topic_and_time(args), args)


def find_offsets(store: Store, args: argparse.Namespace) -> list[int]:
    """Physical offsets of the matching records, ascending."""
    if args.key is not None:
        return _by_index(store, args, args.key, "keys")
    if args.uniq_key is not None:
        return _by_index(store, args, args.uniq_key, "uniqKey")
    if args.msg_id is not None:
        offsets = store.find_by_msg_id(args.msg_id)
        if not offsets:  # mqadmin queryMsgById falls back to the id as a UNIQ_KEY (§3.3)
            offsets = _by_index(store, args, args.msg_id, "uniqKey")
        return offsets
    return _by_topic_and_time(store, args)


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
        offsets = find_offsets(store, args)
        if args.msg_id is not None and args.topic is not None:
            on_topic = (Compare("topic", "=", args.topic),)
            batches = (
                confirm(b, on_topic)
                for b in read_in_order(store, offsets, list(dict.fromkeys([*columns, "topic"])))
            )
            for batch in batches:
                count += write_jsonl(batch.select(columns), sys.stdout)
        else:
            for batch in read_in_order(store, offsets, columns):
                count += write_jsonl(batch, sys.stdout)
        check_topic_found(store, args.topic, count)
    print(f"{count} messages", file=sys.stderr)
    return 0
