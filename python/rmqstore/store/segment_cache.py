"""Facts about commit-log segments cached on disk outside the store (coverage verdicts, time runs).

One JSON file per store and kind, `<kind>/<sha256 of the store's identity>.json` under
`rmqstore.cachedir.cache_root()`, entries keyed by segment file name and reused while the segment's key,
the version and the salt hold; pieces of a segment in files of their own (design §8.2). The identity,
kinds and versions are docs/contract.toml's (`rmqstore.store.contract_store`, design §8.3); the identity
is `rmqstore.store.cache_identity`'s.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Sequence
from typing import Any, Protocol

from rmqstore.cachedir import cache_root
from rmqstore.store.cache_identity import Cached, CacheIdentity
from rmqstore.store.segments import Segment

_logger = logging.getLogger("rmqstore.store")


def cache_dir(kind: str) -> str:
    """Where the facts of this kind are cached."""
    return str(cache_root() / kind)


class ValidEnd(Protocol):
    """What keys an entry besides its segment: the log's valid end (a `CommitLog`)."""

    @property
    def max_offset(self) -> int: ...


class SegmentCache:
    """The cached facts of one kind about the segments of one store."""

    def __init__(self, path: str, version: int, salt: str, *, local: bool) -> None:
        self.path = path
        self.version = version
        self.salt = salt
        self.local = local
        """Entries are keyed by mtime too; else the caller checks each loaded entry's content."""

    @classmethod
    def for_identity(cls, identity: CacheIdentity, kind: str, version: int, salt: str = "", *,
                     content_checked: bool = False) -> SegmentCache | None:
        """The cache of the store of `identity`; None for a remote store whose listing has no
        modification times, unless the caller checks content."""
        if not (identity.local or content_checked or identity.listed_mtimes):
            return None
        return cls(os.path.join(cache_dir(kind), identity.file_name), version, salt, local=identity.local)

    @classmethod
    def for_store(cls, owner: Cached, kind: str, version: int, salt: str = "", *,
                  content_checked: bool = False) -> SegmentCache | None:
        """`for_identity` of `owner`'s cache identity."""
        return cls.for_identity(owner.cache_identity, kind, version, salt, content_checked=content_checked)

    def load(self, log: ValidEnd, live: Sequence[Segment]) -> dict[int, list[Any]]:
        """Base offset -> cached entry, for the segments of `live` whose entry is still valid."""
        entries = self._entries()
        known = {}
        for seg in live:
            entry = entries.get(os.path.basename(seg.path))
            if entry and entry[:3] == self._key(log, seg):
                known[seg.base_offset] = entry[3:]
        return known

    def stale(self, seg: Segment) -> tuple[list[Any], list[Any]] | None:
        """Whatever is cached for the segment's name, valid or not: (its key then, its entry)."""
        entry = self._entries().get(os.path.basename(seg.path))
        return (entry[:3], entry[3:]) if entry else None

    def entries(self) -> dict[str, list[Any]]:
        """Everything cached, by segment file name, keys not checked (for callers keeping their own)."""
        return self._entries()

    def _entries(self) -> dict[str, list[Any]]:
        try:
            with open(self.path) as fh:
                doc = json.load(fh)
        except (OSError, ValueError):
            return {}
        return doc.get("segments", {}) if self._current(doc) else {}

    def _current(self, doc: Any) -> bool:
        """A cache document of this version and salt."""
        return isinstance(doc, dict) and doc.get("version") == self.version and doc.get("salt") == self.salt

    def save(self, log: ValidEnd, entries: Sequence[tuple[Segment, list[Any]]]) -> None:
        """Write these entries (lists of JSON values) as the whole cache (atomic rename); failures are
        only logged. On disk an entry follows its segment's key: `[size, mtime, records' end, *entry]`."""
        self.save_entries({os.path.basename(seg.path): [*self._key(log, seg), *entry]
                           for seg, entry in entries})

    def save_entries(self, segments: dict[str, list[Any]]) -> None:
        """Write these entries, by segment file name, as the whole cache (see `save`)."""
        _write_json(self.path, {"version": self.version, "salt": self.salt, "segments": segments})

    def save_piece(self, log: ValidEnd, seg: Segment, start: int, end: int, entry: list[Any]) -> None:
        """Write the entry of the piece [start, end) of `seg` in its own file (atomic rename)."""
        name = f"{os.path.basename(seg.path)}.{start}-{end}.json"
        doc = {"version": self.version, "salt": self.salt, "key": self._key(log, seg), "entry": entry}
        _write_json(os.path.join(self._pieces_dir, name), doc)

    def pieces(self, log: ValidEnd, seg: Segment) -> dict[int, tuple[int, list[Any]]]:
        """start -> (end, entry) of the cached pieces of `seg` still valid (same key, version and salt);
        the files of the others are removed."""
        found: dict[int, tuple[int, list[Any]]] = {}
        for path, start, end in self._piece_files(seg):
            doc = self._keyed(log, seg, path)
            if doc is not None:
                found[start] = (end, doc["entry"])
        return found

    def save_asked(self, log: ValidEnd, seg: Segment) -> None:
        """Note that read tasks were asked to cache pieces of `seg` as it is now (its key)."""
        _write_json(self._asked_path(seg), {"version": self.version, "salt": self.salt,
                                            "key": self._key(log, seg)})

    def asked(self, log: ValidEnd, seg: Segment) -> bool:
        """Read tasks were asked to cache pieces of `seg` as it is now (`save_asked`, same key)."""
        return self._keyed(log, seg, self._asked_path(seg)) is not None

    def _keyed(self, log: ValidEnd, seg: Segment, path: str) -> dict[str, Any] | None:
        """The document at `path` when it is of this version and salt and keyed as `seg` is now; a file
        that is not is removed."""
        try:
            with open(path) as fh:
                doc = json.load(fh)
        except (OSError, ValueError):
            return None  # none, removed meanwhile, or not JSON
        if self._current(doc) and doc.get("key") == self._key(log, seg):
            return doc
        _remove(path)
        return None

    def drop_pieces(self, seg: Segment) -> None:
        """Remove the cached pieces of `seg` (joined into its entry) and the note that they were asked."""
        for path, _, _ in self._piece_files(seg):
            _remove(path)
        _remove(self._asked_path(seg))

    @property
    def _pieces_dir(self) -> str:
        return self.path.removesuffix(".json") + ".pieces"

    def _asked_path(self, seg: Segment) -> str:
        return os.path.join(self._pieces_dir, os.path.basename(seg.path) + ".asked.json")

    def _piece_files(self, seg: Segment) -> list[tuple[str, int, int]]:
        """(path, start, end) of the piece files of `seg`."""
        prefix = os.path.basename(seg.path) + "."
        try:
            names = os.listdir(self._pieces_dir)
        except OSError:
            return []
        out = []
        for name in (n for n in names if n.startswith(prefix) and n.endswith(".json")):
            span = name.removeprefix(prefix).removesuffix(".json").split("-")
            if len(span) == 2 and all(part.isdigit() for part in span):
                out.append((os.path.join(self._pieces_dir, name), int(span[0]), int(span[1])))
        return out

    def _key(self, log: ValidEnd, seg: Segment) -> list[int | None]:
        """Size, mtime (a remote file's as listed, maybe None) and, for the segment holding the valid
        end, where its records end."""
        records_end = log.max_offset - seg.base_offset if seg.contains(log.max_offset) else None
        return [seg.size, os.stat(seg.path).st_mtime_ns if self.local else seg.mtime_ns, records_end]


def _write_json(path: str, doc: dict[str, Any]) -> None:
    """Write `doc` to `path` whole or not at all (a temporary file renamed over it); failures are only
    logged (a cache)."""
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(doc, fh)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        _logger.debug("segment cache %s not written: %s", path, exc)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):  # removed meanwhile by another reader
        os.unlink(path)
