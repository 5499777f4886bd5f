"""Remote reads (ArrowFileSystem, Store over s3://) against a real S3-compatible server on loopback."""

from __future__ import annotations

import pickle

import pytest

from helpers.store_builder import BASE_TS, StoreBuilder, fill
from rmqstore.cachedir import CACHE_DIR_ENV
from rmqstore.io import ArrowFileSystem, resolve_location
from rmqstore.plan.lookup import find_by_key
from rmqstore.plan.tasks import split_spans
from rmqstore.store import Store


@pytest.fixture(scope="module")
def bucket(s3_server, tmp_path_factory):
    endpoint, fs, upload = s3_server
    local = tmp_path_factory.mktemp("io-remote")
    (local / "dir").mkdir()
    (local / "dir" / "f.bin").write_bytes(bytes(range(256)) * 4)
    (local / "dir" / "g.bin").write_bytes(b"g")
    upload(str(local), "iotest/root")
    return endpoint, fs


def test_ranged_reads_and_listing(bucket):
    _, s3 = bucket
    fs = ArrowFileSystem(s3)
    assert [(e.name, e.size) for e in fs.list_dir("iotest/root/dir")] == [("f.bin", 1024), ("g.bin", 1)]
    assert [e.name for e in fs.list_dir("iotest/root")] == ["dir"] and fs.is_dir("iotest/root/dir")
    assert fs.list_dir("iotest/none") == [] and not fs.exists("iotest/root/dir/zzz")
    handle = fs.open("iotest/root/dir/f.bin")
    assert not handle.zero_copy and handle.size == 1024
    assert bytes(handle.read(300, 4)) == bytes([44, 45, 46, 47])
    assert bytes(handle.read(1020, 100)) == bytes([252, 253, 254, 255])
    assert fs.stats.bytes_read == 8 and fs.stats.read_calls == 2
    assert bytes(handle.read_ranges([300, 0, 1022], [2, 1, 50])) == bytes([44, 45, 0, 254, 255])
    # ranges less than COALESCE_GAP apart: one request, the holes between them downloaded too
    assert fs.stats.bytes_read == 8 + 1024 and fs.stats.read_calls == 3
    with pytest.raises(FileNotFoundError):
        fs.open("iotest/root/dir/zzz")


def test_s3_uri_resolves_with_endpoint_override(bucket, monkeypatch):
    endpoint, _ = bucket
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    fs, path = resolve_location(f"s3://iotest/root?endpoint_override={endpoint}&scheme=http&region=us-east-1")
    assert isinstance(fs, ArrowFileSystem) and path == "iotest/root"
    assert fs.read_bytes(fs.join(path, "dir", "g.bin")) == b"g"


def test_store_over_s3_equals_the_local_store(s3_server, tmp_path, monkeypatch):

    endpoint, s3, upload = s3_server
    b = StoreBuilder(str(tmp_path / "store"), segment_size=4096, hash_slots=4, index_entries=64)
    fill(b, 80)
    b.consumer_offsets = {"TopicA@g": {0: 3}}
    b.finish()
    upload(b.root, "stores/broker-a")
    local = Store.open(b.root)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    remote = Store.open(f"s3://stores/broker-a?endpoint_override={endpoint}&scheme=http&region=us-east-1")
    via_fs = Store.open("stores/broker-a", filesystem=s3)
    for store in (remote, via_fs):
        assert [s.base_offset for s in store.segments] == [s.base_offset for s in local.segments]
        assert (store.min_offset, store.max_offset) == (local.min_offset, local.max_offset)
        assert [b_.to_pylist() for b_ in store.scan()] == [b_.to_pylist() for b_ in local.scan()]
        ranges = split_spans(store.segment_spans(), 1000)
        assert [r for lo, hi in ranges for r in store.scan(lo, hi, ["msgId"])] != []
        assert find_by_key(store, "shared") == find_by_key(local, "shared")
        units = store.consume_queue("TopicA", 0).units()
        assert units.size and units.tolist() == local.consume_queue("TopicA", 0).units().tolist()
        assert store.consumer_offsets() == {("TopicA", "g"): {0: 3}}
        assert store.seek_time(b.written[40].store_ts) == b.written[40].offset
    remote.stats.reset()
    remote.read_offsets([b.written[50].offset])
    assert remote.stats.read_calls == 1 and remote.stats.bytes_read < 8192


def test_storage_options_configure_s3_and_travel_with_a_pickled_store(s3_server, tmp_path):
    endpoint, _, upload = s3_server
    b = StoreBuilder(str(tmp_path / "store"), segment_size=4096, hash_slots=4, index_entries=64)
    fill(b, 20)
    b.finish()
    upload(b.root, "stores/options")
    options = {"endpoint_override": endpoint, "scheme": "http", "region": "us-east-1",
               "access_key": "AKIDSTOREOPTIONS", "secret_key": "secret-store-options"}
    store = pickle.loads(pickle.dumps(Store.open("s3://stores/options", storage_options=options)))
    assert store.location == "s3://stores/options"
    assert store.fs.filesystem.__reduce__()[1][0]["access_key"] == "AKIDSTOREOPTIONS"
    assert [r.to_pylist() for r in store.scan()] == [r.to_pylist() for r in Store.open(b.root).scan()]
    with pytest.raises(ValueError, match="unknown password") as error:
        Store.open("s3://stores/options", storage_options={**options, "password": "hunter2"})
    assert "hunter2" not in str(error.value) and "secret-store-options" not in str(error.value)
    with pytest.raises(ValueError, match="s3:// locations only"):
        Store.open("gs://bucket/store", storage_options={"region": "x"})


def test_a_remote_stores_time_summary_is_cached_and_checked(s3_server, tmp_path, monkeypatch):
    """Remote files have no mtime: cached time runs are used while each segment still ends with the
    record its summary ends with (a few bytes per segment), and walked again when it does not."""
    endpoint, _, upload = s3_server
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    uri = f"s3://stores/timeline?endpoint_override={endpoint}&scheme=http&region=us-east-1"
    read = []
    for delta in (0, 0, 5):  # the third upload is another store at the same place
        b = StoreBuilder(str(tmp_path / f"store{len(read)}"), segment_size=4096)
        for i in range(90):
            b.append("T", b"r" * 80, store_ts=BASE_TS + i * 1000 - 3_600_000 * (i >= 30) + delta)
        b.finish()
        if len(read) != 1:
            upload(b.root, "stores/timeline")
        store = Store.open(uri)
        _ = store.max_offset
        store.stats.reset()
        ts = BASE_TS - 3_600_000 + 40_000 + delta
        assert store.seek_time(ts) == next(w.offset for w in b.written if w.store_ts >= ts)
        read.append(store.stats.bytes_read)
    cold, warm, other = read
    assert warm < cold / 2 and other >= cold
