"""Turn what a user typed (a local path or a URI) into a file system and a path in it."""

from __future__ import annotations

import os
from collections.abc import Mapping

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


def absolute_location(location: str) -> str:
    """A local path made absolute (`~` expanded) against this process's working directory; URIs as given.

    Done where a path is typed (the Spark driver), so that processes with another working
    directory (executors) read the same store.
    """
    return location if is_uri(location) else os.path.abspath(os.path.expanduser(location))


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
        return LocalFileSystem(stats), absolute_location(location)
    remote, path = pafs.FileSystem.from_uri(location)
    if isinstance(remote, pafs.LocalFileSystem):
        return LocalFileSystem(stats), path
    if storage_options:
        remote = _configured_s3(location, remote, storage_options)
    return ArrowFileSystem(remote, stats), path.rstrip("/")


def _configured_s3(location: str, remote: pafs.FileSystem, options: Mapping[str, str]) -> pafs.S3FileSystem:
    """The S3 file system of `location` with `options` applied (errors name options, never values)."""
    unknown = sorted(set(options) - set(S3_STORAGE_OPTIONS))
    if not isinstance(remote, pafs.S3FileSystem) or unknown:
        problem = f"unknown {', '.join(unknown)}" if unknown else "they apply to s3:// locations only"
        raise ValueError(f"{location}: storage options {sorted(options)}: {problem} "
                         f"(known: {', '.join(S3_STORAGE_OPTIONS)})")
    if ("access_key" in options) != ("secret_key" in options):
        raise ValueError(f"{location}: S3 credentials need both access_key and secret_key")
    # The URI's settings (region, scheme, endpoint, ...) as S3FileSystem arguments: its pickle state.
    arguments = remote.__reduce__()[1][0]
    arguments.update(options)
    return pafs.S3FileSystem(**arguments)
