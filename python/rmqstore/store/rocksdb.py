"""A RocksDB database of the store opened read-only (§4.7): RocksDB consume queues, RocksDB consumer offsets.

`rocksdict` (RocksDB's C++ library in a wheel) opens it with `AccessType.read_only()`: nothing is
flushed, locked or compacted, and the write-ahead log is replayed in memory only. But an open still
creates files in the directory it opens: RocksDB's info LOG (rotating an existing one) and rocksdict's
`rocksdict-config.json`. So it opens a temporary directory of symbolic links to the database's files
instead, and the store's bytes stay the same.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator

from rmqstore.io.base import StoreFileSystem
from rmqstore.io.local import LocalFileSystem
from rmqstore.store.errors import StoreCorruptionError, StoreLayoutError

CURRENT_FILE = "CURRENT"
"""Every RocksDB database directory has it (the name of the live MANIFEST)."""


def is_rocksdb(fs: StoreFileSystem, path: str) -> bool:
    """`path` is a RocksDB database directory (it holds `CURRENT`)."""
    return fs.is_dir(path) and fs.exists(fs.join(path, CURRENT_FILE))


class ReadOnlyRocksDB:
    """One RocksDB directory, opened read-only with all its column families; `close` when done."""

    def __init__(self, path: str) -> None:
        from rocksdict import AccessType, Options, Rdict

        self.path = path
        self._links = tempfile.mkdtemp(prefix="rmqstore-rocksdb-")
        # the links go with this object even when nobody calls close (a Store dropped by a Spark task)
        self._remove_links = weakref.finalize(self, shutil.rmtree, self._links, True)
        try:
            for name in os.listdir(path):
                os.symlink(os.path.join(os.path.abspath(path), name), os.path.join(self._links, name))
            options = Options(raw_mode=True)
            names = Rdict.list_cf(self._links, options)
            families = {name: Options(raw_mode=True) for name in names if name != "default"}
            self._db = Rdict(self._links, options, column_families=families,
                             access_type=AccessType.read_only())
        except Exception as exc:  # rocksdict raises plain Exception with RocksDB's status text
            self._remove_links()
            raise StoreCorruptionError(path, 0, f"cannot open the RocksDB read-only: {exc}") from None
        self.families = set(names)

    def _family(self, name: str):
        if name == "default":
            return self._db
        if name not in self.families:
            raise StoreLayoutError(f"{self.path}: RocksDB has no column family {name!r} "
                                   f"(has {sorted(self.families)})")
        return self._db.get_column_family(name)

    def get(self, family: str, key: bytes) -> bytes | None:
        return self._family(family).get(key)

    def items(self, family: str, lower: bytes = b"",
              upper: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) with lower <= key < upper (no upper: to the end), in key order."""
        it = self._family(family).iter()
        it.seek(lower)
        while it.valid():
            key = it.key()
            if upper is not None and key >= upper:
                return
            yield key, it.value()
            it.next()

    def close(self) -> None:
        self._db.close()
        self._remove_links()


def local_rocksdb(fs: StoreFileSystem, path: str, feature: str) -> ReadOnlyRocksDB:
    """The RocksDB at `path` of a local store; StoreLayoutError naming `feature` for a remote one."""
    if not isinstance(fs, LocalFileSystem):
        raise StoreLayoutError(
            f"{path}: {feature} is a RocksDB database, which rmqstore reads from a local directory only; "
            "copy the store (or that directory) to a local disk and open it there")
    return ReadOnlyRocksDB(os.fspath(path))
