"""Store shapes (docs/format.md §1.6): detected from the files, printed by `info`, and the shapes rmqstore
cannot read refused by name instead of answered from a layout it misunderstood."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rmqstore.cli import main as cli_main
from rmqstore.store import Store, UnsupportedShapeError

FIXTURES = Path(__file__).parents[1] / "conformance" / "fixtures"
DEFAULT = FIXTURES / "rmq-5.5.0" / "store"
DLEDGER = FIXTURES / "rmq-5.4.0-dledger" / "store"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(DEFAULT, root)
    return root


def _rocksdb(directory: Path) -> None:
    """The files RocksDB keeps in every database directory (contents do not matter for detection)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("CURRENT", "IDENTITY", "MANIFEST-000005", "000009.sst"):
        (directory / name).write_bytes(b"rocksdb")


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


@pytest.mark.parametrize("where", ["consumequeue", "consumequeue_r"])
def test_rocksdb_consume_queues_refuse_queue_reads_while_the_log_reads(
        tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]) -> None:
    root = _copy(tmp_path)
    shutil.rmtree(root / "consumequeue")
    _rocksdb(root / where)
    with Store.open(root) as store:
        assert [f.key for f in store.shape.features] == ["rocksdb-consumequeue"]
        assert sum(b.num_rows for b in store.scan()) == sum(b.num_rows for b in Store.open(DEFAULT).scan())
        reads = (store.topics, lambda: store.queue_ids("TopicTest"),
                 lambda: store.consume_queue("TopicTest", 0))
        for read in reads:
            with pytest.raises(UnsupportedShapeError, match=r"RocksDB consume queue .*consume queues"):
                read()
    assert cli_main(["info", str(root), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["shape"]["name"] == "rocksdb-consumequeue"
    assert doc["queues"] is None  # unknown, not "no queues"
    assert doc["consumerGroups"] and all(g["lag"] is None for g in doc["consumerGroups"])
    assert any("RocksDB consume queue" in p for p in doc["problems"])


@pytest.mark.parametrize("where", ["consumerOffsets", "rdb"])
def test_rocksdb_offsets_refuse_group_offsets(tmp_path: Path, where: str) -> None:
    root = _copy(tmp_path)
    _rocksdb(root / "config" / where)
    with Store.open(root) as store:
        assert store.shape.name == "rocksdb-offsets"
        assert store.topics()  # the consume queues are files: they still read
        with pytest.raises(UnsupportedShapeError, match=rf"RocksDB consumer offsets \(config/{where}/\)"):
            store.consumer_offsets()
        with pytest.raises(UnsupportedShapeError):
            store.group_offsets("consumer-group")


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
