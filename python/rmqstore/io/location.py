"""Turn what a user typed (a local path or a URI) into a file system and a path in it."""

from __future__ import annotations

import os

import pyarrow.fs as pafs

from rmqstore.io.base import IOStats, StoreFileSystem
from rmqstore.io.local import LocalFileSystem
from rmqstore.io.remote import ArrowFileSystem


def is_uri(location: str) -> bool:
    """True for `scheme://...` (s3://, gs://, hdfs://, file://); Windows drive letters are not URIs."""
    scheme, sep, _ = location.partition("://")
    return bool(sep) and len(scheme) > 1 and scheme.replace("+", "").replace("-", "").isalnum()


def resolve_location(location: str, *, filesystem: pafs.FileSystem | None = None,
                     stats: IOStats | None = None) -> tuple[StoreFileSystem, str]:
    """(file system, path) for a local path, a `file://` URI or a remote URI.

    Local paths (and file:// URIs) are memory-mapped; anything else goes through
    `pyarrow.fs.FileSystem.from_uri` (S3 options such as `?endpoint_override=host:port&scheme=http`
    ride on the URI, credentials come from the usual environment). A given pyarrow `filesystem` is
    used as is, with `location` as a path in it.
    """
    if filesystem is not None:
        if isinstance(filesystem, pafs.LocalFileSystem):
            return LocalFileSystem(stats), os.path.abspath(location)
        return ArrowFileSystem(filesystem, stats), location.rstrip("/")
    if not is_uri(location):
        return LocalFileSystem(stats), os.path.abspath(os.path.expanduser(location))
    remote, path = pafs.FileSystem.from_uri(location)
    if isinstance(remote, pafs.LocalFileSystem):
        return LocalFileSystem(stats), path
    return ArrowFileSystem(remote, stats), path.rstrip("/")
