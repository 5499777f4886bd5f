"""Turn what a user typed (a local path or a URI) into a file system and a path in it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import pyarrow.fs as pafs

from rmqstore.io.base import IOStats, StoreFileSystem
from rmqstore.io.local import LocalFileSystem
from rmqstore.io.remote import ArrowFileSystem

S3_CREDENTIAL_ENV: dict[str, str] = {
    "access_key": "AWS_ACCESS_KEY_ID",
    "secret_key": "AWS_SECRET_ACCESS_KEY",
    "session_token": "AWS_SESSION_TOKEN",
}
"""`pyarrow.fs.S3FileSystem` credential arguments and the environment variables AWS SDKs read them from."""

S3_STORAGE_OPTIONS: tuple[str, ...] = (*S3_CREDENTIAL_ENV, "region", "endpoint_override", "scheme")
"""`pyarrow.fs.S3FileSystem` arguments accepted as storage options (they override the URI's)."""

def is_uri(location: str) -> bool:
    """True for `scheme://...` (s3://, gs://, hdfs://, file://); Windows drive letters are not URIs."""
    scheme, sep, _ = location.partition("://")
    return bool(sep) and len(scheme) > 1 and scheme.replace("+", "").replace("-", "").isalnum()


def is_s3_uri(location: str) -> bool:
    return location[:5].lower() == "s3://"


def hadoop_file_path(location: str) -> str:
    """The local path a `file:/abs/path` URI names (Hadoop's form without `//`, in which Spark's catalog
    passes a table's path to its source, percent-encoded); anything else as given."""
    if location[:6].lower() == "file:/" and location[6:7] != "/":
        return unquote(location[5:])
    return location


def absolute_location(location: str) -> str:
    """A local path made absolute (`~` expanded) against this process's working directory; URIs as given.

    Done where a path is typed (the Spark driver), so that processes with another working
    directory (executors) read the same store.
    """
    if is_uri(location):
        return location
    path = os.path.expanduser(location)
    return path if os.path.isabs(path) else os.path.abspath(path)


def with_environment_credentials(storage_options: Mapping[str, str],
                                 environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """S3 `storage_options` plus the credentials in `environ` (AWS_ACCESS_KEY_ID, ...).

    Pinning the credentials of the process that plans a read lets them travel (pickled with the
    store) to processes whose environment lacks them. Explicit credentials win; without an access
    key in either, the options are returned as given (each process then uses its own AWS chain).
    """
    options = dict(storage_options)
    if "access_key" in options or not environ.get(S3_CREDENTIAL_ENV["access_key"]):
        return options
    for argument, variable in S3_CREDENTIAL_ENV.items():
        if environ.get(variable):
            options[argument] = environ[variable]
    return options


def resolve_location(location: str, *, filesystem: pafs.FileSystem | None = None,
                     stats: IOStats | None = None,
                     storage_options: Mapping[str, str] | None = None) -> tuple[StoreFileSystem, str]:
    """(file system, path) for a local path, a `file://` URI or a remote URI.

    Local paths (and file:// URIs) are memory-mapped; anything else goes through
    `pyarrow.fs.FileSystem.from_uri` (S3 options such as `?endpoint_override=host:port&scheme=http`
    ride on the URI, credentials come from the usual environment). `storage_options` (names in
    `S3_STORAGE_OPTIONS`, for s3:// only) override the URI's settings and the environment. A given
    pyarrow `filesystem` is used as is, with `location` as a path in it.
    """
    if filesystem is not None:
        if isinstance(filesystem, pafs.LocalFileSystem):
            return LocalFileSystem(stats), os.path.abspath(location)
        return ArrowFileSystem(filesystem, stats), location.rstrip("/")
    if not is_uri(location):
        return LocalFileSystem(stats), os.path.abspath(os.path.expanduser(location))
    remote, path = _remote_filesystem(location, storage_options or {})
    if isinstance(remote, pafs.LocalFileSystem):
        return LocalFileSystem(stats), path
    return ArrowFileSystem(remote, stats), path.rstrip("/")


def _remote_filesystem(location: str, storage_options: Mapping[str, str]) -> tuple[pafs.FileSystem, str]:
    """`FileSystem.from_uri` with the storage options applied (errors name options, never values)."""
    unknown = sorted(set(storage_options) - set(S3_STORAGE_OPTIONS))
    if storage_options and (unknown or not is_s3_uri(location)):
        problem = f"unknown {', '.join(unknown)}" if unknown else "they apply to s3:// locations only"
        raise ValueError(f"{location}: storage options {sorted(storage_options)}: {problem} "
                         f"(known: {', '.join(S3_STORAGE_OPTIONS)})")
    settings = {k: v for k, v in storage_options.items() if k not in S3_CREDENTIAL_ENV}
    credentials = {k: v for k, v in storage_options.items() if k in S3_CREDENTIAL_ENV}
    remote, path = pafs.FileSystem.from_uri(_with_query(location, settings))
    return (_with_credentials(remote, credentials) if credentials else remote), path


def _with_query(uri: str, settings: Mapping[str, str]) -> str:
    """`uri` with `settings` in its query string (they replace the URI's own values)."""
    if not settings:
        return uri
    parts = urlsplit(uri)
    query = {**dict(parse_qsl(parts.query)), **settings}
    return urlunsplit(parts._replace(query=urlencode(query)))


def _with_credentials(remote: pafs.FileSystem, credentials: Mapping[str, str]) -> pafs.S3FileSystem:
    """The S3 file system `remote` with explicit credentials (pyarrow's errors never show their values)."""
    arguments = remote.__reduce__()[1][0]  # the URI's settings as S3FileSystem arguments (pickle state)
    arguments.update(credentials)
    return pafs.S3FileSystem(**arguments)
