"""A stream tailing a store on S3 (a moto server on loopback) downloads what was written since the last
trigger, not the active segment: every request of the stream reader's calls of one trigger is counted."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from helpers.live_broker import LiveBroker, message
from rmqstore.cachedir import CACHE_DIR_ENV
from rmqstore.io import remote
from rmqstore.spark.schema import table_schema
from rmqstore.spark.stream import StoreStreamReader

SEGMENT = 4 << 20


@pytest.fixture
def downloads(monkeypatch) -> Counter:
    """Bytes of every ranged request of any remote file, by store directory."""
    seen: Counter[str] = Counter()
    fetch = remote.ArrowFile._fetch

    def counted(self, offset, length):
        data = fetch(self, offset, length)
        seen[self.path.split("/")[2]] += len(data)
        return data

    monkeypatch.setattr(remote.ArrowFile, "_fetch", counted)
    return seen


def _trigger(reader: StoreStreamReader, start: dict) -> tuple[dict, list[int]]:
    """What Spark calls in one micro-batch: latestOffset, partitions and read, reportLatestOffset."""
    end = reader.latestOffset(start, ReadAllAvailable())
    offsets = [offset for part in reader.partitions(start, end) for batch in reader.read(part)
               for offset in batch.column("commitLogOffset").to_pylist()]
    reader.reportLatestOffset()
    return end, offsets


def test_each_trigger_downloads_only_what_is_new(s3_server, tmp_path, monkeypatch, downloads):
    endpoint, _, upload = s3_server
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    broker = LiveBroker(tmp_path / "store", SEGMENT, piece_sleep=0)  # running: `abort` is there
    rng = random.Random(9)
    written = [broker.append(*message(i, rng)) for i in range(3000)]
    upload(str(tmp_path / "store"), "stream/store")
    options = {"path": "s3://stream/store", "s3.endpoint": endpoint, "s3.scheme": "http",
               "s3.region": "us-east-1", "s3.accessKey": "testing", "s3.secretKey": "testing"}
    reader = StoreStreamReader(options, table_schema())
    start = reader.initialOffset()
    end, offsets = _trigger(reader, start)
    assert offsets == [w["commitLogOffset"] for w in written]
    log_bytes = written[-1]["commitLogOffset"] + written[-1]["storeSize"]
    assert log_bytes > SEGMENT / 4
    for first in (3000, 3100):
        new = [broker.append(*message(i, rng)) for i in range(first, first + 100)]
        upload(str(tmp_path / "store"), "stream/store")
        downloads.clear()
        end, offsets = _trigger(reader, end)
        assert offsets == [w["commitLogOffset"] for w in new]
        new_bytes = sum(w["storeSize"] for w in new)
        # the new records a few times (tail walk, lag count, the read) plus small windows and queue
        # heads, never the 4 MiB active segment or the 1 MiB of records before
        assert downloads["commitlog"] < 4 * new_bytes + (512 << 10) < log_bytes, downloads
