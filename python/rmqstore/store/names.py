"""File and directory names of a store: 20-digit segment names (§1.2) and topic directory names."""

from __future__ import annotations

from rmqstore.store.errors import InvalidTopicError

JAVA_LONG_MAX = (1 << 63) - 1
"""Offsets are Java longs: no file's bytes lie past this offset."""
JAVA_INT_MAX = (1 << 31) - 1
"""Queue ids are Java ints."""
SEGMENT_NAME_DIGITS = 20
"""Commit-log and consume-queue segments are named by their first byte's offset, 20 digits (§1.2)."""


def parse_segment_name(name: str) -> int | None:
    """The base offset a segment file name stands for, None when it is not a 20-digit name."""
    if len(name) == SEGMENT_NAME_DIGITS and name.isascii() and name.isdigit():
        return int(name)
    return None


def segment_file_name(offset: int) -> str:
    """`UtilAll.offset2FileName`: zero-padded 20-digit decimal."""
    return f"{offset:0{SEGMENT_NAME_DIGITS}d}"


def topic_dir_problem(topic: str) -> str | None:
    """Why `topic` cannot name a directory under `consumequeue/`, None when it can.

    A name that is empty, `.` or `..`, contains a path separator or NUL, or looks absolute (a drive
    letter) would read outside the store.
    """
    if topic in ("", ".", ".."):
        return "it is empty, '.' or '..'"
    for bad in ("/", "\\", "\0"):
        if bad in topic:
            return f"it contains {bad!r}"
    if len(topic) >= 2 and topic[1] == ":":
        return "it looks like an absolute Windows path"
    return None


def check_topic_dir_name(topic: str) -> str:
    """`topic` unchanged, or InvalidTopicError saying why it would escape the store directory."""
    problem = topic_dir_problem(topic)
    if problem is not None:
        raise InvalidTopicError(f"topic {topic!r} cannot be a directory inside the store: {problem}")
    return topic
