"""seek_time against brute force, including clock steps back; once the log's time summary is cached a
seek reads little."""

from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.store_builder import BASE_TS, StoreBuilder, tree_digest
from rmqstore.cachedir import CACHE_DIR_ENV
from rmqstore.store import Store, timeline


def brute(written, ts, end):
    return next((w.offset for w in written if w.store_ts >= ts), end)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    b = StoreBuilder(str(tmp_path_factory.mktemp("seek") / "store"), segment_size=2048)
    for i in range(200):
        b.append("T", b"q" * (i * 13 % 90), store_ts=BASE_TS + i * 10 - (i % 3 == 0) * 5)
    b.finish(guard=False)
    digest = tree_digest(b.root)
    yield b
    assert tree_digest(b.root) == digest


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(delta=st.integers(min_value=-100, max_value=2100))
def test_seek_time_matches_brute_force(built, delta):
    store = Store.open(built.root)
    ts = BASE_TS + delta
    assert store.seek_time(ts) == brute(built.written, ts, store.max_offset)


def test_seek_reads_little(built):
    Store.open(built.root).seek_time(BASE_TS)  # summarizes the log's store times (cached on disk)
    store = Store.open(built.root)
    _ = store.max_offset
    store.stats.reset()
    store.seek_time(BASE_TS + 1500)
    assert store.stats.records_decoded < 20


def test_clock_step_back_within_the_margin_loses_nothing(tmp_path):
    b = StoreBuilder(str(tmp_path / "store"), segment_size=1024)
    times = [BASE_TS + i * 100 for i in range(30)] + [BASE_TS + 2000 + i * 100 for i in range(30)]
    times[31:34] = [BASE_TS + 1000, BASE_TS + 1010, BASE_TS + 1020]  # stepped back by ~1.1 s
    for t in times:
        b.append("T", b"w" * 50, store_ts=t)
    b.finish()
    store = Store.open(b.root)
    ts = BASE_TS + 1005
    result = store.seek_time(ts)
    assert all(w.offset >= result for w in b.written if w.store_ts >= ts)
    assert result == brute(b.written, ts, store.max_offset)


@pytest.fixture(scope="module")
def long_log(tmp_path_factory):
    """Three 1 MiB segments of ~400-byte records 10 ms apart; every 500th record's clock steps back 150 ms."""
    b = StoreBuilder(str(tmp_path_factory.mktemp("seek-long") / "store"), segment_size=1 << 20)
    for i in range(6000):
        b.append("T", b"m" * 300, store_ts=BASE_TS + i * 10 - (i % 500 == 499) * 150)
    b.finish(guard=False)
    digest = tree_digest(b.root)
    yield b
    assert tree_digest(b.root) == digest


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(delta=st.integers(min_value=-100, max_value=61_000))
def test_seek_time_on_a_long_log_matches_brute_force(long_log, delta):
    store = Store.open(long_log.root)
    ts = BASE_TS + delta
    assert store.seek_time(ts) == brute(long_log.written, ts, store.max_offset)


def test_seek_reads_a_bisection_not_the_rest_of_the_segment(long_log):
    Store.open(long_log.root).seek_time(BASE_TS)  # summarizes the log's store times (cached on disk)
    store = Store.open(long_log.root)
    _ = store.max_offset
    store.stats.reset()
    ts = BASE_TS + 35_000  # in the middle of the second segment
    assert store.seek_time(ts) == brute(long_log.written, ts, store.max_offset)
    # A bisection in the run holding ts; walking on to the segment end would read ~700 KB.
    assert store.stats.bytes_read < long_log.segment_size // 3


def test_seek_time_is_exact_after_the_clock_stepped_back_by_hours(tmp_path):
    """Steps back by 3 h in the first segment and by 2 h in the last (active) one: the first record at
    or after each time is found, wherever it is (startingTimestamp starts there)."""
    b = StoreBuilder(str(tmp_path / "store"), segment_size=2048)
    hour = 3_600_000
    times = [BASE_TS + i * 1000 - 3 * hour * (i >= 5) - 2 * hour * (i >= 95) for i in range(100)]
    for t in times:
        b.append("T", b"s" * 40, store_ts=t)
    b.finish()
    store = Store.open(b.root)
    assert b.written[5].offset < 2048 and b.written[94].offset // 2048 == b.written[99].offset // 2048
    for ts in sorted({t + d for t in [*times[::3], BASE_TS, BASE_TS + 4000] for d in (-1, 0, 1)}):
        assert store.seek_time(ts) == brute(b.written, ts, store.max_offset), ts


def _build(root, times, body=b"g" * 60):
    b = StoreBuilder(str(root), segment_size=1 << 16)
    for t in times:
        b.append("T", body, store_ts=t)
    b.finish(guard=False)
    return b


def _summary_cost(root, ts):
    """seek_time(ts) and how many records summarizing the log's store times decoded."""
    store = Store.open(str(root))
    _ = store.max_offset
    store.stats.reset()
    timeline.time_runs(store)
    decoded = store.stats.records_decoded
    return store.seek_time(ts), decoded


@pytest.mark.parametrize("rewritten", [False, True])
def test_a_grown_active_segment_is_walked_only_from_where_its_summary_ended(tmp_path, monkeypatch, rewritten):
    """The broker only appends: the cached runs of the segment holding the valid end are reused when it
    has grown, unless the record they end with is no longer there (then it is walked again)."""
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    hour = 3_600_000
    times = [BASE_TS + i * 1000 - hour * (i >= 50) for i in range(200)]
    live = tmp_path / "live"
    shutil.copytree(_build(tmp_path / "v1", times[:150]).root, live)
    assert _summary_cost(live, BASE_TS)[0] == 0  # summarized and cached
    grown = _build(tmp_path / "v2", times if not rewritten else [t + 7 for t in times])
    shutil.copytree(grown.root, live, dirs_exist_ok=True)  # the segment grew (or was rewritten)
    os.utime(os.path.join(live, "commitlog", f"{0:020d}"))
    ts = BASE_TS - hour + 170_000  # a record of the grown part
    found, cost = _summary_cost(live, ts)
    assert found == brute(grown.written, ts, grown.cursor)
    if rewritten:
        assert cost >= len(grown.written)  # the whole segment walked again
    else:
        assert cost == len(grown.written) - 150  # only the new records
