"""RocksDB metadata mode (§4.7-§4.8): consumer offsets from config/consumerOffsets/ and the broker's
merge rule with consumerOffset.json, damaged unit values named, remote stores refused by name."""

from __future__ import annotations

import json
import os

import pytest

from helpers.store_builder import StoreBuilder, fill
from rmqstore.format.brokerconfig import encode_fastjson
from rmqstore.format.rocksdbcq import OFFSET_COLUMN_FAMILY, unit_key
from rmqstore.store import Store, StoreCorruptionError, StoreLayoutError
from rmqstore.store.rocksdb import local_rocksdb


def _write_rocksdb(path: str, default: dict[bytes, bytes], families: dict[str, dict[bytes, bytes]]) -> None:
    """A RocksDB as the broker leaves it (written read-write here, in a test store only)."""
    from rocksdict import Options, Rdict

    options = Options(raw_mode=True)
    options.create_missing_column_families(True)
    db = Rdict(path, options, column_families={name: Options(raw_mode=True) for name in families})
    for key, value in default.items():
        db[key] = value
    for name, entries in families.items():
        family = db.get_column_family(name)
        for key, value in entries.items():
            family[key] = value
    db.close()


def _offsets_db(root: str, counter: int) -> None:
    _write_rocksdb(os.path.join(root, "config", "consumerOffsets"),
                   {b"TopicA@g1": b'{"offsetTable":{0:4,1:2}}'},
                   {"kvDataVersion": {b"kvDataVersionKey": json.dumps({"counter": counter}).encode()}})


@pytest.fixture
def b(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"))
    fill(b, 5)
    return b


@pytest.mark.parametrize(("json_counter", "expected"), [(1, {0: 4, 1: 2}), (9, {0: 1})])
def test_rocksdb_offsets_unless_the_json_is_newer(b, json_counter, expected):
    os.makedirs(os.path.join(b.root, "config"))
    with open(os.path.join(b.root, "config", "consumerOffset.json"), "w") as fh:
        fh.write(encode_fastjson({"offsetTable": {"TopicA@g1": {0: 1}},
                                  "dataVersion": {"counter": json_counter}}))
    _offsets_db(b.root, counter=5)
    b.finish()  # the guard checks that reading leaves every file, the RocksDB's too, as written
    assert Store.open(b.root).group_offsets("g1") == {"TopicA": expected}


def test_damaged_rocksdb_unit_is_named(b):
    topic = b"TopicA"
    max_key = len(topic).to_bytes(4, "big") + b"\x01" + topic + b"\x01max\x01" + (0).to_bytes(4, "big")
    os.makedirs(b.root, exist_ok=True)
    _write_rocksdb(os.path.join(b.root, "consumequeue"), {unit_key("TopicA", 0, 0): b"short"},
                   {OFFSET_COLUMN_FAMILY: {max_key: (0).to_bytes(8, "big") + (0).to_bytes(8, "big")}})
    b.finish()
    with Store.open(b.root) as store, pytest.raises(StoreCorruptionError, match=r"TopicA/0.*5 bytes, not 28"):
        store.consume_queue("TopicA", 0).units(0, 1)


def test_remote_rocksdb_is_refused_by_name():
    remote = object()  # any file system but a local one; nothing is read
    with pytest.raises(StoreLayoutError, match=r"consumequeue/ .*local directory only"):
        local_rocksdb(remote, "s3://bucket/store/consumequeue", "consumequeue/")
