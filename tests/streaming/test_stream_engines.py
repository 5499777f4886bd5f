"""Both engines write one checkpoint format: the same offsets JSON byte for byte for the same state, so a
query stopped on one engine resumes on the other, exactly once, in log mode and in queue mode."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest
from stream_helpers import sink_rows

from rmqstore.spark.jar import PROVIDER_CLASS
from rmqstore.writer import MessageSpec, StoreWriter

FORMATS = {"jvm": PROVIDER_CLASS, "python": "rmqstore_python"}
MODES = {"log-mode": {}, "queue-mode": {"topics": "TopicA,TopicB"}}


def write_messages(root: Path, count: int) -> None:
    """`count` messages written by the project's writer; the same seed makes every store a prefix of a
    longer one, so replacing a store's files by a longer store's is what a broker appending does."""
    with StoreWriter(root, segment_size=4096, cq_segment_size=20 * 16, index_hash_slots=16, index_entries=64,
                     seed=9, overwrite=True) as writer:
        for topic in ("TopicA", "TopicB", "TopicC"):
            writer.declare_topic(topic, 2)
        for i in range(count):
            writer.append(MessageSpec(topic=("TopicA", "TopicB", "TopicC")[i % 3],
                                      body=f"body-{i}".encode() * 5, tags=f"t{i % 4}", keys=f"k{i}"))


def grow(store: Path, count: int, scratch: Path) -> None:
    """The store now holds `count` messages: its first messages unchanged, new ones after them."""
    write_messages(scratch, count)
    shutil.copytree(scratch, store, dirs_exist_ok=True)
    shutil.rmtree(scratch)


def run(spark, engine: str, store: Path, sink: Path, checkpoint: Path, **options) -> None:
    reader = spark.readStream.format(FORMATS[engine])
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (reader.load(str(store)).writeStream.format("parquet").option("path", str(sink))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert query.exception() is None


def offset_lines(checkpoint: Path) -> list[str]:
    """The source offset of every planned batch as Spark stored it (line 3 of `offsets/<batch>`)."""
    files = sorted((checkpoint / "offsets").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1)
    return [f.read_text().splitlines()[2] for f in files if f.name.isdigit()]


@pytest.mark.parametrize("mode", MODES)
def test_both_engines_write_the_same_offsets(spark, tmp_path, mode):
    store = tmp_path / "store"
    write_messages(store, 40)
    lines, rows = {}, {}
    for engine in FORMATS:
        sink, checkpoint = tmp_path / f"sink-{engine}", tmp_path / f"ck-{engine}"
        run(spark, engine, store, sink, checkpoint, maxOffsetsPerTrigger="6", **MODES[mode])
        lines[engine] = offset_lines(checkpoint)
        rows[engine] = sorted(r["commitLogOffset"] for r in sink_rows(sink))
    assert len(lines["python"]) >= 5, "the limit must make several batches"
    assert lines["jvm"] == lines["python"]
    key = '"queueOffsets": {"TopicA": {"0": ' if mode == "queue-mode" else '{"commitLogOffset": '
    assert key in lines["jvm"][0]
    assert rows["jvm"] == rows["python"] and len(rows["jvm"]) == (40 if mode == "log-mode" else 27)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("first", "second"), [("python", "jvm"), ("jvm", "python")])
def test_checkpoint_resumes_on_the_other_engine(spark, tmp_path, first, second, mode):
    store, sink, checkpoint = tmp_path / "store", tmp_path / "sink", tmp_path / "ck"
    write_messages(store, 20)
    run(spark, first, store, sink, checkpoint, **MODES[mode])
    before = sink_rows(sink)
    assert len(before) == (20 if mode == "log-mode" else 14)  # TopicC is not read in queue mode

    grow(store, 50, tmp_path / f"scratch-{uuid.uuid4().hex[:6]}")
    run(spark, second, store, sink, checkpoint, **MODES[mode])
    everything = spark.read.format(FORMATS["python"]).load(str(store)).collect()
    want = sorted(r.commitLogOffset for r in everything
                  if mode == "log-mode" or r.topic in ("TopicA", "TopicB"))
    got = sorted(r["commitLogOffset"] for r in sink_rows(sink))
    assert got == want  # every message exactly once across the engine switch
    after = [r for r in sink_rows(sink) if r not in before]
    assert after and min(r["commitLogOffset"] for r in after) > max(r["commitLogOffset"] for r in before)


def test_jvm_start_is_fixed_at_first_run(spark, tmp_path):
    """Like Spark's Kafka source, the JVM engine keeps the first run's start under the checkpoint: a
    `latest` query that stopped before its first batch resumes where it started, not at a new end."""
    store, sink, checkpoint = tmp_path / "store", tmp_path / "sink", tmp_path / "ck"
    write_messages(store, 20)
    run(spark, "jvm", store, sink, checkpoint, startingOffsets="latest")
    assert sink_rows(sink) == []
    assert (checkpoint / "sources" / "0" / "0").read_text().startswith('v1\n{"')
    grow(store, 50, tmp_path / "scratch")
    run(spark, "jvm", store, sink, checkpoint, startingOffsets="latest")
    assert len(sink_rows(sink)) == 30
