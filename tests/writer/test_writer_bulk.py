"""The bulk (production-shape) writer: a sound store (`rmqstore verify`), deterministic per seed, whose
summary names records the lookups find, with the topic shares and consumer group it promises."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from rmqstore.cli.verify import verify
from rmqstore.format.brokerconfig import consumer_offsets, parse_fastjson
from rmqstore.format.consumequeue import parse_units
from rmqstore.plan.lookup import find_by_key, find_by_msg_id, find_by_uniq_key
from rmqstore.store import Store
from rmqstore.writer.bulk import GROUP, GROUP_LAG, BulkShape, BulkSummary, create_bulk_store

SHAPE = BulkShape(target_bytes=3 << 20, topics=40, queues=4, seed=3, segment_size=1 << 20, cq_units=300,
                  index_hash_slots=97, index_entries=2000, hot_share=0.05, key_repeats=5)


@pytest.fixture(scope="module")
def bulk(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, BulkSummary]:
    path = tmp_path_factory.mktemp("bulk") / "store"
    return path, create_bulk_store(path, SHAPE)


def _files(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_bulk_store_is_sound(bulk) -> None:
    path, summary = bulk
    args = argparse.Namespace(no_progress=True)
    with Store.open(path) as store:
        findings = verify(store, args)
    assert findings.sound, (dict(findings.errors), findings.error_examples)
    assert findings.counts["records"] == summary.records > 2000
    assert findings.counts["index entries"] == 2 * summary.records
    assert summary.index_files == findings.counts["index files"] > 2
    segments = sorted((path / "commitlog").iterdir())
    assert [int(p.name) for p in segments] == [i << 20 for i in range(4)]
    assert summary.log_bytes >= SHAPE.target_bytes


def test_bulk_summary_names_records_the_lookups_find(bulk) -> None:
    path, summary = bulk
    middle = summary.middle
    with Store.open(path) as store:
        assert find_by_key(store, middle.key) == [middle.phy]
        assert find_by_uniq_key(store, middle.uniq_key) == [middle.phy]
        assert find_by_msg_id(store, middle.msg_id) == [middle.phy]
        repeated = find_by_key(store, middle.repeated_key)
        holders = -(-summary.records // 16)  # every 16th record holds a repeated key
        assert len(repeated) in (holders // summary.key_groups, holders // summary.key_groups + 1)
        assert len(set(repeated)) == len(repeated) and max(repeated) - min(repeated) > summary.log_bytes // 2
        row = store.read_offsets([middle.phy], ["topic", "storeTimestamp"]).to_pylist()[0]
    assert row["topic"] == middle.topic and row["storeTimestamp"].timestamp() * 1000 == middle.store_timestamp


def test_bulk_topics_queues_and_group(bulk) -> None:
    path, summary = bulk
    counts = {d.name: sum(_units(f) for f in d.rglob("*") if f.is_file()) for d in
              (path / "consumequeue").iterdir()}
    assert sum(counts.values()) == summary.records and len(counts) == SHAPE.topics
    assert 0.03 < counts[summary.hot_topic] / summary.records < 0.07
    queues = {q.name for q in (path / "consumequeue" / summary.hot_topic).iterdir()}
    assert queues == {str(q) for q in range(SHAPE.queues)}
    offsets = consumer_offsets(parse_fastjson((path / "config" / "consumerOffset.json").read_text()))
    with Store.open(path) as store:
        heads = {q: store.consume_queue(summary.hot_topic, q).max_offset for q in range(SHAPE.queues)}
    assert offsets[(summary.hot_topic, GROUP)] == {q: max(head - GROUP_LAG, 0) for q, head in heads.items()}


def _units(file: Path) -> int:
    return int(np.count_nonzero(parse_units(file.read_bytes())["size"]))


def test_bulk_is_deterministic_per_seed(tmp_path: Path, bulk) -> None:
    small = BulkShape(target_bytes=300_000, topics=3, seed=3, segment_size=1 << 17, cq_units=100,
                      index_hash_slots=11, index_entries=500)
    create_bulk_store(tmp_path / "a", small)
    create_bulk_store(tmp_path / "b", small)
    create_bulk_store(tmp_path / "c", BulkShape(**{**small.__dict__, "seed": 4}))
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert _files(tmp_path / "a")["commitlog/00000000000000000000"] != _files(tmp_path / "c")[
        "commitlog/00000000000000000000"]
