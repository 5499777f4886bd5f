"""Store shapes (docs/format.md §1.6): detected from the files, printed by `info`, and the shapes rmqstore
cannot read refused by name instead of answered from a layout it misunderstood."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rmqstore.cli import main as cli_main
from rmqstore.store import Store, StoreCorruptionError, UnsupportedShapeError

FIXTURES = Path(__file__).parents[1] / "conformance" / "fixtures"
DEFAULT = FIXTURES / "rmq-5.5.0" / "store"
DLEDGER = FIXTURES / "rmq-5.4.0-dledger" / "store"
ROCKSDB = FIXTURES / "rmq-5.3.3-rocksdb" / "store"
RDB = FIXTURES / "rmq-5.3.3-rdb" / "store"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(DEFAULT, root)
    return root


def test_default_stores_have_the_default_shape() -> None:
    with Store.open(DEFAULT) as store:
        assert store.shape.name == "default"
        assert store.shape.features == ()


@pytest.mark.parametrize("commitlog_dirs", [None, "dledger-n0/data"], ids=["root", "data-dir"])
def test_a_dledger_store_reads_every_record_at_its_dledger_position(commitlog_dirs: str | None) -> None:
    """Passing the DLedger data directory as commitlog_dirs (the old error's hint) read 0 records."""
    oracle = json.loads((DLEDGER.parent / "oracle.json").read_text())
    expected = [r["commitLogOffset"] for r in oracle["records"]]
    with Store.open(DLEDGER, commitlog_dirs=commitlog_dirs) as store:
        assert store.shape.describe() == "DLedger commit log (dledger-n0/data/)"
        offsets = [o for b in store.scan(columns=["commitLogOffset"]) for o in b.column(0).to_pylist()]
        assert offsets == expected


def test_a_dledger_log_with_the_commitlog_it_replaced_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "store"
    shutil.copytree(DLEDGER, root)
    shutil.copytree(DEFAULT / "commitlog", root / "commitlog")
    with pytest.raises(UnsupportedShapeError, match=r"DLedger commit log .*reading it with the commitlog/ it "
                                                     r"replaced refused: .*dividedCommitlogOffset"):
        Store.open(root)


def test_consumer_offsets_in_the_v2_config_storage_are_read_never_the_older_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A broker with configManagerVersion=v2 (5.3.2+) keeps its consumer offsets in the RocksDB config/rdb/
    and no longer reads or writes consumerOffset.json (§4.8): readers of offsets take them from there, never
    from the JSON an older broker left, even when config/rdb/ cannot be opened (that fails naming it); `info`
    prints the rest and notes the failure."""
    with Store.open(RDB) as store:
        assert store.shape.describe() == ("RocksDB consumer offsets (config/rdb/); "
                                          "LMQ queues (2 %LMQ% queue(s) in consumequeue/)")
        assert ("TopicLmq", "shape-group") in store.consumer_offsets()
    root = _copy(tmp_path)
    assert (root / "config" / "consumerOffset.json").exists()
    (root / "config" / "rdb").mkdir()
    (root / "config" / "rdb" / "CURRENT").write_text("MANIFEST-000005\n")
    unreadable = r"config/rdb: at physical offset 0: cannot open the RocksDB read-only"
    with Store.open(root) as store:
        assert store.shape.name == "rocksdb-offsets"
        with pytest.raises(StoreCorruptionError, match=unreadable):
            store.consumer_offsets()
        with pytest.raises(StoreCorruptionError, match=unreadable):
            store.group_offsets("group-a")
    assert cli_main(["info", str(root), "--json"]) == 0
    assert "config/rdb" in capsys.readouterr().out


def test_rocksdb_stores_are_detected_and_their_queues_and_offsets_read(
        capsys: pytest.CaptureFixture[str]) -> None:
    """RocksDB consume queues and consumer offsets (§4.7, §4.8) are shapes rmqstore reads: detected and
    printed, and the queues, offsets and lag come from the databases (never "no queues" or lag 0)."""
    with Store.open(ROCKSDB) as store:
        assert [f.key for f in store.shape.features] == ["rocksdb-consumequeue", "rocksdb-offsets"]
        assert store.topics() and store.consumer_offsets()
    assert cli_main(["info", str(ROCKSDB), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["shape"]["features"][0]["feature"] == "rocksdb-consumequeue"
    assert doc["queues"] and any(g["lag"] for g in doc["consumerGroups"])


def test_every_other_feature_is_detected_and_printed(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    root = _copy(tmp_path)
    topics = {"topicConfigTable": {}}
    topics["topicConfigTable"]["BatchTopic"] = {"topicName": "BatchTopic",
                                                "attributes": {"queue.type": "BatchCQ"}}
    (root / "config" / "topics.json").write_text(json.dumps(topics))
    (root / "batchconsumequeue" / "BatchTopic" / "0").mkdir(parents=True)
    (root / "consumequeue" / "%LMQ%q1" / "0").mkdir(parents=True)
    (root / "consumequeue_ext" / "TopicTest" / "0").mkdir(parents=True)
    (root / "compaction" / "compactionLog").mkdir()
    (root / "timerlog").mkdir()
    (root / "timerwheel").write_bytes(b"\0" * 64)
    shutil.rmtree(root / "index")
    with Store.open(root) as store:
        assert store.shape.name == "batchcq, lmq, cqext, compaction, timer, no-index"
        assert store.topics()  # none of them is refused
    assert cli_main(["info", str(root)]) == 0
    out = capsys.readouterr().out
    shape = ("BatchCQ topics (batchconsumequeue/, queue.type=BatchCQ in config/topics.json: BatchTopic); "
             "LMQ queues (1 %LMQ% queue(s) in consumequeue/); consume-queue ext (consumequeue_ext/); "
             "compaction logs (compaction/compactionLog/); timer (timerlog/, timerwheel); "
             "no index (no index files)")
    assert ["shape", shape] in [line.strip().split(None, 1) for line in out.splitlines()]
