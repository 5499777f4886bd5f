"""Notes to the user on stderr, each printed once per Spark application.

Spark plans every query in a fresh Python worker process, so "once" cannot live in memory. A worker
knows its application by `SPARK_LOCAL_DIRS` (the block manager's directories: one set per
application and machine), so a marker file named after (that, the note) in rmqstore's cache
directory (never in a store) records that the note was printed. Outside Spark's workers the scope
is the process.
"""

from __future__ import annotations

import hashlib
import os
import sys

from rmqstore.cachedir import cache_root, remove_old_entries

MARKER_MAX_AGE_S = 7 * 24 * 3600
_PRINTED: set[str] = set()


def note_once(text: str) -> None:
    """Print `rmqstore: <text>` on stderr unless this application (or process) printed it already."""
    scope = os.environ.get("SPARK_LOCAL_DIRS")
    first = _first_in_process(text) if scope is None else _first_in_application(scope, text)
    if first:
        print(f"rmqstore: {text}", file=sys.stderr, flush=True)


def _first_in_process(text: str) -> bool:
    if text in _PRINTED:
        return False
    _PRINTED.add(text)
    return True


def _first_in_application(scope: str, text: str) -> bool:
    """Create the note's marker for `scope`; False when it existed (True if markers cannot be kept)."""
    directory = cache_root() / "notes"
    name = hashlib.sha256(f"{scope}\0{text}".encode()).hexdigest()[:32]
    try:
        directory.mkdir(parents=True, exist_ok=True)
        os.close(os.open(directory / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    except OSError:
        return True  # no writable cache directory: rather repeat a note than lose it
    remove_old_entries(directory, MARKER_MAX_AGE_S)
    return True
