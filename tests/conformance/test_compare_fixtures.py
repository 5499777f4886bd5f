"""The rules CI uses to check regenerated fixtures against the committed ones (compare_fixtures.py).

A regeneration differs from the committed fixtures only in what RocketMQ derives from the clock or its
timers; these tests pin which differences are tolerated and that real ones are still reported.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from compare_fixtures import compare_rocksdb, compare_tree

FIXTURES = Path(__file__).parent / "fixtures"
BROKER = "rmq-5.5.0-broker"


@pytest.fixture()
def regenerated(tmp_path: Path) -> Path:
    """A copy of the committed fixtures, standing in for a fresh regeneration."""
    copy = tmp_path / "fixtures"
    shutil.copytree(FIXTURES, copy)
    return copy


def test_identical_trees_match(regenerated: Path) -> None:
    assert compare_tree(FIXTURES, regenerated) == []


def test_broker_config_backups_are_timing_not_content(regenerated: Path) -> None:
    backups = sorted((regenerated / BROKER / "store" / "config").glob("*.bak"))
    assert backups, "the broker fixture should hold config backups for this test to mean anything"
    for backup in backups:
        backup.unlink()
    assert compare_tree(FIXTURES, regenerated) == []


def test_broker_missing_config_file_is_reported(regenerated: Path) -> None:
    (regenerated / BROKER / "store" / "config" / "topics.json").unlink()
    expected = f"missing in regenerated: {BROKER}/store/config/topics.json"
    assert compare_tree(FIXTURES, regenerated) == [expected]


def test_broker_record_change_is_reported(regenerated: Path) -> None:
    oracle_path = regenerated / BROKER / "oracle.json"
    oracle = json.loads(oracle_path.read_text(encoding="utf-8"))
    oracle["records"][0]["tags"] = "not-what-the-broker-wrote"
    oracle_path.write_text(json.dumps(oracle), encoding="utf-8")
    (problem,) = compare_tree(FIXTURES, regenerated)
    assert problem.startswith("oracle differs semantically at") and "tags" in problem


def test_fixed_clock_byte_change_is_reported(regenerated: Path) -> None:
    segment = regenerated / "rmq-4.9.8" / "store" / "commitlog" / "00000000000000000000"
    data = bytearray(segment.read_bytes())
    data[100] ^= 0xFF
    segment.write_bytes(bytes(data))
    assert compare_tree(FIXTURES, regenerated) == [
        "bytes differ: rmq-4.9.8/store/commitlog/00000000000000000000"
    ]


LIFE = "rmq-5.5.0-life"


def _edit_oracle(fixtures: Path, name: str, edit) -> None:
    path = fixtures / name / "oracle.json"
    oracle = json.loads(path.read_text(encoding="utf-8"))
    edit(oracle)
    path.write_text(json.dumps(oracle), encoding="utf-8")


def test_life_record_order_and_trace_batching_are_timing_not_content(regenerated: Path) -> None:
    """Another interleaving of the concurrent writers, other trace-topic records carrying the contexts, other
    times: the same life."""
    def reorder(oracle: dict) -> None:
        oracle["records"].reverse()
        oracle["traceRecords"].reverse()
        for context in oracle["traceRecords"]:
            context.update(commitLogOffset=0, timeStamp=1, costTime=2, requestId="other")
        for stats in oracle["consumeStats"].values():
            stats["consumeTps"] = 0.5
            for queue in stats["queues"]:
                queue["lastTimestamp"] += 1000

    _edit_oracle(regenerated, LIFE, reorder)
    assert compare_tree(FIXTURES, regenerated) == []


@pytest.mark.parametrize(("section", "field", "value"), [
    ("traceRecords", "groupName", "another-group"),
    ("messageTrack", "tracks", []),
    ("sent", "queueOffset", 99),
])
def test_life_answer_change_is_reported(regenerated: Path, section: str, field: str, value: object) -> None:
    _edit_oracle(regenerated, LIFE, lambda oracle: oracle[section][0].update({field: value}))
    (problem,) = compare_tree(FIXTURES, regenerated)
    assert problem.startswith(f"oracle differs semantically at {LIFE}.{section}")


def test_life_consumer_progress_change_is_reported(regenerated: Path) -> None:
    def consume_one_less(oracle: dict) -> None:
        oracle["consumeStats"]["life-hold"]["queues"][-1]["consumerOffset"] -= 1

    _edit_oracle(regenerated, LIFE, consume_one_less)
    (problem,) = compare_tree(FIXTURES, regenerated)
    assert problem.startswith(f"oracle differs semantically at {LIFE}.consumeStats.life-hold")


ROCKSDB = "rmq-5.3.3-rocksdb"


def _rewrite_rocksdb(path: Path, extra: dict[bytes, bytes]) -> None:
    """Opens a copy's RocksDB read-write (new file numbers, a flush) and adds `extra` to `default`."""
    from rocksdict import Options, Rdict

    names = Rdict.list_cf(str(path), Options(raw_mode=True))
    db = Rdict(str(path), Options(raw_mode=True),
               column_families={n: Options(raw_mode=True) for n in names if n != "default"})
    for key, value in extra.items():
        db[key] = value
    db.flush()
    db.close()


def test_rocksdb_files_are_compared_by_content(regenerated: Path) -> None:
    queues = regenerated / ROCKSDB / "store" / "consumequeue"
    _rewrite_rocksdb(queues, {})
    assert sorted(p.name for p in queues.iterdir()) != sorted(
        p.name for p in (FIXTURES / ROCKSDB / "store" / "consumequeue").iterdir())
    assert compare_tree(FIXTURES, regenerated) == []
    _rewrite_rocksdb(queues, {b"extra-key": b"x"})
    assert compare_tree(FIXTURES, regenerated) == [
        f"RocksDB {ROCKSDB}/store/consumequeue: entry only in one tree: ('default', b'extra-key')"]


RDB = "rmq-5.3.3-rdb"
CONSUMER_OFFSET_VERSION = b"\x01\x00\x01\x01data_version"
"""The v2 config storage's data-version record of its consumer-offset table (docs/format.md §4.8)."""


def test_v2_config_storage_data_version_timestamp_is_clock_not_content(tmp_path: Path) -> None:
    from rmqstore.store.rocksdb import ReadOnlyRocksDB

    shutil.copytree(FIXTURES / RDB, tmp_path / RDB)
    rdb = tmp_path / RDB / "store" / "config" / "rdb"
    db = ReadOnlyRocksDB(str(rdb))
    state, _, counter = struct.unpack(">qqq", db.get("default", CONSUMER_OFFSET_VERSION))
    db.close()
    databases = {RDB: ["config/rdb"]}
    _rewrite_rocksdb(rdb, {CONSUMER_OFFSET_VERSION: struct.pack(">qqq", state, 1, counter)})
    assert compare_rocksdb(FIXTURES, tmp_path, databases) == []
    _rewrite_rocksdb(rdb, {CONSUMER_OFFSET_VERSION: struct.pack(">qqq", state, 1, counter + 1)})
    assert compare_rocksdb(FIXTURES, tmp_path, databases) == [
        f"RocksDB {RDB}/store/config/rdb: value differs: ('default', {CONSUMER_OFFSET_VERSION!r})"]
