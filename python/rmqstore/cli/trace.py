"""`rmqstore trace STORE... (--key K | --uniq-key U | --msg-id M) [--brokers a,b]`: every stored copy of a
message across brokers' stores in time order, labelled with what RocketMQ did, with its message-trace records
(§10), then each consumer group's state (§3.4, `rmqstore.plan.life`)."""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack

from rmqstore.cli.options import add_output_arguments, format_time, parse_geometry, parse_msg_id
from rmqstore.cli.output import print_json, print_table
from rmqstore.plan.life import Event
from rmqstore.plan.life_store import message_life
from rmqstore.store import Store


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "trace", help="a message's whole life: its stored copies (delays, transactions, retries, DLQ) and "
                      "each consumer group's state"
    )
    parser.add_argument("stores", nargs="+", metavar="STORE",
                        help="store roots (storePathRootDir) or URIs, one per broker")
    parser.add_argument("--brokers", help="broker names, comma-separated, one per store (default: the paths, "
                        "like the Spark table's broker column)")
    parser.add_argument("--index-geometry", type=parse_geometry, metavar="S,N",
                        help="maxHashSlotNum,maxIndexNum of the brokers (default: detected per index file)")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--key", help="a business key: one of the message's KEYS")
    what.add_argument("--uniq-key", help="the client message id (UNIQ_KEY)")
    what.add_argument("--msg-id", type=parse_msg_id,
                      help="a broker offsetMsgId (a UNIQ_KEY is accepted too, like mqadmin)")
    add_output_arguments(parser)
    parser.set_defaults(func=run)


def broker_names(stores: list[str], names: str | None) -> list[str]:
    """One broker name per store: `--brokers`, or the paths as given (as the `brokerNames` option does)."""
    if names is None:
        return [p.rstrip("/") or p for p in stores]
    given = [n.strip() for n in names.split(",")]
    if len(given) != len(stores) or not all(given):
        raise ValueError(f"--brokers needs one non-empty name per store ({len(stores)}), got {names!r}")
    return given


HEADERS = ("time", "event", "broker", "topic", "queue", "queue offset", "commit-log offset", "group",
           "detail")


def _cells(event: Event) -> tuple:
    return (format_time(event.time), str(event.event), event.broker, event.topic, event.queue_id,
            event.queue_offset, event.commit_log_offset, event.group, event.detail)


def run(args: argparse.Namespace) -> int:
    column, value = (("keys", args.key) if args.key is not None else ("uniqKey", args.uniq_key)
                     if args.uniq_key is not None else ("msgId", args.msg_id))
    brokers = broker_names(args.stores, args.brokers)
    with ExitStack() as stack:
        stores = {b: stack.enter_context(Store.open(p, index_geometry=args.index_geometry))
                  for b, p in zip(brokers, args.stores, strict=True)}
        events = message_life(stores, column, value)
    if args.json:
        print_json({"events": [e.to_json() for e in events]})
    else:
        print_table(f"Life of the message with {column} {value}", HEADERS, [_cells(e) for e in events])
    if not events:
        print(f"rmqstore trace: no stored copy has {column} {value}", file=sys.stderr)
    return 0 if events else 1
