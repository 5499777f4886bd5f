"""Stores written by RocketMQ's RocksDBMessageStore (`storeType=defaultRocksDB`, docs/format.md §4.7-§4.8)
against RocketMQ's own answers: every consume-queue unit it iterates, what getMessage returns from each
committed offset (the backlog `group:` and lag count), consumer offsets from the broker's RocksDB, and the
store's bytes unchanged by reading. The other conformance tests run on these fixtures too (records, topic
pushdown, queue ranges); streaming `group:` runs here on both engines.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest
from oracle import ORACLES, ROCKSDB, index_geometry, open_store, store_dir, store_hashes

from rmqstore import Store
from rmqstore.cli import main as cli_main


def _backlogs(name: str) -> dict[tuple[str, str], list[int]]:
    """(topic, group) -> commit-log offsets getMessage returned from the committed offsets, all queues."""
    return {tuple(topic_group.split("@", 1)): sorted(o for offsets in queues.values() for o in offsets)
            for topic_group, queues in ORACLES[name]["backlog"].items()}


def test_rocksdb_fixture_present() -> None:
    assert ROCKSDB, "no RocksDB consume-queue fixture under tests/conformance/fixtures"


@pytest.mark.parametrize("name", ROCKSDB)
def test_units_and_backlogs_match_rocketmq_and_bytes_stay(name: str) -> None:
    before = store_hashes(name)
    with open_store(name) as store:
        for q in ORACLES[name]["consumeQueueUnits"]:
            units = store.consume_queue(q["topic"], q["queueId"]).units()
            got = [list(u) for u in zip(units["queue_offset"].tolist(), units["phy"].tolist(),
                                        units["size"].tolist(), units["tags_code"].tolist(), strict=True)]
            assert got == q["units"], f"{q['topic']}/{q['queueId']}"
        for (topic, group), wanted in _backlogs(name).items():
            committed = store.group_offsets(group)[topic]
            got = sorted(int(phy) for queue_id, offset in committed.items()
                         for phy in store.consume_queue(topic, queue_id).units(offset)["phy"])
            assert got == wanted, f"{topic}@{group}"
    assert store_hashes(name) == before


@pytest.mark.parametrize("name", ROCKSDB)
def test_info_lists_rocksdb_queues_and_lag(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["info", "--json", str(store_dir(name))]) == 0
    doc = json.loads(capsys.readouterr().out)
    lags = {(g["topic"], g["group"]): g["lag"] for g in doc["consumerGroups"]}
    assert lags == {key: len(offsets) for key, offsets in _backlogs(name).items()}
    queues = {(q["topic"], q["queueId"]) for q in ORACLES[name]["queues"]}
    assert {(q["topic"], q["queueId"]) for q in doc["queues"]} >= queues


@pytest.mark.spark
@pytest.mark.parametrize("name", ROCKSDB)
def test_streaming_group_start_reads_rocketmq_backlog(spark, engine_format, name: str,
                                                      tmp_path: Path) -> None:
    (topic, group), wanted = max(_backlogs(name).items(), key=lambda item: len(item[1]))
    query_name = f"q_{uuid.uuid4().hex[:8]}"
    query = (spark.readStream.format(engine_format).option("startingOffsets", f"group:{group}")
             .option("topics", topic).load(str(store_dir(name)))
             .writeStream.format("memory").queryName(query_name)
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    rows = spark.sql(f"SELECT commitLogOffset FROM {query_name}").collect()
    assert sorted(r.commitLogOffset for r in rows) == wanted


@pytest.mark.parametrize("name", ROCKSDB)
def test_separate_rocksdb_queue_path_reads_the_same(name: str, tmp_path: Path) -> None:
    """`useSeparateStorePathForRocksdbCQ` (5.4+): the database in `consumequeue_rocksdb/`, no queue files."""
    root = tmp_path / "store"
    shutil.copytree(store_dir(name), root)
    (root / "consumequeue").rename(root / "consumequeue_rocksdb")
    with Store.open(root, index_geometry=index_geometry(name)) as store:
        for q in ORACLES[name]["queues"]:
            queue = store.consume_queue(q["topic"], q["queueId"])
            assert (queue.min_offset, queue.max_offset) == (q["minOffset"], q["maxOffset"]), q
