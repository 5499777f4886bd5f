"""The `rmqstore` command: info, lag, dump, query, trace, verify, demo, bench.

Tables for people, `--json` for scripts; progress bars go to stderr. Exit status 0 on success, 1
when `verify` finds the store unsound, 2 for usage errors and stores that cannot be read.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rmqstore import __version__
from rmqstore.cli import bench, demo, dump, info, lag, query, trace, verify
from rmqstore.store import StoreError

COMMANDS = (info, lag, dump, query, trace, verify, demo, bench)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rmqstore", description="Read Apache RocketMQ broker stores offline."
    )
    parser.add_argument("--version", action="version", version=f"rmqstore {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `rmqstore` script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (StoreError, FileExistsError, ValueError) as exc:
        print(f"rmqstore {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
