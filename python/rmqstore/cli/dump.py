"""`rmqstore dump STORE --format jsonl`: every message in commit-log order, one JSON object per line."""

from __future__ import annotations

import argparse
import sys

import pyarrow.compute as pc

from rmqstore.cli.options import (
    add_store_arguments,
    check_topic_found,
    open_store,
    parse_offset,
    progress,
)
from rmqstore.cli.output import write_jsonl
from rmqstore.format.table import COLUMN_NAMES, arrow_schema
from rmqstore.store.errors import FAILFAST, PERMISSIVE


def parse_columns(text: str | None) -> list[str]:
    """`a,b` -> ["a", "b"] checked against the table (all columns when None)."""
    if text is None:
        return list(COLUMN_NAMES)
    columns = [name.strip() for name in text.split(",") if name.strip()]
    try:
        arrow_schema(columns)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return columns


def add_columns_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--columns",
        type=parse_columns,
        default=None,
        metavar="A,B,...",
        help=f"columns to print, in this order (default: all: {','.join(COLUMN_NAMES)})",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dump", help="messages as JSON lines (body base64, timestamps epoch ms, properties an object)"
    )
    add_store_arguments(parser)
    parser.add_argument("--format", choices=["jsonl"], default="jsonl", help="output format (jsonl)")
    add_columns_argument(parser)
    parser.add_argument(
        "--start",
        type=parse_offset,
        default=None,
        metavar="OFF",
        help="first physical offset (any byte: the next record start is used)",
    )
    parser.add_argument(
        "--end", type=parse_offset, default=None, metavar="OFF",
        help="records starting before this offset"
    )
    parser.add_argument("--topic", default=None, help="only messages stored under this topic")
    parser.add_argument(
        "--permissive",
        action="store_true",
        help="step over damaged records (counted, one line on stderr at the end) instead of stopping "
        "at the first one with exit status 2",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    columns = args.columns or list(COLUMN_NAMES)
    scan_columns = list(dict.fromkeys([*columns, "commitLogOffset", *(["topic"] if args.topic else [])]))
    count = 0
    with open_store(args) as store:
        start = store.min_offset if args.start is None else args.start
        end = store.max_offset if args.end is None else args.end
        with progress(args, max(end - start, 0), "dump") as bar:
            mode = PERMISSIVE if args.permissive else FAILFAST
            for batch in store.scan(start, end, scan_columns, mode=mode):
                if batch.num_rows:
                    bar.update(batch.column("commitLogOffset")[-1].as_py() - start - bar.n)
                if args.topic is not None:
                    batch = batch.filter(pc.equal(batch.column("topic"), args.topic))
                count += write_jsonl(batch.select(columns), sys.stdout)
        check_topic_found(store, args.topic, count)
        skipped = store.stats.skip_summary()
    print(f"{count} messages", file=sys.stderr)
    if skipped:
        print(skipped, file=sys.stderr)
    return 0
