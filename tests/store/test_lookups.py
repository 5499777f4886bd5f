"""Key / uniqKey / msgId lookups against a brute-force scan: collisions, multi-key records, damage."""

from __future__ import annotations

import os
import re
import struct
from types import SimpleNamespace

import pytest

from helpers.store_builder import StoreBuilder, fill
from rmqstore.format.hosts import encode_host
from rmqstore.format.indexfile import INDEX_HEADER_SIZE, INDEX_SLOT_SIZE, index_file_size
from rmqstore.format.javahash import index_key_hash
from rmqstore.format.layout import TRANSACTION_PREPARED, TRANSACTION_ROLLBACK
from rmqstore.format.msgid import offset_msg_id
from rmqstore.plan.lookup import (
    find,
    find_by_key,
    find_by_msg_id,
    find_by_uniq_key,
    key_predicates,
    uniq_key_predicates,
)
from rmqstore.store import IndexUnavailableError, Store


def brute_keys(written, key, topics=None):
    return [w.offset for w in written
            if key in (w.keys or "").split(" ") and (topics is None or w.topic in topics)]


def refused_then_scanned(store, value, match, expected, *, uniq=False):
    """The store's index refuses (IndexUnavailableError matching `match`); a lookup then scans, says
    why in a plan note, and still returns `expected`."""
    with pytest.raises(IndexUnavailableError, match=match):
        store.index_candidates(value)
    found = find(store, uniq_key_predicates(value) if uniq else key_predicates(value))
    assert found.plan.access == ["scan"]
    assert any("index cannot answer" in note and re.search(match, note) for note in found.plan.notes)
    assert found.offsets == expected


@pytest.fixture
def store_with_index(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), segment_size=4096, hash_slots=4, index_entries=24)
    written = fill(b, 60)
    b.append("AaTopic", keys="BB", uniq_key="U1")
    b.append("BBTopic", keys="Aa", uniq_key="U1")
    b.append("BBTopic", keys="BB dup dup", uniq_key="U2")
    written = b.written
    b.finish()
    assert len(b.index_files) > 2  # roll-over happened
    return b, written


def test_key_lookup_matches_brute_force(store_with_index):
    b, written = store_with_index
    store = Store.open(b.root)
    assert [i.problem for i in store.index_files] == [None] * len(b.index_files)
    assert all(i.geometry == (4, 24) for i in store.index_files)
    for key in ["k0", "k3", "shared", "k12", "BB", "Aa", "dup", "missing"]:
        assert find_by_key(store, key) == brute_keys(written, key), key
    assert find_by_key(store, "shared", topics=["TopicB"]) == brute_keys(written, "shared", {"TopicB"})


def test_hash_collisions_are_confirmed_against_topic():
    assert index_key_hash("AaTopic#BB") == index_key_hash("BBTopic#Aa")


def test_colliding_topics(store_with_index):
    b, written = store_with_index
    store = Store.open(b.root)
    aa = next(w for w in written if w.topic == "AaTopic")
    assert find_by_key(store, "BB", topics=["AaTopic"]) == [aa.offset]
    assert find_by_key(store, "Aa", topics=["AaTopic"]) == []
    assert find_by_key(store, "Aa", topics=["BBTopic"]) == [written[-2].offset]


def test_uniq_key_lookup(store_with_index):
    b, written = store_with_index
    store = Store.open(b.root)
    for w in written[::9]:
        assert find_by_uniq_key(store, w.uniq_key) == [w.offset]
    assert find_by_uniq_key(store, "U1") == [written[-3].offset, written[-2].offset]
    assert find_by_uniq_key(store, "U1", topics=["BBTopic"]) == [written[-2].offset]
    assert find_by_uniq_key(store, "nope") == []


def test_time_bounds_use_the_record_time(store_with_index):
    b, written = store_with_index
    store = Store.open(b.root)
    hits = [w for w in written if "shared" in (w.keys or "")]
    mid = hits[len(hits) // 2]
    t = mid.store_ts
    assert find_by_key(store, "shared", begin_ms=t) == [w.offset for w in hits if w.store_ts >= t]
    assert find_by_key(store, "shared", end_ms=t) == [w.offset for w in hits if w.store_ts <= t]


def test_msg_id_lookup(store_with_index):
    b, written = store_with_index
    store = Store.open(b.root)
    host = encode_host("127.0.0.1:10911")
    for w in written[::7]:
        assert find_by_msg_id(store, offset_msg_id(host, w.offset)) == [w.offset]
    assert find_by_msg_id(store, offset_msg_id(encode_host("10.9.9.9:10911"), written[3].offset)) == []
    assert find_by_msg_id(store, offset_msg_id(host, written[3].offset + 1)) == []
    assert find_by_msg_id(store, offset_msg_id(host, store.max_offset + 100)) == []
    assert find_by_msg_id(store, written[3].uniq_key) == []  # a UNIQ_KEY is not an offsetMsgId
    assert find_by_msg_id(store, "zz") == []


def test_unindexed_tail_is_scanned(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), hash_slots=4, index_entries=400)
    written = fill(b, 20)
    snapshot = b.index_files[0].to_bytes()
    for i in range(10):  # written after the index snapshot: not indexed
        b.append("TopicA", keys="shared tail", uniq_key=f"tail-{i}")
    b.index_files = [SimpleNamespace(to_bytes=lambda: snapshot)]
    b.finish()
    store = Store.open(b.root)
    assert find_by_key(store, "shared") == brute_keys(b.written, "shared")
    assert find_by_uniq_key(store, b.written[-1].uniq_key) == [b.written[-1].offset]
    refused_then_scanned(Store.open(b.root, index_tail_scan_limit=100), "shared", "bytes",
                         brute_keys(b.written, "shared"))
    assert written


def test_no_index_at_all(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"))
    fill(b, 10)
    b.index_files = []
    b.finish()
    assert find_by_key(Store.open(b.root), "shared") == brute_keys(b.written, "shared")
    refused_then_scanned(Store.open(b.root, index_tail_scan_limit=0), "shared", "lacks",
                         brute_keys(b.written, "shared"))


def _index_path(root, number):
    names = sorted(os.listdir(os.path.join(root, "index")))
    return os.path.join(root, "index", names[number])


def test_chain_that_loops(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), hash_slots=4, index_entries=400)
    fill(b, 20)
    data = bytearray(b.index_files[0].to_bytes())
    b.index_files = []
    b.finish()
    # entry 5's prevIndex points at itself... then at a newer entry: a loop
    entry_base = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * 4
    struct.pack_into(">i", data, entry_base + 5 * 20 + 16, 9)
    path = os.path.join(b.root, "index", "20240101000000000")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
    from helpers.store_builder import _GUARDED, tree_digest

    _GUARDED[-1] = (b.root, tree_digest(b.root))
    detected = Store.open(b.root)
    assert detected.index_files[0].problem is not None
    refused_then_scanned(detected, "shared", "20240101000000000", brute_keys(b.written, "shared"))
    given = Store.open(b.root, index_geometry=(4, 400))
    assert "chains to entry 9" in given.index_files[0].problem
    refused_then_scanned(given, "k1", "unusable", brute_keys(b.written, "k1"))


def test_damaged_index_is_reported_not_silently_empty(store_with_index):
    b, _ = store_with_index
    path = _index_path(b.root, 0)
    size = os.path.getsize(path)
    assert size == index_file_size(4, 24)
    # A fresh store copy with a truncated index file.
    import shutil

    from helpers.store_builder import _GUARDED, tree_digest

    copy = b.root + "-damaged"
    shutil.copytree(b.root, copy)
    with open(os.path.join(copy, "index", os.path.basename(path)), "r+b") as fh:
        fh.truncate(size - 20)
    _GUARDED.append((copy, tree_digest(copy)))
    store = Store.open(copy)
    assert store.index_files[0].problem and store.index_files[1].problem is None
    assert any("index" in p for p in store.problems)
    refused_then_scanned(store, "k1", os.path.basename(path), brute_keys(b.written, "k1"))
    bad_geometry = Store.open(b.root, index_geometry=(5, 24))
    refused_then_scanned(bad_geometry, "U1", "does not match",
                         [w.offset for w in b.written if w.uniq_key == "U1"], uniq=True)


def test_a_topic_holding_only_prepared_records_is_probed(tmp_path):
    """A topic with only transaction PREPARED records has no consume queue (and no topics.json entry),
    yet the broker indexes them (§5.4): lookups without topics find them, like `queryMessage`. ROLLBACK
    records are not indexed, so a topic holding only those is not probed; lookups find them by scanning
    the ranges the index lacks, as a table scan would."""
    b = StoreBuilder(str(tmp_path / "store"), segment_size=4096, hash_slots=4, index_entries=24)
    fill(b, 30)
    prepared = b.append("TopicTxn", keys="txn-key other", uniq_key="UTXN", sys_flag=TRANSACTION_PREPARED)
    rollback = b.append("TopicRb", keys="txn-key", uniq_key="URB", sys_flag=TRANSACTION_ROLLBACK)
    del b.queues[("TopicTxn", 0)], b.queues[("TopicRb", 0)]  # the broker gives them no unit (§4.1)
    fill(b, 10)
    b.finish()
    store = Store.open(b.root)
    assert find_by_key(store, "other") == [prepared.offset]
    assert find_by_key(store, "txn-key") == [prepared.offset, rollback.offset]
    assert find_by_key(store, "txn-key", topics=["TopicRb"]) == [rollback.offset]
    assert find_by_uniq_key(store, "UTXN") == [prepared.offset]
    assert find_by_uniq_key(store, "URB") == [rollback.offset]
    assert "TopicTxn" not in store.topics() and "TopicTxn" in store.indexed_topics()
    assert "TopicRb" not in store.indexed_topics()
