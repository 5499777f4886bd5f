"""Damaged and hostile store files (issue 10 item 5): each ends in a named rmqstore error naming the
file and the cause, or in a note while the rest of the store stays readable; never a hang, a crash or
a bare Python exception. The cases are the ones the corruption campaign (campaign.py) found.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

from hostile_helpers import isolated, replace_file

from rmqstore.cli import main
from rmqstore.plan.confirm import confirm
from rmqstore.plan.execute import ReadSettings, run_task
from rmqstore.plan.planner import PlanSettings, plan_read
from rmqstore.plan.predicates import Compare
from rmqstore.store import Store

QUEUE = Path("consumequeue/OrderEvents/0")
FIRST_CQ = QUEUE / "00000000000000000000"


def topic_offsets(path: Path, topic: str = "OrderEvents") -> list[int]:
    """commitLogOffsets of a topic read the way Spark plans it (consume-queue slices + uncovered bytes)."""
    predicates = [Compare("topic", "=", topic)]
    with Store.open(str(path)) as store:
        plan = plan_read([store], [predicates], PlanSettings())
        return sorted(o for task in plan.tasks
                      for batch in run_task(task, store, ["topic", "commitLogOffset"], ReadSettings())
                      for o in confirm(batch, predicates).column("commitLogOffset").to_pylist())


def scanned_offsets(path: Path, topic: str = "OrderEvents") -> list[int]:
    with Store.open(str(path)) as store:
        return sorted(r["commitLogOffset"] for b in store.scan(columns=["topic", "commitLogOffset"])
                      for r in b.to_pylist() if r["topic"] == topic)


def info(path: Path) -> tuple[int, dict]:
    """`rmqstore info --json` in a forked child: (exit status, document)."""
    def run() -> tuple[int, str]:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            status = main(["info", str(path), "--json"])
        return status, out.getvalue()

    outcome, detail = isolated(run)
    assert outcome == "ok", (outcome, detail)
    status, text = eval(detail)  # the child's repr of (int, str)
    return status, json.loads(text) if status == 0 else {}


# ---- consume queues -------------------------------------------------------------------------

def test_consume_queue_file_cut_inside_a_unit_before_a_later_file_reads_both(damaged: Path):
    """A file cut to 207 bytes (10 units and a partial one) followed by the next file looped forever:
    the partial unit is skipped and the next file is read."""
    first = damaged / FIRST_CQ
    data = first.read_bytes()
    units = -(-len(data.rstrip(b"\0")) // 20)
    replace_file(first, data[:207])
    (damaged / QUEUE / "00000000000006000000").write_bytes(data)  # the same units again, 300000 later

    outcome, detail = isolated(lambda: [(int(u["queue_offset"]), int(u["phy"])) for u in
                                        Store.open(str(damaged)).consume_queue("OrderEvents", 0).units()])
    assert outcome == "ok", (outcome, detail)
    got = eval(detail)
    assert [q for q, _ in got] == list(range(10)) + list(range(300_000, 300_000 + units))
    outcome, detail = isolated(lambda: topic_offsets(damaged) == scanned_offsets(damaged))
    assert (outcome, detail) == ("ok", "True")


def test_consume_queue_file_named_far_ahead_does_not_stall_the_planner(damaged: Path):
    """A 20-byte file named 09223372036854775000 made the planner walk 4.6e17 queue offsets."""
    (damaged / QUEUE / "09223372036854775000").write_bytes((damaged / FIRST_CQ).read_bytes()[:20])
    outcome, detail = isolated(lambda: topic_offsets(damaged) == scanned_offsets(damaged))
    assert (outcome, detail) == ("ok", "True")


def test_consume_queue_file_named_past_long_max_is_ignored_with_a_note(damaged: Path):
    (damaged / QUEUE / "99999999999999999999").write_bytes(b"\1" * 20)

    def read() -> tuple[bool, list[str]]:
        with Store.open(str(damaged)) as store:
            store.consume_queue("OrderEvents", 0)
            return topic_offsets(damaged) == scanned_offsets(damaged), store.problems

    outcome, detail = isolated(read)
    assert outcome == "ok", (outcome, detail)
    same, problems = eval(detail)
    assert same
    assert any("99999999999999999999: ends past Long.MAX_VALUE" in p for p in problems), problems


def test_special_files_among_consume_queues_are_not_opened(damaged: Path):
    """A FIFO as a queue file, a symlink loop as a topic directory: noted, never opened; the topic is
    still read completely (the bytes without units are scanned)."""
    fifo = damaged / FIRST_CQ
    fifo.unlink()
    os.mkfifo(fifo)
    loop = damaged / "consumequeue" / "AuditLog"
    for queue in loop.iterdir():
        for f in queue.iterdir():
            f.unlink()
        queue.rmdir()
    loop.rmdir()
    loop.symlink_to("AuditLog")

    def read() -> tuple[bool, bool, list[str]]:
        with Store.open(str(damaged)) as store:
            store.topics()
            store.consume_queue("OrderEvents", 0)
            audit = topic_offsets(damaged, "AuditLog") == scanned_offsets(damaged, "AuditLog")
            return topic_offsets(damaged) == scanned_offsets(damaged), audit, store.problems

    outcome, detail = isolated(read)
    assert outcome == "ok", (outcome, detail)
    same, same_audit, problems = eval(detail)
    assert same and same_audit
    assert f"{fifo}: a FIFO, not a segment file; ignored" in problems
    assert f"{loop}: a symbolic link loop, not a topic directory; ignored" in problems


# ---- commit log -----------------------------------------------------------------------------

def test_commit_log_segment_that_is_a_symlink_loop_is_a_named_error(damaged: Path):
    segment = damaged / "commitlog" / "00000000000000262144"
    segment.unlink()
    segment.symlink_to(segment.name)
    outcome, detail = isolated(lambda: Store.open(str(damaged)).max_offset)
    assert outcome == "named", (outcome, detail)
    assert detail.startswith(f"UnreadableFileError: {segment}: cannot be read: a symbolic link loop")


def test_commit_log_directory_that_is_a_symlink_loop_is_named_so(damaged: Path):
    directory = damaged / "commitlog"
    for f in directory.iterdir():
        f.unlink()
    directory.rmdir()
    directory.symlink_to("commitlog")
    outcome, detail = isolated(lambda: Store.open(str(damaged)))
    assert outcome == "named", (outcome, detail)
    assert detail.startswith(f"UnreadableFileError: {directory}: cannot be read: a symbolic link loop")


def test_commit_log_file_named_past_long_max_is_ignored_with_a_note(damaged: Path):
    (damaged / "commitlog" / "99999999999999999999").write_bytes(b"\0" * 4096)

    def read() -> tuple[int, list[str]]:
        with Store.open(str(damaged)) as store:
            store.uncovered_ranges()  # was an OverflowError: segment ends past int64
            return sum(b.num_rows for b in store.scan(columns=["topic"])), store.problems

    outcome, detail = isolated(read)
    assert outcome == "ok", (outcome, detail)
    rows, problems = eval(detail)
    assert rows > 0
    assert any("99999999999999999999: ends past Long.MAX_VALUE" in p for p in problems), problems


# ---- index, checkpoint ----------------------------------------------------------------------

def test_fifo_under_index_is_listed_as_unusable_not_opened(damaged: Path):
    fifo = damaged / "index" / "20240310999999999"
    os.mkfifo(fifo)
    status, doc = info(damaged)
    assert status == 0
    assert f"{fifo}: a FIFO, not an index file" in doc["problems"]


def test_index_header_times_outside_any_calendar_are_shown_as_numbers(damaged: Path):
    index = sorted((damaged / "index").iterdir())[0]
    data = bytearray(index.read_bytes())
    data[0:8] = (2**63 - 1).to_bytes(8, "big")  # beginTimestamp
    replace_file(index, bytes(data))
    outcome, detail = isolated(lambda: main(["info", str(damaged)]))
    assert (outcome, detail) == ("ok", "0")


def test_checkpoint_with_extreme_times_or_not_a_file(damaged: Path):
    checkpoint = damaged / "checkpoint"
    data = bytearray(checkpoint.read_bytes())
    data[0:8] = (-(2**63)).to_bytes(8, "big", signed=True)  # physicMsgTimestamp
    replace_file(checkpoint, bytes(data))
    assert isolated(lambda: main(["info", str(damaged)])) == ("ok", "0")

    checkpoint.unlink()
    checkpoint.mkdir()
    outcome, detail = isolated(lambda: Store.open(str(damaged)).checkpoint)
    assert outcome == "named", (outcome, detail)
    assert detail.startswith(f"UnreadableFileError: {checkpoint}: cannot be read: a directory")
    status, doc = info(damaged)  # the checkpoint is optional metadata: info shows the rest
    assert status == 0 and doc["checkpoint"] is None
    assert f"{checkpoint}: cannot be read: a directory" in doc["problems"]

    checkpoint.rmdir()
    os.mkfifo(checkpoint)
    outcome, detail = isolated(lambda: Store.open(str(damaged)).checkpoint)
    assert outcome == "named" and "cannot be read: a FIFO" in detail, (outcome, detail)


# ---- config JSON ----------------------------------------------------------------------------

def test_deeply_nested_consumer_offsets_is_a_named_error_and_info_still_works(damaged: Path):
    path = damaged / "config" / "consumerOffset.json"
    replace_file(path, b'{"offsetTable":' * 5000 + b"{}" + b"}" * 5000)
    outcome, detail = isolated(lambda: Store.open(str(damaged)).consumer_offsets())
    assert outcome == "named", (outcome, detail)
    assert detail.startswith(f"StoreCorruptionError: {path}:") and "nested too deeply" in detail
    status, doc = info(damaged)
    assert status == 0 and doc["consumerGroups"] == []
    assert any("nested too deeply" in p for p in doc["problems"])


def test_wrongly_typed_topics_json_falls_back_to_bak_then_to_the_queues(damaged: Path):
    path = damaged / "config" / "topics.json"
    good = path.read_bytes()
    replace_file(path, b'{"topicConfigTable": {"OrderEvents": [1, 2]}}')
    outcome, detail = isolated(lambda: Store.open(str(damaged)).topic_configs())
    assert outcome == "named", (outcome, detail)
    assert f"{path}: topicConfigTable entry 'OrderEvents' is not a JSON object" in detail

    def topics() -> tuple[list[str], list[str]]:
        with Store.open(str(damaged)) as store:
            return store.topics(), store.problems

    outcome, detail = isolated(topics)
    assert outcome == "ok", (outcome, detail)
    names, problems = eval(detail)
    assert "OrderEvents" in names
    assert any("topics are taken from consumequeue/ only" in p for p in problems), problems

    (damaged / "config" / "topics.json.bak").write_bytes(good)  # the broker's ConfigManager falls back
    outcome, detail = isolated(lambda: sorted(Store.open(str(damaged)).topic_configs()))
    assert outcome == "ok" and "OrderEvents" in detail, (outcome, detail)


def test_consumer_offsets_out_of_java_range_are_a_named_error(damaged: Path):
    path = damaged / "config" / "consumerOffset.json"
    replace_file(path, b'{"offsetTable": {"OrderEvents@g": {"99999999999": 1}}}')
    outcome, detail = isolated(lambda: Store.open(str(damaged)).consumer_offsets())
    assert outcome == "named", (outcome, detail)
    assert "offsetTable entry 'OrderEvents@g' is not a queueId -> offset map" in detail

