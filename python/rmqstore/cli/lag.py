"""`rmqstore lag STORE [--group G] [--topic T]`: each consumer group's backlog per topic and queue, in
messages, bytes and time (design §10, `rmqstore.plan.lag`)."""

from __future__ import annotations

import argparse

from rmqstore.cli.options import add_output_arguments, add_store_arguments, format_time, open_store
from rmqstore.cli.output import print_fields, print_json, print_table
from rmqstore.plan.lag import LagReport, LagState, QueueLag, consumer_lag

UNKNOWN = "unknown"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lag", help="consumer groups' backlog per queue: messages, bytes, oldest unconsumed store time"
    )
    add_store_arguments(parser)
    parser.add_argument("--group", help="only this consumer group (its %%RETRY%% topic included)")
    parser.add_argument("--topic", help="only this topic")
    add_output_arguments(parser)
    parser.set_defaults(func=run)


def format_age(ms: int | None) -> str:
    """A lag in time for people: `3d 4h 5m 6.789s`, negative with a leading `-`; '' for None."""
    if ms is None:
        return ""
    sign, rest = ("-" if ms < 0 else ""), abs(ms)
    parts = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000)):
        if rest >= size or parts:
            parts.append(f"{rest // size}{unit}")
            rest %= size
    return sign + " ".join([*parts, f"{rest / 1000:g}s"])


def _cells(lag: QueueLag) -> tuple:
    known = lag.state is LagState.OK
    return (lag.group, lag.topic, lag.queue_id, str(lag.state),
            "none" if lag.committed_offset is None else lag.committed_offset, lag.min_offset, lag.max_offset,
            lag.messages if known else UNKNOWN, lag.bytes if known else UNKNOWN,
            format_time(lag.oldest_store_time), format_age(lag.age_ms))


def print_report(report: LagReport) -> None:
    """The report as text: the log end, then one line per (group, topic, queue)."""
    print_fields("Consumer lag", [("log end store time", format_time(report.log_end_time) or UNKNOWN)])
    print_table("Queues",
                ["group", "topic", "queue", "state", "committed", "min offset", "max offset", "messages",
                 "bytes", "oldest unconsumed", "age"],
                [_cells(lag) for lag in report.queues])


def run(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        report = consumer_lag(store, args.group, args.topic)
    if args.json:
        print_json({"logEndTimestamp": report.log_end_time, "queues": [q.to_json() for q in report.queues]})
    else:
        print_report(report)
    return 0
