"""The damage rule (docs/damage.md) through Spark on both engines: streams in log and queue mode that
meet a damaged record, a torn tail a stream holds at, and batch queue slices with a unit that points at
no record."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from helpers.spark_stores import read_stats
from rmqstore.writer import MessageSpec, StoreWriter

pytestmark = pytest.mark.spark
MESSAGES = 50
DAMAGED = 10
STREAM_MODES = {"log": {}, "queue": {"topics": "T"}}


def _write(root: Path, *, crashed: bool = False, topics: tuple[str, ...] = ("T",),
           segment_size: int = 64 << 10) -> list[int]:
    """`MESSAGES` messages (round robin over `topics`), by default in one 64 KiB segment, the last one (the
    torn-record rule applies to it); their physical offsets."""
    with StoreWriter(root, segment_size=segment_size, cq_segment_size=20 * 64, index_hash_slots=16,
                     index_entries=128, seed=11) as writer:
        for topic in topics:
            writer.declare_topic(topic, 2)
        offsets = [writer.append(MessageSpec(topics[i % len(topics)], b"body-%02d;" % i * 4, keys=f"k{i}"))
                   .physical_offset for i in range(MESSAGES)]
        if crashed:
            writer.close(crashed=True)
    return offsets


def _segment(root: Path) -> Path:
    return root / "commitlog" / f"{0:020d}"


@pytest.fixture(scope="module")
def flipped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int]]:
    """One body byte of record `DAMAGED` flipped: a BODYCRC mismatch with 39 valid records after it."""
    root = tmp_path_factory.mktemp("damage-rule") / "flipped"
    offsets = _write(root)
    data = bytearray(_segment(root).read_bytes())
    data[data.index(b"body-%02d;" % DAMAGED, offsets[DAMAGED])] ^= 0x01
    _segment(root).write_bytes(bytes(data))
    return root, offsets


def _stream(spark, fmt: str, root: Path, checkpoint: Path, **options: str):
    """An availableNow stream of `root` into a memory sink: (its rows' offsets, the query)."""
    name = f"q_{uuid.uuid4().hex[:8]}"
    reader = spark.readStream.format(fmt).options(**options)
    query = (reader.load(str(root)).select("commitLogOffset").writeStream.format("memory").queryName(name)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    try:
        query.awaitTermination(120)
    finally:
        query.stop()
    return sorted(r.commitLogOffset for r in spark.sql(f"SELECT * FROM {name}").collect()), query


@pytest.mark.parametrize("stream_mode", STREAM_MODES)
def test_stream_fails_at_damage_failfast(spark, engine_format, flipped, stream_mode, tmp_path) -> None:
    """docs/damage.md §1-§3: the damaged record is no torn tail; the error names the file and offset."""
    root, offsets = flipped
    named = f"{_segment(root)}: at physical offset {offsets[DAMAGED]}"
    with pytest.raises(Exception, match=named):
        _stream(spark, engine_format, root, tmp_path / "ck", **STREAM_MODES[stream_mode])


@pytest.mark.parametrize("stream_mode", STREAM_MODES)
def test_stream_skips_damage_permissive(spark, engine_format, flipped, stream_mode, tmp_path) -> None:
    root, offsets = flipped
    rows, query = _stream(spark, engine_format, root, tmp_path / "ck", mode="PERMISSIVE",
                          **STREAM_MODES[stream_mode])
    assert query.exception() is None
    assert rows == offsets[:DAMAGED] + offsets[DAMAGED + 1:]


def test_stream_holds_at_a_torn_tail(spark, engine_format, tmp_path) -> None:
    """docs/damage.md §2: a crash copy's half-written last record is held, never a row nor an error, and
    the progress names where the stream is held."""
    root = tmp_path / "torn"
    offsets = _write(root, crashed=True)
    held = offsets[-1] + (offsets[-1] - offsets[-2])  # records are equally long
    rows, query = _stream(spark, engine_format, root, tmp_path / "ck")
    assert query.exception() is None and rows == offsets
    latest = json.loads(query.recentProgress[-1]["sources"][0]["latestOffset"])[str(root)]
    assert latest["commitLogOffset"] == held and latest["heldAt"] == held


@pytest.fixture(scope="module")
def bad_unit(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int], int]:
    """Topics T and U over 4 KiB segments; the MAGICCODE of T's second record (queue 1's first unit, in
    the first segment) is broken, so that unit points at no valid record: (store, offsets of T's records,
    the unit's offset)."""
    root = tmp_path_factory.mktemp("damage-rule") / "unit"
    offsets = _write(root, topics=("T", "U", "U", "U", "U"), segment_size=4096)
    bad = offsets[5]
    assert bad + 4096 < offsets[-1], "the damaged record must be in a sealed segment"
    data = bytearray(_segment(root).read_bytes())
    data[bad + 5] ^= 0x01
    _segment(root).write_bytes(bytes(data))
    return root, offsets[::5], bad


def test_queue_slice_unit_at_no_record(spark, engine, engine_format, bad_unit, stats_dir) -> None:
    """docs/damage.md §3: `topic = 'T'` reads T's consume-queue units; the unit that points at no record
    fails the read FAILFAST and is skipped and counted PERMISSIVE, alike on both engines."""
    root, t_offsets, bad = bad_unit
    with pytest.raises(Exception, match=f"{_segment(root)}: at physical offset {bad}: no valid record"):
        spark.read.format(engine_format).load(str(root)).where("topic = 'T'").collect()
    df = (spark.read.format(engine_format).options(mode="PERMISSIVE", statsDir=str(stats_dir)).load(str(root))
          .where("topic = 'T'").select("commitLogOffset"))
    assert sorted(r.commitLogOffset for r in df.collect()) == [o for o in t_offsets if o != bad]
    reads = [r for r in read_stats(stats_dir) if r["event"] == "read"]
    assert {r["task"] for r in reads} == {"QueueSliceTask"}
    assert sum(r["invalid_records_skipped"] for r in reads) == 1
    assert sum(r["bytes_skipped"] for r in reads) == 0


def test_index_entry_at_no_record(spark, engine_format, bad_unit, stats_dir) -> None:
    """docs/damage.md §4: the index entry of key k5 points at the broken record: damage, like a unit."""
    root, _, bad = bad_unit
    with pytest.raises(Exception, match=f"{_segment(root)}: at physical offset {bad}: no valid record"):
        spark.read.format(engine_format).load(str(root)).where("key = 'k5'").collect()
    df = (spark.read.format(engine_format).options(mode="PERMISSIVE", statsDir=str(stats_dir)).load(str(root))
          .where("key = 'k5'"))
    assert df.collect() == []
    reads = [r for r in read_stats(stats_dir) if r["event"] == "read"]
    assert sum(r["invalid_records_skipped"] for r in reads) == 1


@pytest.fixture(scope="module")
def zeroed_unit(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int], Path]:
    """T's queue 0 unit of queue offset `ZEROED` zeroed, valid units after it in the same file: (store, every
    record's offset, the consume-queue file)."""
    root = tmp_path_factory.mktemp("damage-rule") / "zeroed-unit"
    offsets = _write(root)
    cq = root / "consumequeue" / "T" / "0" / f"{0:020d}"
    data = bytearray(cq.read_bytes())
    data[ZEROED * 20 : ZEROED * 20 + 20] = bytes(20)
    cq.write_bytes(bytes(data))
    return root, offsets, cq


ZEROED = 5
"""Queue offset of the zeroed unit: the record `2 * ZEROED` (queue 0 holds the even ones)."""
WINDOWS = {"endingOffsets": '{"T":{"0":-1,"1":-1}}'}
"""A batch read of T's queue windows: read through the units only (no coverage scan)."""


@pytest.mark.parametrize("how", ["stream", "batch"])
def test_zeroed_unit_is_damage_not_the_queue_end(spark, engine_format, zeroed_unit, how, tmp_path) -> None:
    """docs/damage.md §2, §3: an invalid unit that valid units follow fails FAILFAST naming the consume-queue
    file and the unit's byte in it; PERMISSIVE keeps every record but the unit's (a `topics` stream, a batch
    of queue windows)."""
    root, offsets, cq = zeroed_unit

    def read(**options: str) -> list[int]:
        if how == "stream":
            checkpoint = tmp_path / f"ck{len(options)}"
            return _stream(spark, engine_format, root, checkpoint, topics="T", **options)[0]
        df = spark.read.format(engine_format).options(**WINDOWS, **options).load(str(root))
        return sorted(r.commitLogOffset for r in df.select("commitLogOffset").collect())

    with pytest.raises(Exception, match=f"{cq}: at physical offset {ZEROED * 20}: .*queue offset {ZEROED}"):
        read()
    assert read(mode="PERMISSIVE") == offsets[: 2 * ZEROED] + offsets[2 * ZEROED + 1 :]


def test_zeroed_unit_costs_no_row_in_a_topic_plan(spark, engine_format, zeroed_unit, stats_dir) -> None:
    """docs/damage.md §3: `topic = 'T'` scans the bytes no unit covers, the zeroed unit's record among them:
    every row, no error and nothing skipped, on both engines."""
    root, offsets, _ = zeroed_unit
    df = (spark.read.format(engine_format).options(statsDir=str(stats_dir)).load(str(root))
          .where("topic = 'T'"))
    assert sorted(r.commitLogOffset for r in df.select("commitLogOffset").collect()) == offsets
    assert sum(r["invalid_records_skipped"] for r in read_stats(stats_dir) if r["event"] == "read") == 0
