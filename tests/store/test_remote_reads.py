"""What a query downloads from a store on S3 (a moto server on loopback): index probes, queue and
coverage reads, the log's end and the streaming tail are ranged reads of what they need, counted at the
io layer (every ranged request of every `ArrowFile`), and the answers equal the local store's."""

from __future__ import annotations

import os
import pickle
import shutil
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from helpers.store_builder import BASE_TS, StoreBuilder
from rmqstore.cachedir import CACHE_DIR_ENV
from rmqstore.format.consumequeue import CQ_UNIT_SIZE
from rmqstore.io import remote
from rmqstore.plan.confirm import confirm
from rmqstore.plan.execute import ReadSettings, run_task
from rmqstore.plan.lookup import find_by_key
from rmqstore.plan.planner import PlanSettings, ReadPlan, plan_read
from rmqstore.plan.predicates import Compare, InSet
from rmqstore.store import Store, StoreCorruptionError, timeline
from rmqstore.store import index as index_module
from rmqstore.store.contract_store import TIMELINE_CACHE_KIND, TIMELINE_CACHE_VERSION
from rmqstore.store.segment_cache import SegmentCache

GEOMETRY = (400_000, 400_000)
"""Slot table and entries too big for the full geometry check: a 9.6 MB index file, probed by ranges."""
TOPICS = ("TopicA", "TopicB", "TopicC", "TopicD")
RECORDS = 4000
_COLUMNS = ["commitLogOffset", "topic", "key", "keys", "msgId", "storeTimestamp"]


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
    for _ in range(2000):
        b.append("T", b"y" * 200)  # no keys, no index files: the walk starts at the segment's start
    b.finish(guard=False)  # the test writes the store again
    upload(b.root, "reads/grow")
    assert Store.open(uri).max_offset == Store.open(b.root).max_offset
    cold = downloads.bytes["commitlog"]
    assert cold > 400_000  # the active segment's records, walked once
    downloads.clear()
    assert Store.open(uri).max_offset == Store.open(b.root).max_offset
    assert downloads.bytes["commitlog"] < 100 << 10
    for _ in range(100):  # the broker appends; the store is synced to S3 again
        b.append("T", b"z" * 200)
    b.finish(guard=False)
    upload(b.root, "reads/grow")
    downloads.clear()
    assert Store.open(uri).max_offset == Store.open(b.root).max_offset == b.cursor
    assert downloads.bytes["commitlog"] < 100 * 300 + (100 << 10)
    # Another store uploaded to the same place is walked from its start.
    shutil.rmtree(b.root)
    other = StoreBuilder(b.root, segment_size=1 << 20)
    for _ in range(2100):
        other.append("T", b"w" * 201)
    other.finish(guard=False)
    upload(other.root, "reads/grow")
    assert Store.open(uri).max_offset == Store.open(other.root).max_offset == other.cursor


def test_a_cold_walk_for_the_end_reads_one_index_header_and_the_log_past_it(s3_server, tmp_path, downloads):
    """E, the newest index file's endPhyOffset, is one 40-byte ranged read; the walk starts at the
    record there (the last keyed one), not at the active segment's first record."""
    endpoint, _, upload = s3_server
    b = StoreBuilder(str(tmp_path / "store"), segment_size=1 << 20)
    for i in range(2000):
        b.append("T", b"y" * 200, keys=f"k{i}")
    for _ in range(10):
        b.append("T", b"n" * 200)  # past the index's end
    b.finish()
    upload(b.root, "reads/cold")
    store = Store.open(f"s3://reads/cold?endpoint_override={endpoint}&scheme=http&region=us-east-1")
    assert store.max_offset == b.cursor > 400_000
    assert downloads.requests["index"] == 1 and downloads.bytes["index"] == 40
    assert downloads.bytes["commitlog"] < 32 << 10
    assert store.stats.records_walked == 11


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


def _queue_files(store: Store) -> list:
    queues = [store.consume_queue(t, q) for t in store.topics() for q in store.queue_ids(t)]
    return [seg for queue in queues for seg in queue.segments]


def test_a_cold_key_lookup_downloads_each_queue_file_once(stored, downloads):
    """The coverage a first lookup builds reads each remote queue file once: the windows that found its
    end are kept, the units and the first unit are not downloaded again."""
    b, uri = stored
    store = Store.open(uri, index_geometry=GEOMETRY)
    wanted = [Compare("key", "=", "key-2345")]
    assert _rows(store, wanted) == _rows(Store.open(b.root, index_geometry=GEOMETRY), wanted) != []
    # Each file: its units up to twice over (the windows grow x2), or one first window of 20 KiB.
    files = len(_queue_files(store))
    assert 0 < downloads.bytes["consumequeue"] <= 2 * CQ_UNIT_SIZE * RECORDS + files * (20 << 10)


def test_a_new_process_looks_a_key_up_from_the_cache_directory(stored, downloads):
    """What a first lookup built (valid end, coverage, side index) is on disk: another process (a second
    Spark session, an executor) downloads the probe and the record, not the queues or the log."""
    b, uri = stored
    wanted = [Compare("key", "=", "key-3456")]
    index_module._REMOTE_VERDICTS.clear()  # a fresh process's state (earlier tests filled it)
    downloads.clear()
    assert _rows(Store.open(uri, index_geometry=GEOMETRY), wanted) != []
    cold = downloads.total
    downloads.clear()
    index_module._REMOTE_VERDICTS.clear()  # a fresh process's state; the cache directory stays
    assert _rows(Store.open(uri, index_geometry=GEOMETRY), wanted) == _rows(Store.open(b.root), wanted)
    assert downloads.bytes["consumequeue"] == 0
    assert downloads.bytes["commitlog"] < 64 << 10
    assert downloads.total < 256 << 10 < cold



def test_executor_key_probes_read_each_candidate_once(stored, downloads):
    """Many keys are probed on executors: each task prefetches its slots, then reads its candidates in
    one gathered read per segment (the reader confirms them), not one lookup read per key."""
    _, uri = stored
    store = Store.open(uri, index_geometry=GEOMETRY)
    keys = tuple(f"key-{i}" for i in range(0, RECORDS, RECORDS // 100))
    predicates = [InSet("key", keys)]
    plan = plan_read([store], [predicates], PlanSettings())
    assert {type(task).__name__ for task in plan.tasks} == {"KeyProbeTask"}
    downloads.clear()
    rows = [row for task in plan.tasks
            for batch in run_task(task, pickle.loads(pickle.dumps(store)), ["key"], ReadSettings())
            for row in confirm(batch, predicates).to_pylist()]
    assert sorted(row["key"] for row in rows) == sorted(keys)
    assert downloads.requests["commitlog"] <= len(plan.tasks) * len(store.segments)


def _cold(uri: str, plan_with: list, confirm_with: list, downloads: Downloads,
          geometry: tuple[int, int] | None = GEOMETRY) -> tuple[int, str, Counter[str]]:
    """Rows (confirmed by `confirm_with`), access path and downloads of a query planned with
    `plan_with` in a cold process (empty cache directory, fresh process state), each task on a pickled
    store like an executor."""
    index_module._REMOTE_VERDICTS.clear()
    for kind in ("coverage", "logend", "logend-crc", "side-index"):
        shutil.rmtree(os.path.join(os.environ[CACHE_DIR_ENV], kind), ignore_errors=True)
    downloads.clear()
    store = Store.open(uri, index_geometry=geometry)
    plan = plan_read([store], [plan_with], PlanSettings(key_probe_partition_threshold=4))
    rows = sum(confirm(batch, confirm_with).num_rows for task in plan.tasks
               for batch in run_task(task, pickle.loads(pickle.dumps(store)), _COLUMNS, ReadSettings()))
    return rows, plan.access[0], Counter(downloads.bytes)


@pytest.mark.parametrize("name", ["key =", "key IN (on executors)", "msgId =", "storeTimestamp window"])
def test_no_pushed_query_downloads_more_than_the_unpushed_one(stored, downloads, name):
    """Cold (empty cache directory, fresh process state), each pushed query against the same query
    planned without predicates, confirmed by the same reader: the pushed one downloads less. The time
    window is measured with its time summaries cached (a first window scans: see
    test_a_first_time_window_scans_and_summarizes_for_the_next)."""
    b, uri = stored
    local = Store.open(b.root, index_geometry=GEOMETRY)
    middle = b.written[RECORDS // 2]
    row = local.read_offsets([middle.offset], ["msgId", "storeTimestamp"])
    msg_id = row.column("msgId")[0].as_py()
    at_us = pc.cast(row.column("storeTimestamp"), pa.int64())[0].as_py()
    predicates = {
        "key =": [Compare("key", "=", "key-2001")],
        "key IN (on executors)": [InSet("key", tuple(f"key-{i}" for i in range(0, RECORDS, RECORDS // 10)))],
        "msgId =": [Compare("msgId", "=", msg_id)],
        "storeTimestamp window": [Compare("storeTimestamp", ">=", at_us),
                                  Compare("storeTimestamp", "<=", at_us + 1000)],
    }[name]
    access = {"key =": "key-index", "key IN (on executors)": "key-index", "msgId =": "offsets",
              "storeTimestamp window": "range"}[name]
    if name == "storeTimestamp window":
        Store.open(uri).seek_time(0)  # the summaries, walked and cached
    pushed_rows, pushed_access, pushed = _cold(uri, predicates, predicates, downloads)
    scan_rows, scan_access, scan = _cold(uri, [], predicates, downloads)
    assert (pushed_access, scan_access) == (access, "scan")
    assert pushed_rows == scan_rows > 0
    assert pushed.total() < scan.total(), (pushed, scan)


@pytest.mark.parametrize("topic", ["Dense", "Sparse"])
def test_a_remote_topic_plan_scans_a_dense_topic_and_reads_a_sparse_one_by_points(s3_server, tmp_path,
                                                                                  downloads, topic):
    """Without reading the topic's queue units (`planner._units_bound`: one unit read per queue tells
    that a queue has as many units as a dense topic has), a topic whose point reads could download
    about every byte (Dense: 30% of the records, ~800 bytes apart) is scanned: the commit log and index
    bytes of the unpushed scan, plus that unit; a sparse one (Sparse: one record in 500, ~125 KB apart)
    is read by points: a few % of the scan."""
    endpoint, _, upload = s3_server
    b = StoreBuilder(str(tmp_path / "store"), segment_size=256 << 10, cq_units_per_segment=20_000)
    for i in range(6000):
        name = "Sparse" if i % 500 == 7 else "Dense" if i % 10 < 3 else "Other"
        b.append(name, b"x" * (i * 37 % 300), keys=f"key-{i}", queue_id=i % 2)
    b.finish()
    upload(b.root, "reads/topics")
    uri = f"s3://reads/topics?endpoint_override={endpoint}&scheme=http&region=us-east-1"
    wanted = [Compare("topic", "=", topic)]
    pushed_rows, pushed_access, pushed = _cold(uri, wanted, wanted, downloads, None)
    scan_rows, _, scan = _cold(uri, [], wanted, downloads, None)
    assert pushed_rows == scan_rows == sum(1 for w in b.written if w.topic == topic)
    if topic == "Dense":
        assert pushed_access == "scan"
        assert pushed["commitlog"] == scan["commitlog"] and pushed["index"] == scan["index"]
        assert pushed["consumequeue"] == CQ_UNIT_SIZE  # the one unit read of the decision
        assert pushed.total() == scan.total() + CQ_UNIT_SIZE
    else:
        assert pushed_access == "queues"
        assert pushed.total() < scan.total() / 4, (pushed, scan)
        assert pushed["commitlog"] < scan["commitlog"] / 10  # the rest: the queues' ends (coverage)




HOUR = 3_600_000
STEPS = (4500, 9900)
"""The clock steps back 3 h at the first record and 2 h more at the second."""


def _append_stepped(b: StoreBuilder, first: int, last: int) -> None:
    """Records first..last-1, 1 s apart but for the clock's `STEPS` back."""
    for i in range(first, last):
        b.append("T", b"t" * (40 + i * 7 % 60), keys=f"k{i}",
                 store_ts=BASE_TS + i * 1000 - 3 * HOUR * (i >= STEPS[0]) - 2 * HOUR * (i >= STEPS[1]))


def _window_rows(uri: str, window: tuple[int, int], settings: PlanSettings, *, pushed: bool,
                 executor_cache: str | None = None) -> tuple[list[int], ReadPlan]:
    """The offsets of the rows in the window [begin, end] (ms), read by the plan of the window (else of
    no predicate), each task on a pickled copy of the driver's store (an executor; its cache directory
    is `executor_cache` when given, else the driver's), and the plan."""
    predicates = [Compare("storeTimestamp", ">=", window[0] * 1000),
                  Compare("storeTimestamp", "<=", window[1] * 1000)]
    store = Store.open(uri)
    plan = plan_read([store], [predicates if pushed else []], settings)
    with pytest.MonkeyPatch.context() as mp:
        if executor_cache is not None:
            mp.setenv(CACHE_DIR_ENV, executor_cache)
        rows = [offset for task in plan.tasks
                for batch in run_task(task, pickle.loads(pickle.dumps(store)), _COLUMNS, ReadSettings())
                for offset in confirm(batch, predicates).column("commitLogOffset").to_pylist()]
    return sorted(rows), plan


def test_a_first_time_window_scans_and_summarizes_for_the_next(s3_server, tmp_path, downloads):
    """Cold (empty cache directory), a window on a remote store downloads no more than the scan without
    pushdown: the segments whose store times are not summarized are scanned whole, and each task caches
    the summary of its piece. The next windows join the pieces and download a little; every window,
    around the clock steps back too, returns the rows of the unpushed scan. Pieces describe what was
    read: once the active segment has grown, its pieces are not used (it is scanned again)."""
    endpoint, _, upload = s3_server
    b = StoreBuilder(str(tmp_path / "store"), segment_size=256 << 10)
    _append_stepped(b, 0, 12_000)
    b.finish(guard=False)  # the test writes the store again
    upload(b.root, "reads/stepped")
    uri = f"s3://reads/stepped?endpoint_override={endpoint}&scheme=http&region=us-east-1"
    settings = PlanSettings(max_bytes_per_partition=96 << 10)  # 3 tasks per segment
    timeline_dir = os.path.join(os.environ[CACHE_DIR_ENV], "timeline")

    def brute(window: tuple[int, int]) -> list[int]:
        return [w.offset for w in b.written if window[0] <= w.store_ts <= window[1]]

    first = (BASE_TS + (STEPS[0] - 100) * 1000, BASE_TS + (STEPS[0] + 100) * 1000)  # 100 records
    assert _window_rows(uri, first, PlanSettings(), pushed=False)[0] == brute(first) != []
    scan = downloads.total  # a task per segment: each downloaded once
    shutil.rmtree(os.environ[CACHE_DIR_ENV])
    downloads.clear()
    rows, plan = _window_rows(uri, first, PlanSettings(), pushed=True)
    assert rows == brute(first)
    assert downloads.total <= scan
    assert plan.access == ["scan"] and all(task.summarize for task in plan.tasks)
    # Again cold, in 3 tasks per segment: each caches its piece.
    shutil.rmtree(os.environ[CACHE_DIR_ENV])
    assert _window_rows(uri, first, settings, pushed=True)[0] == brute(first)
    (pieces,) = os.listdir(timeline_dir)
    files = os.listdir(os.path.join(timeline_dir, pieces))
    asked = [name for name in files if name.endswith(".asked.json")]  # the plan's note, per segment
    assert len(asked) == len(plan.tasks) and len(files) - len(asked) == 3 * len(plan.tasks)

    store = Store.open(uri)
    for window in [first, (BASE_TS - 5 * HOUR + STEPS[1] * 1000, BASE_TS - 5 * HOUR + (STEPS[1] + 50) * 1000),
                   (BASE_TS - 3 * HOUR + (STEPS[0] - 10) * 1000, BASE_TS - 3 * HOUR + (STEPS[0] + 10) * 1000),
                   (BASE_TS - 3 * HOUR + (STEPS[1] - 10) * 1000, BASE_TS + 10_000)]:
        downloads.clear()
        rows, plan = _window_rows(uri, window, settings, pushed=True)
        assert downloads.total < (store.max_offset - store.min_offset) / 4  # bisections and the window
        assert rows == _window_rows(uri, window, settings, pushed=False)[0] == brute(window) != []
        assert plan.access == ["range"] and not any(task.summarize for task in plan.tasks)
    assert not os.listdir(os.path.join(timeline_dir, pieces))  # joined, then dropped

    # The broker appends to the active segment, which is uploaded again (the others are unchanged).
    old_base = store.log.segment_at(store.max_offset - 1).base_offset
    _append_stepped(b, 12_000, 12_100)
    b.finish(guard=False)
    changed = tmp_path / "changed"
    for seg in Store.open(b.root).segments:
        if seg.base_offset >= old_base:
            os.makedirs(changed / "commitlog", exist_ok=True)
            shutil.copy(seg.path, changed / "commitlog")
    upload(str(changed), "reads/stepped")
    store = Store.open(uri)
    assert store.max_offset == b.cursor
    assert store.unsummarized_spans() == [(a, z) for a, z in store.segment_spans() if z > old_base]
    tail = (BASE_TS - 5 * HOUR + 11_990_000, BASE_TS - 5 * HOUR + 13_000_000)
    assert _window_rows(uri, tail, settings, pushed=True)[0] == brute(tail) != []
    assert brute(tail)[-1] == b.written[-1].offset
    assert Store.open(uri).unsummarized_spans() == []


def test_executors_without_the_drivers_cache_cost_one_walk_then_small_windows(s3_server, tmp_path, downloads):
    """Executors with a cache directory of their own (a cluster without a shared one): the first window
    scans (no more than the unpushed scan) and its tasks' pieces stay with them; the next plan walks the
    segments its tasks were asked to summarize (one download of the log, on the driver) and reads the
    window; every later window downloads a little. Rows exact each time."""
    endpoint, _, upload = s3_server
    b = StoreBuilder(str(tmp_path / "store"), segment_size=256 << 10)
    _append_stepped(b, 0, 12_000)
    b.finish()
    upload(b.root, "reads/cluster")
    uri = f"s3://reads/cluster?endpoint_override={endpoint}&scheme=http&region=us-east-1"
    store = Store.open(uri)
    log_bytes = store.max_offset - store.min_offset
    executor = str(tmp_path / "executor-cache")
    windows = [(BASE_TS + (STEPS[0] - 100) * 1000, BASE_TS + (STEPS[0] + 100) * 1000),
               (BASE_TS - 3 * HOUR + (STEPS[0] - 10) * 1000, BASE_TS - 3 * HOUR + (STEPS[0] + 10) * 1000),
               (BASE_TS - 5 * HOUR + STEPS[1] * 1000, BASE_TS - 5 * HOUR + (STEPS[1] + 50) * 1000)]
    expected = [[w.offset for w in b.written if lo <= w.store_ts <= hi] for lo, hi in windows]
    assert all(expected)
    unpushed = _window_rows(uri, windows[0], PlanSettings(), pushed=False, executor_cache=executor)[0]
    assert unpushed == expected[0]
    scan = downloads.total
    shutil.rmtree(os.environ[CACHE_DIR_ENV])  # the driver's: cold

    downloads.clear()
    rows, plan = _window_rows(uri, windows[0], PlanSettings(), pushed=True, executor_cache=executor)
    first = downloads.total
    assert rows == expected[0] and plan.access == ["scan"] and all(task.summarize for task in plan.tasks)
    assert first <= scan
    assert os.listdir(os.path.join(executor, "timeline"))  # the pieces, where the driver does not read

    downloads.clear()
    planned = plan_read([Store.open(uri)], [[Compare("storeTimestamp", ">=", windows[1][0] * 1000),
                                             Compare("storeTimestamp", "<=", windows[1][1] * 1000)]],
                        PlanSettings())
    walk = downloads.total  # the driver's walk of every segment, once, and the window's bisections
    assert log_bytes <= walk < 1.5 * log_bytes  # one walk (its end checks and bisections: ~8 KiB reads
    # per run edge, some 15% of these 256 KiB segments), never two
    assert planned.access == ["range"] and not any(task.summarize for task in planned.tasks)
    assert [n for n in planned.notes if "walked by the driver" in n] == [
        f"store {store.path}: the store times of {len(store.segment_spans())} segment(s), {log_bytes} "
        "bytes, were walked by the driver: the tasks of an earlier time window summarized them where the "
        "driver does not read (give the executors the driver's cache directory, "
        "spark.executorEnv.RMQSTORE_CACHE_DIR) or failed"]
    downloads.clear()
    rows, plan = _window_rows(uri, windows[1], PlanSettings(), pushed=True, executor_cache=executor)
    assert rows == expected[1] and plan.access == ["range"] and not any(t.summarize for t in plan.tasks)
    second = downloads.total
    assert second < log_bytes / 4

    downloads.clear()
    rows, plan = _window_rows(uri, windows[2], PlanSettings(), pushed=True, executor_cache=executor)
    third = downloads.total
    assert rows == expected[2] and plan.access == ["range"] and plan.notes == []
    assert third < log_bytes / 4


def test_a_task_caches_its_piece_only_when_it_read_all_of_it_undamaged(s3_server, tmp_path):
    """A summary must hold every record a later read returns: a task that stepped over a damaged record
    (PERMISSIVE), failed on one (FAILFAST) or was not read to the end caches nothing; a task read to the
    end caches its piece. The next plan joins the pieces and walks the segment whose tasks were asked
    and cached nothing (PERMISSIVE, as a walk does)."""
    endpoint, _, upload = s3_server
    b = StoreBuilder(str(tmp_path / "store"), segment_size=64 << 10)
    _append_stepped(b, 0, 600)  # two segments
    b.finish(guard=False)  # damaged below
    damaged = b.written[100].offset  # MAGICCODE overwritten: an invalid record in the sealed segment
    with open(os.path.join(b.root, "commitlog", f"{0:020d}"), "r+b") as fh:
        fh.seek(damaged + 4)
        fh.write(b"\0\0\0\0")
    upload(b.root, "reads/damaged")
    uri = f"s3://reads/damaged?endpoint_override={endpoint}&scheme=http&region=us-east-1"
    predicates = [Compare("storeTimestamp", ">=", BASE_TS * 1000)]
    store = Store.open(uri)
    plan = plan_read([store], [predicates], PlanSettings())
    spans = store.segment_spans()
    assert [(t.start, t.end, t.summarize) for t in plan.tasks] == [(a, z, True) for a, z in spans]
    permissive = pickle.loads(pickle.dumps(store))
    rows = [row for batch in run_task(plan.tasks[0], permissive, _COLUMNS, ReadSettings(mode="PERMISSIVE"))
            for row in batch.column("commitLogOffset").to_pylist()]
    assert damaged not in rows and permissive.stats.invalid_records_skipped == 1
    with pytest.raises(StoreCorruptionError):
        list(run_task(plan.tasks[0], pickle.loads(pickle.dumps(store)), _COLUMNS, ReadSettings()))
    stopped = run_task(plan.tasks[1], pickle.loads(pickle.dumps(store)), _COLUMNS, ReadSettings())
    next(stopped)
    stopped.close()

    def cached_pieces() -> list[list[int]]:
        cache = SegmentCache.for_store(store, TIMELINE_CACHE_KIND, TIMELINE_CACHE_VERSION,
                                       content_checked=True)
        assert cache is not None
        return [sorted(cache.pieces(store, store.log.segment_at(a))) for a, _ in spans]

    assert cached_pieces() == [[], []]
    list(run_task(plan.tasks[1], pickle.loads(pickle.dumps(store)), _COLUMNS, ReadSettings()))
    assert cached_pieces() == [[], [spans[1][0]]]
    again = Store.open(uri)
    assert again.unsummarized_spans() == []  # the first walked, the second joined
    assert timeline.window_runs(again).runs == timeline.time_runs(Store.open(b.root))


@pytest.mark.parametrize(("piece_bytes", "max_runs"),
                         [(7_001, timeline.MAX_RUNS), (30_000, timeline.MAX_RUNS), (7_001, 3)])
def test_pieces_join_into_the_summary_a_walk_makes(s3_server, tmp_path, monkeypatch, piece_bytes, max_runs):
    """Pieces cut anywhere (resynced to records), a clock that steps back by hours and jitters by seconds,
    a segment with more than `MAX_RUNS` runs: the runs joined from the pieces the tasks cached are the
    runs of one walk of each segment."""
    monkeypatch.setattr(timeline, "MAX_RUNS", max_runs)
    endpoint, _, upload = s3_server
    b = StoreBuilder(str(tmp_path / "store"), segment_size=64 << 10)
    for i in range(1500):
        jitter = -5000 * (200 <= i < 400 and i % 37 == 0)
        b.append("T", b"j" * (30 + i * 11 % 70), store_ts=BASE_TS + i * 1000 + jitter - 3 * HOUR * (i >= 700)
                 - 2 * HOUR * (i >= 1200))
    b.finish()
    location = f"reads/joined-{piece_bytes}-{max_runs}"
    upload(b.root, location)
    uri = f"s3://{location}?endpoint_override={endpoint}&scheme=http&region=us-east-1"
    store = Store.open(uri)
    window = [Compare("storeTimestamp", ">=", 0)]
    plan = plan_read([store], [window], PlanSettings(max_bytes_per_partition=piece_bytes))
    assert len(plan.tasks) > 2 * len(store.segment_spans()) and all(task.summarize for task in plan.tasks)
    for task in plan.tasks:
        batches = run_task(task, pickle.loads(pickle.dumps(store)), ["commitLogOffset"], ReadSettings())
        assert sum(batch.num_rows for batch in batches) > 0
    runs, unknown, walked = timeline.window_runs(Store.open(uri))
    assert unknown == walked == []
    walked = timeline.time_runs(Store.open(b.root))
    assert runs == walked
    assert len(walked) > len(store.segment_spans())  # the steps
    assert (max_runs == 3) == any(not run.ordered for run in walked)  # the jittering segment
