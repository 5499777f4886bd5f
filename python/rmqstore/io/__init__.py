"""Where store bytes come from: local files (read-only memory maps) and remote file systems (pyarrow.fs
ranged reads) behind one random-access interface."""

from rmqstore.io.base import FileEntry, IOStats, RandomAccessFile, StoreFileSystem
from rmqstore.io.local import LocalFile, LocalFileSystem
from rmqstore.io.location import is_uri, resolve_location
from rmqstore.io.remote import ArrowFile, ArrowFileSystem

__all__ = [
    "ArrowFile",
    "ArrowFileSystem",
    "FileEntry",
    "IOStats",
    "LocalFile",
    "LocalFileSystem",
    "RandomAccessFile",
    "StoreFileSystem",
    "is_uri",
    "resolve_location",
]
