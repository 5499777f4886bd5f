"""Notes to the user, through `logging` (logger `rmqstore.notes`), each shown once per Spark application.

By default a note is written to stderr as `rmqstore: <text>` by the logger's own handler (it does not
propagate, so a root handler does not print it twice). `logging.getLogger("rmqstore").setLevel(
logging.ERROR)` silences notes; replacing the handlers of `rmqstore.notes` (and setting `propagate`)
sends them elsewhere. A logging set-up reaches only its own process: notes of Spark's Python workers
follow the workers' logging.

Spark plans every query in a fresh Python worker process, so "once" cannot live in memory. A worker
knows its application by `SPARK_LOCAL_DIRS` (the block manager's directories: one set per
application and machine), so a marker file named after (that, the note) in rmqstore's cache
directory (never in a store) records that the note was shown. Outside Spark's workers the scope
is the process.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys

from rmqstore.cachedir import cache_root, remove_old_entries

MARKER_MAX_AGE_S = 7 * 24 * 3600
_PRINTED: set[str] = set()


class _Stderr(logging.Handler):
    """Writes records to the `sys.stderr` of the moment (a redirection or capture made later too)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


LOG = logging.getLogger("rmqstore.notes")
if not LOG.handlers:
    _handler = _Stderr()
    _handler.setFormatter(logging.Formatter("rmqstore: %(message)s"))
    LOG.addHandler(_handler)
    LOG.propagate = False


def note(text: str) -> None:
    """Show `text` to the user (a WARNING of `rmqstore.notes`)."""
    LOG.warning(text)


def note_once(text: str) -> None:
    """`note(text)` unless this application (or process) showed it already; a note that logging
    filters out by level is not counted as shown."""
    if not LOG.isEnabledFor(logging.WARNING):
        return
    scope = os.environ.get("SPARK_LOCAL_DIRS")
    first = _first_in_process(text) if scope is None else _first_in_application(scope, text)
    if first:
        note(text)


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
