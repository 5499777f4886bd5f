"""`rmqstore bench STORE`: decode throughput of a full scan (messages/s and MB/s)."""

from __future__ import annotations

import argparse
import time

from rmqstore.cli.dump import parse_columns
from rmqstore.cli.options import add_output_arguments, add_store_arguments, open_store, progress
from rmqstore.cli.output import print_fields, print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="decode throughput of a scan")
    add_store_arguments(parser)
    parser.add_argument(
        "--columns",
        type=parse_columns,
        default=None,
        metavar="A,B,...",
        help="decode only these columns (default: all)",
    )
    parser.add_argument("--check-crc", action="store_true", help="also check every BODYCRC")
    add_output_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    messages = 0
    with open_store(args) as store:
        start, end = store.min_offset, store.max_offset
        began = time.perf_counter()
        with progress(args, None, "bench", unit="msg") as bar:
            for batch in store.scan(start, end, args.columns, check_crc=args.check_crc):
                messages += batch.num_rows
                bar.update(batch.num_rows)
        seconds = max(time.perf_counter() - began, 1e-9)
    # 3 significant digits: a slow scan of a small store must not read as 0.0 MB/s
    result = {
        "messages": messages,
        "bytes": end - start,
        "seconds": round(seconds, 3),
        "messagesPerSecond": round(messages / seconds),
        "megabytesPerSecond": float(f"{(end - start) / seconds / 1e6:.3g}"),
        "columns": args.columns or "all",
        "checkCrc": args.check_crc,
    }
    if args.json:
        print_json(result)
    else:
        print_fields("Scan throughput", [(k, v) for k, v in result.items()])
    return 0
