"""Consumer offsets in RocketMQ's v2 config storage (`configManagerVersion=v2`, 5.3.2+: the RocksDB
`config/rdb/`, docs/format.md §4.8) against RocketMQ's own answers (README.md: `rmq-5.3.3-rdb`): the offsets a
v2 broker loads, LMQ ones included, never the older consumerOffset.json beside them; `group:` on both engines
starts there; the database's other tables are skipped and a consumer-offset record the parser does not
understand fails naming the database and the key. Queue bounds, backlogs and `info`'s lag of the same fixture
run in test_conformance_shapes.py.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from chispa import assert_df_equality
from oracle import CONFIG_V2, ORACLES, getmessage_rows, index_geometry, open_store, store_dir, store_hashes

from rmqstore import Store
from rmqstore.store import StoreCorruptionError

GROUP = "shape-group"


def _offsets(table: dict[str, Any]) -> dict[tuple[str, str], dict[int, int]]:
    """An oracle offset table (`topic@group` -> {queueId: offset}) as `Store.consumer_offsets` answers."""
    return {tuple(key.split("@", 1)): {int(q): o for q, o in queues.items()} for key, queues in table.items()}


def test_v2_config_storage_fixture_present() -> None:
    assert CONFIG_V2, "no configManagerVersion=v2 fixture under tests/conformance/fixtures"


@pytest.mark.parametrize("name", CONFIG_V2)
def test_offsets_are_what_a_v2_broker_loads_not_the_older_json(name: str) -> None:
    oracle = ORACLES[name]
    expected = _offsets(oracle["consumerOffsets"])
    assert expected != _offsets(oracle["staleConsumerOffsets"])
    assert any(topic.startswith("%LMQ%") for topic, _ in expected)  # only the database holds those
    before = store_hashes(name)
    with open_store(name) as store:
        assert store.shape.get("rocksdb-offsets").evidence == "config/rdb/"
        assert store.consumer_offsets() == expected
        assert store.group_offsets(GROUP) == {topic: queues for (topic, _), queues in expected.items()}
    assert store_hashes(name) == before


def _rewrite_config_storage(rdb: Path, extra: dict[bytes, bytes]) -> None:
    """Adds `extra` to a copy's config/rdb/ (opened read-write, as only a test may)."""
    from rocksdict import Options, Rdict

    options = Options(raw_mode=True)
    options.set_allow_concurrent_memtable_write(False)  # ConfigHelper's column family: inplace_update_support
    db = Rdict(str(rdb), options)
    for key, value in extra.items():
        db[key] = value
    db.flush()
    db.close()


@pytest.mark.parametrize("name", CONFIG_V2)
def test_other_tables_are_skipped_and_a_malformed_offset_record_fails_by_name(name: str,
                                                                              tmp_path: Path) -> None:
    root = tmp_path / "store"
    shutil.copytree(store_dir(name), root)
    rdb = root / "config" / "rdb"
    # a pull offset (table 2) and a record of a table RocketMQ 5.3.3 does not have (9): not consumer offsets
    _rewrite_config_storage(rdb, {b"\x01\x00\x02\x02\x00\x01g\x01\x00\x01t\x01\x00\x00\x00\x00": b"\x00" * 8,
                                  b"\x01\x00\x09\x02anything": b"?"})
    with Store.open(root, index_geometry=index_geometry(name)) as store:
        assert store.consumer_offsets() == _offsets(ORACLES[name]["consumerOffsets"])
    short_queue_id = b"\x01\x00\x01\x02\x00\x01g\x01\x00\x01t\x01\x00\x00"
    _rewrite_config_storage(rdb, {short_queue_id: b"\x00" * 8})
    failure = re.escape(f"{rdb}: at physical offset 0: consumer-offset record key {short_queue_id.hex()}: "
                        "2 bytes after the topic's separator, not a 4-byte queue id")
    with Store.open(root, index_geometry=index_geometry(name)) as store:
        with pytest.raises(StoreCorruptionError, match=failure):
            store.consumer_offsets()
        with pytest.raises(StoreCorruptionError, match=failure):
            store.group_offsets(GROUP)


@pytest.mark.spark
@pytest.mark.parametrize("name", CONFIG_V2)
def test_group_start_reads_from_the_v2_offsets(spark, engine_format: str, name: str) -> None:
    """`startingOffsets group:` starts every queue of the group, LMQ ones included, at the database's offset:
    one row per unit getMessage returns from there (§4.6, §4.8)."""
    columns = ["commitLogOffset", "topic", "queueId", "queueOffset"]
    got = (spark.read.format(engine_format).option("startingOffsets", f"group:{GROUP}")
           .load(str(store_dir(name))).select(*columns))
    expected = spark.createDataFrame(getmessage_rows(name), got.schema)
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)
