"""Errors raised by the store layer and the read modes that decide between raising and skipping."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
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


class UnknownNameError(StoreError, ValueError):
    """A topic or consumer group the store does not have: names it, the close known names ("did you
    mean") and the known ones, so a typo never reads as an empty answer."""

    SHOWN = 30
    """At most this many known names are listed."""

    def __init__(self, what: str, name: str, known: Sequence[str], why: str) -> None:
        close = difflib.get_close_matches(name, known, n=3)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}? " if close else ". "
        listed = ", ".join(known[: self.SHOWN]) or "none"
        more = f" and {len(known) - self.SHOWN} more" if len(known) > self.SHOWN else ""
        super().__init__(f"{what} {name!r} {why}{hint}Known {what}s: {listed}{more}")
        self.name = name
