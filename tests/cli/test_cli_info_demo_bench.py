"""`rmqstore info`, `demo` and `bench`."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from cli_helpers import GEOMETRY_ARG, SLOTS, T0, KnownStore


def test_info_json_describes_the_store(known_store: KnownStore, run_cli) -> None:
    status, out, _ = run_cli("info", known_store.path, "--json", "--index-geometry", GEOMETRY_ARG)
    doc = json.loads(out)
    assert status == 0
    end = known_store.records[-1]
    assert doc["segmentSize"] == 8192 and doc["minOffset"] == 0
    assert doc["maxOffset"] > end.offset
    assert [s["state"] for s in doc["segments"]][-1].startswith("empty"), "the pre-allocated segment"
    assert (doc["firstStoreTimestamp"], doc["lastStoreTimestamp"]) == (T0, end.store_ms)
    queues = {(q["topic"], q["queueId"]): (q["minOffset"], q["maxOffset"]) for q in doc["queues"]}
    topic_a = [r for r in known_store.records if r.topic == "TopicA"]
    assert sum(high - low for (topic, _), (low, high) in queues.items() if topic == "TopicA") == len(topic_a)
    assert len(doc["indexFiles"]) > 1 and {f["hashSlots"] for f in doc["indexFiles"]} == {SLOTS}
    assert doc["indexFiles"][0]["beginTimestamp"] == T0
    assert doc["abortPresent"] is False
    assert doc["checkpoint"]["physicMsgTimestamp"] == end.store_ms
    assert {(g["topic"], g["group"]) for g in doc["consumerGroups"]} == {("TopicA", "cg")}


def test_info_tables_for_people(known_store: KnownStore, run_cli) -> None:
    status, out, _ = run_cli("info", known_store.path)
    assert status == 0
    for title in ("Commit-log segments", "Consume queues", "Index files", "Checkpoint", "clean shutdown"):
        assert title in out


def test_info_text_and_json_name_the_same_log_end(known_store: KnownStore, tmp_path: Path, run_cli) -> None:
    """The active segment ends in zeros: the first `info` walks there from the last indexed record, the
    second resumes where that walk ended (store/logend.py); both name the record's bytes from its start."""
    copy = tmp_path / "copy"
    shutil.copytree(known_store.path, copy)
    then = os.stat(copy).st_mtime - 60  # written a while ago: the walk's end is remembered
    for segment in (copy / "commitlog").iterdir():
        os.utime(segment, (then, then))
    status, text, _ = run_cli("info", copy)
    assert status == 0
    status, out, _ = run_cli("info", copy, "--json")
    doc = json.loads(out)
    end = doc["maxOffset"]
    segment = copy / "commitlog" / f"{end - end % 8192:020d}"
    assert status == 0 and doc["logEnd"] == (f"{segment}: first invalid record at position {end % 8192}: "
                                             "bad magic code 0x00000000 at position 4")
    assert f"log end        {doc['logEnd']}\n" in text


def test_demo_writes_a_sound_store_and_refuses_to_overwrite(tmp_path: Path, run_cli) -> None:
    target = tmp_path / "demo"
    status, _, err = run_cli(
        "demo",
        target,
        "--size",
        "1MB",
        "--seed",
        "5",
        "--index-geometry",
        "101,2000",
        "--segment-size",
        "256KB",
        "--no-progress",
    )
    assert status == 0 and "MiB/s" in err
    segments = sorted(int(p.name) for p in (target / "commitlog").iterdir())
    assert segments == [i * (256 << 10) for i in range(len(segments))] and len(segments) >= 5
    status, out, _ = run_cli("verify", target, "--json", "--no-progress")
    assert status == 0 and json.loads(out)["counts"]["records"] > 500
    status, _, err = run_cli("demo", target, "--size", "1MB", "--no-progress")
    assert status == 2 and "not empty" in err


def test_demo_production_writes_the_shape_asked_for(tmp_path: Path, run_cli) -> None:
    target = tmp_path / "production"
    status, out, _ = run_cli("demo", target, "--production", "--size", "600KB", "--topics", "7",
                             "--queues", "3", "--segment-size", "256KB", "--index-geometry", "101,2000",
                             "--no-progress")
    summary = json.loads(out)
    assert status == 0 and summary["topics"] == 7 and summary["log_bytes"] >= 600 << 10
    assert sorted(p.name for p in (target / "consumequeue").iterdir()) == [f"bench-{i:05d}" for i in range(7)]
    assert {q.name for q in (target / "consumequeue" / "bench-00001").iterdir()} == {"0", "1", "2"}
    assert [p.stat().st_size for p in (target / "commitlog").iterdir()] == [256 << 10] * 4
    assert {p.stat().st_size for p in (target / "index").iterdir()} == {40 + 4 * 101 + 20 * 2000}


def test_bench_reports_throughput(known_store: KnownStore, run_cli) -> None:
    status, out, _ = run_cli("bench", known_store.path, "--json", "--no-progress", "--columns", "topic,body")
    doc = json.loads(out)
    assert status == 0 and doc["messages"] == len(known_store.records)
    assert doc["messagesPerSecond"] > 0 and doc["megabytesPerSecond"] > 0
