"""Errors raised by the store layer and the read modes that decide between raising and skipping."""

from __future__ import annotations

from typing import Literal

ReadMode = Literal["FAILFAST", "PERMISSIVE"]
FAILFAST: ReadMode = "FAILFAST"
PERMISSIVE: ReadMode = "PERMISSIVE"
READ_MODES: tuple[ReadMode, ...] = (FAILFAST, PERMISSIVE)


def check_mode(mode: str) -> ReadMode:
    """The canonical mode for a case-insensitive name; ValueError listing the valid ones otherwise."""
    upper = mode.upper()
    if upper not in READ_MODES:
        raise ValueError(f"mode must be one of {', '.join(READ_MODES)}, got {mode!r}")
    return upper  # type: ignore[return-value]


class StoreError(Exception):
    """Base class of every store-layer error."""


class StoreCorruptionError(StoreError):
    """Bytes that are not what the format says they must be: names the file, offset and cause."""

    def __init__(self, path: str, offset: int, cause: str) -> None:
        super().__init__(f"{path}: at physical offset {offset}: {cause}")
        self.path = path
        self.offset = offset
        self.cause = cause


class StoreLayoutError(StoreError):
    """The directory tree is not a usable RocketMQ store (missing commit log, conflicting segments)."""


class UnreadableFileError(StoreLayoutError):
    """A store file or directory that cannot be read (a FIFO, socket or device, a symbolic link loop,
    a directory where a file belongs, no permission): names the path and the cause."""

    def __init__(self, path: str, cause: str) -> None:
        super().__init__(f"{path}: cannot be read: {cause}")
        self.path = path
        self.cause = cause


class IndexUnavailableError(StoreError):
    """The index cannot answer a lookup completely (missing, damaged, or far behind the log).

    Callers fall back to scanning the commit log; no rows are lost by doing so.
    """


class InvalidTopicError(StoreError, ValueError):
    """A topic name that cannot be a directory inside the store (`..`, absolute, path separators)."""
