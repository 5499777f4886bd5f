"""`rmqstore demo DIR`: write a realistic demo store (see `rmqstore.writer.demo`), or with `--production`
a production-shape store of many topics written fast (see `rmqstore.writer.bulk`)."""

from __future__ import annotations

import argparse
import sys
import time

from rmqstore.cli.options import parse_geometry, parse_size, progress
from rmqstore.writer.bulk import BulkShape, create_bulk_store
from rmqstore.writer.demo import create_demo_store


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("demo", help="write a realistic demo store")
    parser.add_argument("dir", help="directory to create (must be empty or absent)")
    parser.add_argument(
        "--size",
        type=parse_size,
        default=parse_size("200MB"),
        help="commit-log bytes to write, e.g. 200MB or 2GB (default 200MB)",
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed (same seed, same bytes)")
    parser.add_argument(
        "--segment-size",
        type=parse_size,
        default=None,
        help="commit-log segment size (default: about four segments)",
    )
    parser.add_argument(
        "--index-geometry",
        type=parse_geometry,
        default=None,
        metavar="S,N",
        help="maxHashSlotNum,maxIndexNum (default: the broker's 5000000,20000000)",
    )
    parser.add_argument(
        "--production",
        action="store_true",
        help="production shape, written fast: plain messages over --topics topics of --queues queues, "
        "1 GiB segments unless --segment-size; prints what the benchmarks look up as JSON",
    )
    parser.add_argument("--topics", type=int, default=100, help="topics of a --production store (100)")
    parser.add_argument("--queues", type=int, default=8, help="queues per topic of a --production store (8)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing store in DIR")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    geometry = {}
    if args.index_geometry:
        geometry = {"index_hash_slots": args.index_geometry[0], "index_entries": args.index_geometry[1]}
    started = time.perf_counter()
    with progress(args, args.size, "demo") as bar:
        if args.production:
            shape = BulkShape(target_bytes=args.size, topics=args.topics, queues=args.queues, seed=args.seed,
                              segment_size=args.segment_size or BulkShape.segment_size,
                              **geometry)
            print(create_bulk_store(args.dir, shape, overwrite=args.overwrite, progress=bar.update).to_json())
        else:
            create_demo_store(
                args.dir,
                target_bytes=args.size,
                seed=args.seed,
                segment_size=args.segment_size,
                overwrite=args.overwrite,
                progress=bar.update,
                **geometry,
            )
    seconds = time.perf_counter() - started
    print(
        f"wrote {args.size / (1 << 20):.1f} MiB of commit log to {args.dir} in {seconds:.1f} s "
        f"({args.size / (1 << 20) / seconds:.1f} MiB/s)",
        file=sys.stderr,
    )
    return 0
