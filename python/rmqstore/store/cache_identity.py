"""`CacheIdentity`: which store rmqstore's cache files outside it belong to (docs/design.md §8.2).

Built at open from the store's location and commit-log listing, before any service that caches; the
services and `rmqstore.store.segment_cache` take it, never the store.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rmqstore.store.contract_store import CACHE_IDENTITY_SEPARATOR
from rmqstore.store.segments import Segment


def _identity(value: list[Any]) -> str:
    """A store's identity as JSON, the text whose SHA-256 names its cache files (docs/design.md §8.2)."""
    return json.dumps(value, separators=(CACHE_IDENTITY_SEPARATOR, ": "), ensure_ascii=True)


@dataclass(frozen=True)
class CacheIdentity:
    """The identity of one store (docs/design.md §8.2) and what its listing tells a cache.

    `local`: a local store, whose files are keyed by their mtimes too; `listed_mtimes`: every segment of
    the listing has a modification time (a remote listing may give none).
    """

    text: str
    local: bool
    listed_mtimes: bool

    @classmethod
    def of(cls, location: str, path: str, commitlog_dirs: Sequence[str], segments: Sequence[Segment], *,
           local: bool) -> CacheIdentity:
        """The identity of a store at `location` (`path` in its file system) with these commit-log
        directories and segments: realpaths when local, the location as given when remote."""
        if local:
            value = [os.path.realpath(path), [os.path.realpath(d) for d in commitlog_dirs]]
        else:
            value = [location, list(commitlog_dirs)]
        return cls(_identity(value), local, all(seg.mtime_ns is not None for seg in segments))

    @property
    def file_name(self) -> str:
        """The name of the store's cache file of each kind: the SHA-256 of the identity, `.json`."""
        return hashlib.sha256(self.text.encode()).hexdigest() + ".json"


class Cached(Protocol):
    """What has a store's cache identity (the store, the services that cache)."""

    @property
    def cache_identity(self) -> CacheIdentity: ...
