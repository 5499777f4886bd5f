"""The torn-record rule (`rmqstore.store.tail`) on live files a test broker writes piece by piece."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from helpers.live_broker import LiveBroker, message
from rmqstore.format.record import check_record
from rmqstore.store import Store
from rmqstore.store.errors import StoreCorruptionError
from rmqstore.store.tail import CommitLogTail, Limits, LogWalkCache


def tail_of(path, cache=None) -> tuple[CommitLogTail, Store]:
    store = Store.open(str(path))
    return CommitLogTail.of(store, cache or LogWalkCache()), store


def test_limits_always_admit_one_record():
    assert Limits(bytes=10).admits(0, 0, 500)
    assert not Limits(bytes=600).admits(1, 500, 200)
    assert not Limits(records=2).admits(2, 0, 1)
    assert Limits(records=3, bytes=1000).admits(2, 500, 500)


def test_torn_tail_is_not_readable_until_sealed(tmp_path):
    """A record that validates (length, CRC, offset) but whose properties are still zeros waits."""
    broker = LiveBroker(tmp_path, 4096, piece_sleep=0)
    rng = random.Random(1)
    written = [broker.append(*message(i, rng)) for i in range(3)]
    torn = broker.append(*message(3, rng), torn=True)  # all but the last 3 property bytes
    data = (tmp_path / "commitlog" / "00000000000000000000").read_bytes()
    assert check_record(data, torn["commitLogOffset"], check_crc=True,
                        expected_physical_offset=torn["commitLogOffset"]).kind == "record", \
        "the torn record must pass the recovery check, or this test proves nothing"

    tail, _ = tail_of(tmp_path)
    advance = tail.walk(0)
    assert (advance.end, advance.records) == (torn["commitLogOffset"], 3)
    assert advance.bytes == sum(w["storeSize"] for w in written)

    broker.finish(dispatch=False)  # the bytes are complete, but nothing proves it yet
    assert tail_of(tmp_path)[0].walk(0).end == torn["commitLogOffset"]
    broker.finish(dispatch=True)  # the dispatcher wrote its consume-queue unit
    assert tail_of(tmp_path)[0].walk(0).end == torn["commitLogOffset"] + torn["storeSize"]


def test_tail_of_a_stopped_broker_is_final(tmp_path):
    broker = LiveBroker(tmp_path, 4096, piece_sleep=0)
    rng = random.Random(4)
    broker.append(*message(0, rng))
    last = broker.append(*message(1, rng), torn=True)
    broker.finish(dispatch=False)
    assert tail_of(tmp_path)[0].walk(0).end == last["commitLogOffset"]
    broker.close(clean=True)  # no abort file: nobody writes any more, the tail is final (§6.2)
    assert tail_of(tmp_path)[0].walk(0).end == last["commitLogOffset"] + last["storeSize"]


def test_tail_sealed_by_the_next_write_or_the_consume_queue(tmp_path):
    broker = LiveBroker(tmp_path, 4096, piece_sleep=0)
    rng = random.Random(2)
    first = broker.append(*message(0, rng))
    second = broker.append(*message(1, rng))
    tail, _ = tail_of(tmp_path)
    # Both complete; the second is sealed by its consume-queue unit (rule c), the first by the second (b).
    assert tail.walk(0).end == second["commitLogOffset"] + second["storeSize"]
    # Remove the unit of the last record: now nothing vouches for it while the broker runs.
    unit_dir = tmp_path / "consumequeue" / second["topic"] / str(second["queueId"])
    for path in unit_dir.iterdir():
        path.write_bytes(bytes(path.stat().st_size))
    tail, _ = tail_of(tmp_path)
    assert tail.walk(0).end == first["commitLogOffset"] + first["storeSize"]


def test_segment_roll_and_limits(tmp_path):
    broker = LiveBroker(tmp_path, 2048, piece_sleep=0)
    rng = random.Random(3)
    written = [broker.append(*message(i, rng)) for i in range(40)]
    broker.close(clean=True)
    tail, store = tail_of(tmp_path)
    assert len(store.segments) >= 5, "the test needs several segments"
    end = tail.walk(0)  # sealed segments are skipped whole, only the active one is walked
    assert tail.count_records(0, end.end) == 40
    assert end.end == written[-1]["commitLogOffset"] + written[-1]["storeSize"]
    step = tail.walk(0, Limits(records=7))
    assert step.records == 7
    assert step.end == tail.canonical(written[7]["commitLogOffset"])
    # A byte limit below one record still admits one record.
    one = tail.walk(written[10]["commitLogOffset"], Limits(bytes=1))
    assert one.records == 1
    assert tail.count_records(written[5]["commitLogOffset"], end.end) == 35
    # Positions after a BLANK are the next segment start.
    rolled = [w for w, n in itertools.pairwise(written) if n["commitLogOffset"] % 2048 == 0]
    assert rolled, "no record ended a segment"
    after = rolled[0]["commitLogOffset"] + rolled[0]["storeSize"]
    assert tail.canonical(after) % 2048 == 0


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def test_damage_before_a_valid_record_is_not_a_torn_tail(tmp_path):
    """docs/damage.md §2: a BODYCRC mismatch that a complete record follows is damage, FAILFAST names the
    file and offset, PERMISSIVE steps over exactly that record; the last record torn is held (`held`)."""
    broker = LiveBroker(tmp_path, 8192, piece_sleep=0)
    rng = random.Random(5)
    written = [broker.append(*message(i, rng)) for i in range(6)]
    torn = broker.append(*message(6, rng), torn=True)
    segment = tmp_path / "commitlog" / "00000000000000000000"
    bad = written[2]["commitLogOffset"]
    _flip(segment, segment.read_bytes().index(bytes.fromhex(written[2]["body"]), bad))  # a body byte
    named = f"{segment}: at physical offset {bad}: .*BODYCRC mismatch.*valid record follows"
    with pytest.raises(StoreCorruptionError, match=named):
        tail_of(tmp_path)[0].walk(0)
    tail = CommitLogTail.of(Store.open(str(tmp_path)), LogWalkCache(), permissive=True)
    advance = tail.walk(0)
    held = torn["commitLogOffset"]
    assert (advance.end, advance.records, advance.held) == (held, 5, held)
    assert len(tail.skipped) == 1 and f"physical offset {bad}" in tail.skipped[0]


def test_garbage_before_what_the_consume_queue_names_is_damage(tmp_path):
    """docs/damage.md §2: a header that is no record, with consume-queue units past it, is damage; the
    PERMISSIVE walk goes on at the next record start."""
    broker = LiveBroker(tmp_path, 8192, piece_sleep=0)
    rng = random.Random(6)
    written = [broker.append(*message(i, rng)) for i in range(6)]
    broker.close(clean=True)  # the segment is still the last one: the torn-record rule applies
    segment = tmp_path / "commitlog" / "00000000000000000000"
    bad = written[3]["commitLogOffset"]
    _flip(segment, bad + 5)  # MAGICCODE
    named = f"{segment}: at physical offset {bad}: .*TOTALSIZE .*consume queues or index name"
    with pytest.raises(StoreCorruptionError, match=named):
        tail_of(tmp_path)[0].walk(0)
    tail = CommitLogTail.of(Store.open(str(tmp_path)), LogWalkCache(), permissive=True)
    advance = tail.walk(0)
    assert advance.end == written[-1]["commitLogOffset"] + written[-1]["storeSize"]
    assert advance.records == 5 and advance.held is None
