"""Streams of a DLedger commit log (docs/format.md §2.13) on both engines: log-mode offsets are the records'
commitLogOffsets (entry pos + 48), an entry cut inside its header or its body waits at the tail until the
rest is written (damage.md §2), and a damaged entry header with valid entries after it is damage. The
store is RocketMQ 5.4.0's DLedgerCommitLog's (the conformance fixture); a cut copy of it is the store a
running broker shows while it writes the cut entry, the whole fixture the same store later."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from chispa import assert_df_equality
from stream_helpers import sink_rows

from rmqstore.store import Store, StoreCorruptionError
from rmqstore.store.tail import NO_LIMITS, CommitLogTail, Limits, LogWalkCache

FIXTURE = Path(__file__).parents[1] / "conformance" / "fixtures" / "rmq-5.4.0-dledger"
RECORDS = json.loads((FIXTURE / "oracle.json").read_text())["records"]
OFFSETS = [r["commitLogOffset"] for r in RECORDS]
BLANKS = [b["offset"] for b in json.loads((FIXTURE / "oracle.json").read_text())["blanks"]]
HEADER = 48
SEGMENT = 8192
LAST = RECORDS[-1]
END = LAST["commitLogOffset"] + LAST["storeSize"] + HEADER
"""The log's end as a stream offset: where the next record would be (its entry starts at max_offset)."""
COLUMNS = ["commitLogOffset", "topic", "queueId", "queueOffset", "msgId", "body"]
CUTS = {"header": 20, "body": HEADER + 60}
"""Where an entry is cut, from the entry's start: after its pos field is missing, and inside the record."""


def _data_file(root: Path, offset: int) -> Path:
    return root / "dledger-n0" / "data" / f"{offset - offset % SEGMENT:020d}"


def grow(root: Path, cut: int | None = None, into: int = 0) -> None:
    """`root` becomes the store while the broker writes the entry of the record at `cut`, `into` bytes of it
    written (no consume-queue unit or index entry names it yet); `cut` None: the whole fixture."""
    shutil.copytree(FIXTURE / "store", root, dirs_exist_ok=True)
    (root / "abort").touch()
    if cut is None:
        return
    path = _data_file(root, cut)
    data = bytearray(path.read_bytes())
    at = cut % SEGMENT - HEADER + into
    data[at:] = bytes(len(data) - at)
    path.write_bytes(bytes(data))
    for later in path.parent.iterdir():
        if int(later.name) > int(path.name):
            later.unlink()
    for directory in ("consumequeue", "index"):
        shutil.rmtree(root / directory)


def _walk(root: Path, cache: LogWalkCache, start: int,
          limits: Limits = NO_LIMITS) -> tuple[int, int, int | None]:
    with Store.open(root) as store:
        advance = CommitLogTail.of(store, cache).walk(start, limits)
        return advance.end, advance.records, advance.held


def test_a_walk_steps_entry_by_entry_in_commit_log_offsets(tmp_path):
    grow(tmp_path)
    with Store.open(tmp_path) as store:
        tail = CommitLogTail.of(store, LogWalkCache())
        position, ends, records = HEADER, [], 0
        while position != END:
            advance = tail.walk(position, Limits(records=7))
            position, records = advance.end, records + advance.records
            ends.append(position)
        assert records == len(RECORDS)
        assert ends[:-1] == OFFSETS[7::7]  # every boundary is the commitLogOffset of the next record
        assert (tail.min_offset, tail.walk(tail.min_offset).end) == (HEADER, END)
        assert tail.count_records(HEADER, END) == len(RECORDS)
        assert tail.is_record_start(OFFSETS[5]) and not tail.is_record_start(OFFSETS[5] - HEADER)
        blank = BLANKS[0] + HEADER  # a record after the first file's last would be the next file's first
        assert tail.is_record_start(blank) and tail.canonical(blank) == SEGMENT + HEADER


@pytest.mark.parametrize("into", CUTS.values(), ids=CUTS.keys())
def test_an_entry_being_written_holds_the_walk_until_it_is_whole(tmp_path, into):
    cut = OFFSETS[-3]  # in the last file, with records before it in that file
    grow(tmp_path, cut, into)
    cache = LogWalkCache()
    end, _records, held = _walk(tmp_path, cache, HEADER)
    assert end == held == cut
    grow(tmp_path)
    assert _walk(tmp_path, cache, cut) == (END, 3, None)


def test_a_damaged_entry_header_before_valid_entries_is_damage(tmp_path):
    grow(tmp_path)
    victim = OFFSETS[-3]
    path = _data_file(tmp_path, victim)
    data = bytearray(path.read_bytes())
    at = victim % SEGMENT - HEADER + 24  # the entry's pos field
    data[at:at + 8] = (12345).to_bytes(8, "big")
    path.write_bytes(bytes(data))
    damage = (rf"{path.name}: at physical offset {victim}: .*pos 12345.*valid record follows at physical "
              rf"offset {OFFSETS[-2]}")
    with Store.open(tmp_path) as store, pytest.raises(StoreCorruptionError, match=damage):
        CommitLogTail.of(store, LogWalkCache()).walk(HEADER)
    with Store.open(tmp_path) as store:
        tail = CommitLogTail.of(store, LogWalkCache(), permissive=True)
        assert tail.walk(HEADER).end == END and len(tail.skipped) == 1


def _stream(spark, engine_format: str, root: Path, run: Path, **options: str) -> None:
    """One availableNow run of a stream of `root` into the parquet sink `run`/sink (checkpoint `run`/ck)."""
    reader = spark.readStream.format(engine_format)
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (reader.load(str(root)).select(*COLUMNS).writeStream.format("parquet")
             .option("path", str(run / "sink")).option("checkpointLocation", str(run / "ck"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    if query.exception() is not None:
        raise AssertionError(str(query.exception()))


GROUP_A = {0: 3, 1: 5, 2: 0, 3: 7}
"""What group-a committed on TopicTest's queues (the fixture's config/consumerOffset.json)."""
BACKLOG_A = " OR ".join(f"(queueId = {q} AND queueOffset >= {o})" for q, o in GROUP_A.items())
READS = {"log": ({}, "true"),
         "topics": ({"topics": "HotTopic,TopicZip"}, "topic IN ('HotTopic', 'TopicZip')"),
         "group": ({"startingOffsets": "group:group-a"}, f"topic = 'TopicTest' AND ({BACKLOG_A})")}
"""Stream options and the batch filter that selects the same records."""


@pytest.mark.spark
@pytest.mark.parametrize("read", READS)
def test_an_available_now_stream_reads_what_a_batch_reads(spark, engine_format, tmp_path, read):
    options, where = READS[read]
    grow(tmp_path / "store")
    _stream(spark, engine_format, tmp_path / "store", tmp_path, **options)
    streamed = spark.read.parquet(str(tmp_path / "sink"))
    batch = spark.read.format(engine_format).load(str(tmp_path / "store")).select(*COLUMNS).where(where)
    assert batch.count() > 0
    assert_df_equality(streamed, batch, ignore_row_order=True, ignore_nullable=True)


@pytest.mark.spark
def test_a_stream_of_a_growing_log_reads_each_record_once(spark, engine_format, tmp_path):
    root = tmp_path / "store"
    seen = []
    for cut, into in ((OFFSETS[-9], CUTS["header"]), (OFFSETS[-3], CUTS["body"]), (None, 0)):
        grow(root, cut, into)
        _stream(spark, engine_format, root, tmp_path)
        seen.append(sorted(r["commitLogOffset"] for r in sink_rows(tmp_path / "sink")))
    assert seen == [OFFSETS[:-9], OFFSETS[:-3], OFFSETS]  # the sink holds each record once


@pytest.mark.spark
def test_a_stream_from_a_time_past_the_log_starts_where_the_next_record_goes(spark, engine_format, tmp_path):
    """startingTimestamp later than every whole record: the stream starts at the log's sealed end (in a
    DLedger log not max_offset, the last entry's end, but the next record's position) and reads that record
    once it is written."""
    root = tmp_path / "store"
    grow(root, OFFSETS[-3], CUTS["body"])
    _stream(spark, engine_format, root, tmp_path, startingTimestamp=str(RECORDS[-3]["storeTimestamp"]))
    assert sink_rows(tmp_path / "sink") == []
    grow(root)
    _stream(spark, engine_format, root, tmp_path)
    assert [r["commitLogOffset"] for r in sink_rows(tmp_path / "sink")] == OFFSETS[-3:]


@pytest.mark.spark
def test_a_stream_fails_on_a_damaged_entry_header_naming_file_and_offset(spark, engine_format, tmp_path):
    root = tmp_path / "store"
    grow(root)
    victim = OFFSETS[-3]
    path = _data_file(root, victim)
    data = bytearray(path.read_bytes())
    data[victim % SEGMENT - HEADER] = 7  # the entry's magic
    path.write_bytes(bytes(data))
    damage = rf"{path.name}: at physical offset {victim}: corrupt commit log: DLedger entry magic"
    with pytest.raises(Exception, match=damage):  # at start() or from the query thread, by engine
        _stream(spark, engine_format, root, tmp_path)
