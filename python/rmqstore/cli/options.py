"""Arguments shared by the `rmqstore` subcommands: the store, sizes, times, progress bars."""

from __future__ import annotations

import argparse
import datetime
import re
from typing import Any

from tqdm import tqdm

from rmqstore.format.msgid import message_id_problem
from rmqstore.store import Store, UnknownNameError

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """`200MB`, `2GB`, `512k`, `1048576` -> bytes (K/M/G/T are powers of 1024)."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 200MB, 2GB, 65536)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def parse_offset(text: str) -> int:
    """A physical commit-log offset: a non-negative integer."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an offset: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"offset {value} is negative (physical offsets start at 0)")
    return value


def parse_msg_id(text: str) -> str:
    """An offsetMsgId or UNIQ_KEY as typed; malformed ids are refused, naming them."""
    problem = message_id_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a message id (offsetMsgId or UNIQ_KEY): {problem}")
    return text


def check_topic_found(store: Store, topic: str | None, found: int) -> None:
    """UnknownNameError when `topic` gave no message and the store does not know it (no consume queue,
    not in config/topics.json): a typo must not read as an empty answer. A topic known there, or
    one whose messages were read, is a real topic (the log has topics without consume queues)."""
    if topic is None or found:
        return
    known = store.topics()
    if topic not in known:
        raise UnknownNameError("topic", topic, known,
                               "is not in this store (no consume queue, not in config/topics.json, "
                               "no message read)")


def parse_time_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO-8601 date/time (UTC when it has no offset) -> epoch ms."""
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not epoch ms or ISO-8601: {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def parse_geometry(text: str) -> tuple[int, int]:
    """`S,N` (maxHashSlotNum, maxIndexNum) -> (S, N)."""
    try:
        slots, entries = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"index geometry must be 'hashSlots,indexEntries', got {text!r}"
        ) from None
    return slots, entries


def format_time(ms: int | None) -> str:
    """Epoch ms as ISO-8601 UTC with milliseconds ('' for None or 0; a note outside years 1-9999)."""
    if not ms:
        return ""
    try:
        moment = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    except (OverflowError, ValueError, OSError):
        return "(not a date: outside years 1-9999)"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "store", help="store root directory (storePathRootDir) or URI (s3://, hdfs://, gs://)"
    )
    parser.add_argument(
        "--index-geometry",
        type=parse_geometry,
        metavar="S,N",
        help="maxHashSlotNum,maxIndexNum of the broker (default: detected from each index file)",
    )


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable JSON instead of tables")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def open_store(args: argparse.Namespace) -> Store:
    return Store.open(args.store, index_geometry=args.index_geometry)


def progress(args: argparse.Namespace, total: int | None, desc: str, unit: str = "B") -> tqdm:
    """A tqdm bar on stderr; hidden with --no-progress or when stderr is not a terminal."""
    disable: Any = True if getattr(args, "no_progress", False) else None
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        unit_scale=True,
        unit_divisor=1024 if unit == "B" else 1000,
        disable=disable,
        leave=False,
    )
