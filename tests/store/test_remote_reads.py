"""What a query downloads from a store on S3 (a moto server on loopback): index probes, queue and
coverage reads, the log's end and the streaming tail are ranged reads of what they need, counted at the
io layer (every ranged request of every `ArrowFile`), and the answers equal the local store's."""

from __future__ import annotations

import os
import pickle
import shutil
from collections import Counter

import pytest
from store_builder import StoreBuilder

from rmqstore.cachedir import CACHE_DIR_ENV
from rmqstore.io import remote
from rmqstore.plan.confirm import confirm
from rmqstore.plan.execute import ReadSettings, run_task
from rmqstore.plan.lookup import find_by_key
from rmqstore.plan.planner import PlanSettings, plan_read
from rmqstore.plan.predicates import Compare
from rmqstore.store import Store

GEOMETRY = (400_000, 400_000)
"""Slot table and entries too big for the full geometry check: a 9.6 MB index file, probed by ranges."""
TOPICS = ("TopicA", "TopicB", "TopicC", "TopicD")
RECORDS = 4000


class Downloads:
    """Bytes and requests per store directory (`commitlog`, `index`, `consumequeue`, ...)."""

    def __init__(self) -> None:
        self.bytes: Counter[str] = Counter()
        self.requests: Counter[str] = Counter()

    def add(self, path: str, length: int) -> None:
        kind = path.split("/")[2] if path.count("/") > 2 else path
        self.bytes[kind] += length
        self.requests[kind] += 1

    @property
    def total(self) -> int:
        return sum(self.bytes.values())

    def clear(self) -> None:
        self.bytes.clear()
        self.requests.clear()


@pytest.fixture
def downloads(monkeypatch) -> Downloads:
    """Every ranged request any remote file makes from now on (`ArrowFile._fetch`)."""
    seen = Downloads()
    fetch = remote.ArrowFile._fetch

    def counted(self, offset, length):
        data = fetch(self, offset, length)
        seen.add(self.path, len(data))
        return data

    monkeypatch.setattr(remote.ArrowFile, "_fetch", counted)
    return seen


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


@pytest.fixture(scope="module")
def stored(s3_server, tmp_path_factory):
    """(builder, uri) of a 4-topic store with unique keys, pre-allocated queue files, one big index file."""
    endpoint, _, upload = s3_server
    b = StoreBuilder(str(tmp_path_factory.mktemp("remote-reads") / "store"), segment_size=256 << 10,
                     cq_units_per_segment=20_000, hash_slots=GEOMETRY[0], index_entries=GEOMETRY[1])
    for i in range(RECORDS):
        b.append(TOPICS[i % 4 if i % 10 else 0], b"x" * (i * 37 % 300), keys=f"key-{i}", tags=f"Tag{i % 3}",
                 queue_id=i % 2)
    b.finish()
    upload(b.root, "reads/store")
    return b, f"s3://reads/store?endpoint_override={endpoint}&scheme=http&region=us-east-1"


def _rows(store: Store, predicates) -> list[dict]:
    plan = plan_read([store], [predicates], PlanSettings())
    rows = [row for task in plan.tasks for batch in run_task(task, store, ["commitLogOffset", "topic", "key"],
                                                               ReadSettings())
            for row in confirm(batch, predicates).to_pylist()]
    return sorted(rows, key=lambda r: r["commitLogOffset"])


def test_a_key_lookup_reads_index_slots_and_chains_not_index_files(stored, downloads):
    b, uri = stored
    local = Store.open(b.root, index_geometry=GEOMETRY)
    index_size = os.path.getsize(local.index_files[0].path)
    wanted = [Compare("key", "=", "key-1234")]
    store = Store.open(uri, index_geometry=GEOMETRY)
    assert _rows(store, wanted) == _rows(local, wanted) == [
        {"commitLogOffset": b.written[1234].offset, "topic": TOPICS[1234 % 4], "key": "key-1234"}]
    first = downloads.total
    # The header, ~300 sampled slots and entries of the geometry check, then per topic one slot and
    # the chain entries walked (4 KiB pages): a few % of the file, and less of a bigger one.
    assert downloads.bytes["index"] < index_size / 32
    # Asked again (coverage cached, the log's end resumed): the probe and the record, a few pages.
    downloads.clear()
    again = Store.open(uri, index_geometry=GEOMETRY)
    assert _rows(again, wanted) == _rows(local, wanted)
    assert downloads.bytes["consumequeue"] == 0 and downloads.bytes["index"] < 64 << 10
    assert downloads.total < 256 << 10, downloads.bytes
    # An executor probing with the pickled store reads pages too, never the index file.
    downloads.clear()
    executor = pickle.loads(pickle.dumps(again))
    assert find_by_key(executor, "key-77", ["TopicB"]) == find_by_key(local, "key-77", ["TopicB"]) != []
    assert downloads.bytes["index"] < 64 << 10
    # No pushed query downloads more than the unpushed one.
    downloads.clear()
    scan = Store.open(uri, index_geometry=GEOMETRY)
    assert sum(batch.num_rows for batch in scan.scan(columns=["commitLogOffset"])) == RECORDS
    assert first < downloads.total


def test_a_topic_plan_downloads_the_queues_it_uses_and_caches_coverage(stored, downloads):
    b, uri = stored
    local = Store.open(b.root)
    wanted = [Compare("topic", "=", "TopicC")]
    assert _rows(Store.open(uri), wanted) == _rows(local, wanted) != []
    used_queue_bytes = 20 * RECORDS
    assert downloads.bytes["consumequeue"] < 3 * used_queue_bytes + 4 * 80 << 10  # not the 400 KB files
    downloads.clear()
    assert _rows(Store.open(uri), wanted) == _rows(local, wanted)
    topic_queue_bytes = 20 * sum(1 for w in b.written if w.topic == "TopicC")
    assert downloads.bytes["consumequeue"] < 2 * topic_queue_bytes + 2 * 80 << 10  # only TopicC's queues


def test_the_log_end_walk_resumes_where_it_ended(s3_server, tmp_path, downloads):
    endpoint, _, upload = s3_server
    uri = f"s3://reads/grow?endpoint_override={endpoint}&scheme=http&region=us-east-1"
    b = StoreBuilder(str(tmp_path / "store"), segment_size=1 << 20)
    for i in range(2000):
        b.append("T", b"y" * 200, keys=f"k{i}")
    b.finish(guard=False)  # the test writes the store again
    upload(b.root, "reads/grow")
    assert Store.open(uri).max_offset == Store.open(b.root).max_offset
    cold = downloads.bytes["commitlog"]
    assert cold > 400_000  # the active segment's records, walked once
    downloads.clear()
    assert Store.open(uri).max_offset == Store.open(b.root).max_offset
    assert downloads.bytes["commitlog"] < 100 << 10
    for i in range(100):  # the broker appends; the store is synced to S3 again
        b.append("T", b"z" * 200, keys=f"n{i}")
    b.finish(guard=False)
    upload(b.root, "reads/grow")
    downloads.clear()
    assert Store.open(uri).max_offset == Store.open(b.root).max_offset == b.cursor
    assert downloads.bytes["commitlog"] < 100 * 300 + (100 << 10)
    # Another store uploaded to the same place is walked from its start.
    shutil.rmtree(b.root)
    other = StoreBuilder(b.root, segment_size=1 << 20)
    for i in range(2100):
        other.append("T", b"w" * 201, keys=f"o{i}")
    other.finish(guard=False)
    upload(other.root, "reads/grow")
    assert Store.open(uri).max_offset == Store.open(other.root).max_offset == other.cursor


def test_many_key_probes_fetch_their_slots_and_first_entries_together(stored, downloads):
    b, uri = stored
    store = Store.open(uri, index_geometry=GEOMETRY)
    keys = [f"key-{i}" for i in range(100, 3000, 97)]
    _ = store.index_files, store.max_offset
    downloads.clear()
    store.prefetch_index(keys, ["TopicB"])
    fetched = downloads.requests["index"]
    assert 0 < fetched <= 2 * len(keys)
    downloads.clear()
    found = [find_by_key(store, key, ["TopicB"]) for key in keys]
    assert downloads.requests["index"] <= 2  # the probes walk pages fetched by the prefetch
    local = Store.open(b.root, index_geometry=GEOMETRY)
    assert found == [find_by_key(local, key, ["TopicB"]) for key in keys]
    assert sum(map(len, found)) == sum(1 for i in range(100, 3000, 97) if b.written[i].topic == "TopicB")
