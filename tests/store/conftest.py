"""Fixtures of the store tests: the unchanged-store guard, a builder, and a moto S3 server."""

from __future__ import annotations

import os

import pytest
from store_builder import _GUARDED, StoreBuilder, tree_digest


@pytest.fixture(autouse=True)
def unchanged_stores():
    """After every test, each store built during it has exactly the bytes (and files) it was built with."""
    _GUARDED.clear()
    yield
    for root, digest in _GUARDED:
        assert tree_digest(root) == digest, f"store {root} was modified by reading it"
    _GUARDED.clear()


@pytest.fixture
def builder(tmp_path):
    return StoreBuilder(str(tmp_path / "store"))


@pytest.fixture(scope="session")
def s3_server():
    """(endpoint "127.0.0.1:port", pyarrow S3FileSystem, upload) for a real moto S3 server on loopback.

    `upload(local_root, "bucket/prefix")` copies a directory tree into the server with boto3.
    """
    import boto3
    import pyarrow.fs as pafs
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"{host}:{port}"
        client = boto3.client("s3", endpoint_url=f"http://{endpoint}", aws_access_key_id="testing",
                              aws_secret_access_key="testing", region_name="us-east-1")

        def upload(local_root: str, remote_root: str) -> None:
            bucket, _, prefix = remote_root.partition("/")
            if bucket not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
                client.create_bucket(Bucket=bucket)
            for directory, _, files in os.walk(local_root):
                for name in files:
                    path = os.path.join(directory, name)
                    key = prefix + "/" + os.path.relpath(path, local_root).replace(os.sep, "/")
                    with open(path, "rb") as fh:
                        client.put_object(Bucket=bucket, Key=key, Body=fh.read())

        fs = pafs.S3FileSystem(access_key="testing", secret_key="testing", endpoint_override=endpoint,
                               scheme="http", region="us-east-1")
        yield endpoint, fs, upload
    finally:
        server.stop()
