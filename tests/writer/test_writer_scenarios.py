"""The broker behaviours the writer reproduces, one scenario each (spec §2.6, §2.10, §2.11, §5, §6)."""

from __future__ import annotations

import datetime
import hashlib
import re
from pathlib import Path

import pytest
from scalar_log import expected_index_keys, expected_units, index_views, walk_log, written_units

from rmqstore.format.brokerconfig import consumer_offsets, parse_fastjson, topic_configs
from rmqstore.format.checkpoint import parse_checkpoint
from rmqstore.format.consumequeue import DEFAULT_DELAY_LEVEL_TABLE, parse_units
from rmqstore.format.indexfile import IndexFileView, index_key, parse_index_header
from rmqstore.format.javahash import index_key_hash, tags_code
from rmqstore.format.layout import (
    BLANK_MAGIC,
    SYSFLAG_MULTI_TAGS,
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_COMMIT,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED,
    TRANSACTION_ROLLBACK,
)
from rmqstore.format.record import SCHEDULE_TOPIC, check_record
from rmqstore.writer import MessageSpec, StoreWriter, UniqKeyGenerator

T0 = 1_700_000_000_000
SMALL = {"segment_size": 1 << 16, "cq_segment_size": 200, "index_hash_slots": 11, "index_entries": 50}


def fixed(topic: str = "TopicTest", body: bytes = b"hello", **kw) -> MessageSpec:
    """A message whose record size does not depend on generated ids."""
    return MessageSpec(topic=topic, body=body, uniq_key="7F00000104D21B6D358605265C000000", **kw)


def by_offset(store: Path) -> dict:
    return {r.commit_log_offset: r for r in walk_log(store)[0]}


@pytest.mark.parametrize("slack, same_segment", [(8, True), (7, False)])
def test_record_written_only_if_size_plus_8_fits(tmp_path: Path, slack: int, same_segment: bool) -> None:
    probe = StoreWriter(tmp_path / "probe", **SMALL)
    size_a = probe.append(fixed(body=b"a" * 100)).store_size
    size_b = probe.append(fixed(body=b"b" * 40)).store_size
    probe.close()
    segment = size_a + size_b + slack
    writer = StoreWriter(tmp_path / "s", **{**SMALL, "segment_size": segment})
    writer.append(fixed(body=b"a" * 100))
    b = writer.append(fixed(body=b"b" * 40))
    writer.close()
    if same_segment:
        assert b.physical_offset == size_a
    else:
        assert b.physical_offset == segment
        first = (tmp_path / "s" / "commitlog" / f"{0:020d}").read_bytes()
        assert first[size_a : size_a + 8] == size_b.__add__(slack).to_bytes(4, "big") + BLANK_MAGIC.to_bytes(
            4, "big"
        )
        assert set(first[size_a + 8 :]) == {0}
    assert [r.commit_log_offset for r in walk_log(tmp_path / "s")[0]] == [0, b.physical_offset]


def test_batch_is_all_or_nothing_in_one_segment(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path / "s", **{**SMALL, "segment_size": 1024})
    writer.append(fixed(body=b"x" * 500))
    batch = [MessageSpec("BatchTopic", body=bytes([i]) * 100, keys=f"k{i}", queue_id=1) for i in range(3)]
    results = writer.append_batch(batch)
    writer.close()
    assert results[0].physical_offset == 1024, "the batch does not fit after the first record"
    assert [r.physical_offset for r in results] == [
        1024 + sum(x.store_size for x in results[:i]) for i in range(3)
    ]
    assert [r.queue_offset for r in results] == [0, 1, 2]
    records = by_offset(tmp_path / "s")
    uniq = [records[r.physical_offset].uniq_key for r in results]
    assert len(set(uniq)) == 3, "every inner message keeps its own UNIQ_KEY"
    assert {records[r.physical_offset].born_timestamp for r in results} == {records[1024].born_timestamp}


def test_delayed_message_goes_through_schedule_topic(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path / "s", **SMALL)
    scheduled = writer.append(
        MessageSpec(
            "Orders", b"later", queue_id=2, tags="TagA", keys="o-1", delay_level=3, store_timestamp=T0
        )
    )
    delivered = writer.deliver_delayed(scheduled, store_timestamp=T0 + 10_000)
    writer.close()
    records = by_offset(tmp_path / "s")
    first, second = records[scheduled.physical_offset], records[delivered.physical_offset]
    assert (first.topic, first.queue_id) == (SCHEDULE_TOPIC, 2)
    assert first.properties["DELAY"] == "3"
    assert (first.properties["REAL_TOPIC"], first.properties["REAL_QID"]) == ("Orders", "2")
    assert (second.topic, second.queue_id, second.queue_offset) == ("Orders", 2, 0)
    # messageTimeUp encodes the properties before clearing DELAY (rmq-5.5.0-broker's delivered record)
    assert second.properties == first.properties
    assert (second.uniq_key, second.keys, second.body) == (first.uniq_key, ["o-1"], b"later")
    units = written_units(tmp_path / "s")
    assert units[(SCHEDULE_TOPIC, 2)] == [(scheduled.physical_offset, scheduled.store_size, T0 + 10_000)]
    assert DEFAULT_DELAY_LEVEL_TABLE[3] == 10_000
    assert units[("Orders", 2)] == [(delivered.physical_offset, delivered.store_size, tags_code("TagA"))]
    delay_doc = (tmp_path / "s" / "config" / "delayOffset.json").read_text()
    assert re.search(r"\t\t3:1\n", delay_doc)


def test_send_back_goes_to_retry_through_the_schedule_topic_then_to_the_dlq(tmp_path: Path) -> None:
    """consumerSendMsgBack: the record read back from the log, levels 3 + reconsumeTimes, then the DLQ."""
    writer = StoreWriter(tmp_path / "s", **SMALL)
    original = writer.append(MessageSpec("Orders", b"x" * 5000, queue_id=1, tags="TagA", keys="o-1",
                                         compression=3, store_timestamp=T0))
    first = writer.send_back(original, "cg", max_reconsume_times=2, store_timestamp=T0 + 5)
    retry = writer.deliver_delayed(first, store_timestamp=T0 + 10_005)
    second = writer.send_back(retry, "cg", max_reconsume_times=2, store_timestamp=T0 + 10_010)
    retry2 = writer.deliver_delayed(second, store_timestamp=T0 + 40_010)
    dead = writer.send_back(retry2, "cg", max_reconsume_times=2, store_timestamp=T0 + 40_020)
    writer.close()
    records = by_offset(tmp_path / "s")
    stored = records[original.physical_offset]
    sched1, sched2 = records[first.physical_offset], records[second.physical_offset]
    retried, dlq = records[retry.physical_offset], records[dead.physical_offset]
    assert (sched1.topic, sched1.queue_id, sched1.reconsume_times) == (SCHEDULE_TOPIC, 2, 1)
    assert (sched2.topic, sched2.queue_id, sched2.reconsume_times) == (SCHEDULE_TOPIC, 3, 2)
    assert (retried.topic, retried.queue_id, retried.queue_offset) == ("%RETRY%cg", 0, 0)
    assert (dlq.topic, dlq.queue_id, dlq.queue_offset, dlq.reconsume_times) == ("%DLQ%cg", 0, 0, 3)
    for copy in (sched1, retried, sched2, dlq):
        assert (copy.body, copy.sys_flag, copy.born_timestamp, copy.born_host) == (
            stored.body, stored.sys_flag, stored.born_timestamp, stored.born_host)
        assert (copy.uniq_key, copy.keys, copy.tags) == (stored.uniq_key, ["o-1"], "TagA")
        assert copy.properties["RETRY_TOPIC"] == "Orders" and copy.properties["WAIT"] == "false"
        assert copy.properties["ORIGIN_MESSAGE_ID"] == stored.msg_id
    assert [r.properties["DELAY"] for r in (sched1, sched2, dlq)] == ["3", "4", "0"]
    assert (sched2.properties["REAL_TOPIC"], sched2.properties["REAL_QID"]) == ("%RETRY%cg", "0")
    topics = topic_configs(parse_fastjson((tmp_path / "s" / "config" / "topics.json").read_text()))
    assert (topics["%RETRY%cg"]["readQueueNums"], topics["%DLQ%cg"]["readQueueNums"]) == (1, 1)


def test_timer_message_goes_through_the_timer_topic(tmp_path: Path) -> None:
    """5.x HookUtils.transformTimerMessage, then TimerMessageStore.convert; one already due stays put."""
    writer = StoreWriter(tmp_path / "s", **SMALL)
    timer = writer.append(fixed("Orders", queue_id=3, properties={"TIMER_DELIVER_MS": str(T0 + 60_000)},
                                store_timestamp=T0))
    rounded = writer.append(fixed("Orders", queue_id=3, properties={"TIMER_DELAY_SEC": "90"},
                                  store_timestamp=T0 + 1))
    past = writer.append(fixed("Orders", queue_id=3, properties={"TIMER_DELIVER_MS": str(T0 - 1)},
                               store_timestamp=T0 + 2))
    delivered = writer.deliver_delayed(timer, store_timestamp=T0 + 59_010)
    with pytest.raises(ValueError, match="timerMaxDelaySec"):
        writer.append(fixed("Orders", properties={"TIMER_DELAY_SEC": str(4 * 86_400)}))
    writer.close()
    records = by_offset(tmp_path / "s")
    first, out = records[timer.physical_offset], records[delivered.physical_offset]
    assert (first.topic, first.queue_id) == ("rmq_sys_wheel_timer", 0)
    assert first.properties["TIMER_OUT_MS"] == str(T0 + 59_000), "an exact second is delivered one earlier"
    assert records[rounded.physical_offset].properties["TIMER_OUT_MS"] == str(T0 + 90_000)
    assert (first.properties["REAL_TOPIC"], first.properties["REAL_QID"]) == ("Orders", "3")
    kept = records[past.physical_offset]
    assert (kept.topic, "TIMER_OUT_MS" in kept.properties) == ("Orders", False)
    assert (out.topic, out.queue_id, out.queue_offset) == ("Orders", 3, 1)
    stamps = {"TIMER_ENQUEUE_MS": str(T0), "TIMER_DEQUEUE_MS": str(T0 + 59_010)}
    assert out.properties == {**first.properties, **stamps}
    units = written_units(tmp_path / "s")
    timer_units = units[("rmq_sys_wheel_timer", 0)]
    assert [unit[0] for unit in timer_units] == [timer.physical_offset, rounded.physical_offset]
    assert timer_units[0][2] == tags_code(None)


def test_transaction_half_commit_rollback_and_raw_types(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path / "s", **SMALL)
    half_ok = writer.begin_transaction(
        MessageSpec("Pay", b"p1", queue_id=1, keys="pay-1"), producer_group="PG"
    )
    half_no = writer.begin_transaction(
        MessageSpec("Pay", b"p2", queue_id=1, keys="pay-2"), producer_group="PG"
    )
    commit = writer.end_transaction(half_ok, commit=True)
    assert writer.end_transaction(half_no, commit=False) is None
    prepared = writer.append(MessageSpec("Legacy", b"r1", keys="raw-p", transaction=TRANSACTION_PREPARED))
    rollback = writer.append(MessageSpec("Legacy", b"r2", keys="raw-r", transaction=TRANSACTION_ROLLBACK))
    writer.close()
    store = tmp_path / "s"
    records = by_offset(store)
    half = records[half_ok.physical_offset]
    assert (half.topic, half.queue_id, half.sys_flag & SYSFLAG_TRANSACTION_MASK) == (
        "RMQ_SYS_TRANS_HALF_TOPIC",
        0,
        TRANSACTION_NOT_TYPE,
    )
    assert half.properties["TRAN_MSG"] == "true" and half.properties["PGROUP"] == "PG"
    committed = records[commit.physical_offset]
    assert (committed.topic, committed.queue_id, committed.queue_offset) == ("Pay", 1, 0)
    assert committed.sys_flag & SYSFLAG_TRANSACTION_MASK == TRANSACTION_COMMIT
    assert committed.prepared_transaction_offset == half_ok.physical_offset
    assert committed.properties["REAL_TOPIC"] == "Pay" and "TRAN_MSG" not in committed.properties
    ops = [r for r in records.values() if r.topic == "RMQ_SYS_TRANS_OP_HALF_TOPIC"]
    assert [(r.tags, r.body) for r in ops] == [("d", b"0"), ("d", b"1")]
    assert records[prepared.physical_offset].queue_offset == 0 and prepared.queue_offset == 0
    units = written_units(store)
    assert ("Legacy", prepared.queue_id) not in units and ("Legacy", rollback.queue_id) not in units
    views = index_views(store, 11, 50)
    found = lambda key: [p for _, v in views for p in v.candidates(index_key("Legacy", key), 0, 2**62)]  # noqa: E731
    assert found("raw-p") == [prepared.physical_offset]
    assert found("raw-r") == [], "ROLLBACK records are not indexed (§5.4)"
    assert units == expected_units(list(records.values()))


def test_index_rolls_over_like_the_broker(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path / "s", **{**SMALL, "index_entries": 4})  # 3 entries per file
    a = writer.append(MessageSpec("T", b"a", keys="k1 k2", auto_uniq_key=False, store_timestamp=T0))
    writer.append(MessageSpec("T", b"b", keys="k3", auto_uniq_key=False, store_timestamp=T0 + 1500))
    c = writer.append(MessageSpec("T", b"c", keys="k4", auto_uniq_key=False, store_timestamp=T0 + 66_500))
    writer.append(MessageSpec("T", b"d", auto_uniq_key=False, store_timestamp=T0 + 70_000))
    writer.close()
    names = sorted(p.name for p in (tmp_path / "s" / "index").iterdir())
    assert len(names) == 2 and all(len(n) == 17 and n.isdigit() for n in names)
    assert names[0] == datetime.datetime.fromtimestamp(T0 / 1000).strftime("%Y%m%d%H%M%S") + "000"
    (_, first), (_, second) = index_views(tmp_path / "s", 11, 4)
    assert first.header.index_count == 4 and first.header.end_timestamp == T0 + 1500
    header = second.header
    assert (header.begin_phy_offset, header.begin_timestamp) == (c.physical_offset, T0 + 66_500)
    assert header.index_count == 2
    (entry,) = second.entries()
    assert entry["time_diff"] == 65, "first entry after roll-over is timed against the previous end (§5.5)"
    assert first.candidates(index_key("T", "k2"), 0, 2**62) == [a.physical_offset]
    checkpoint = parse_checkpoint((tmp_path / "s" / "checkpoint").read_bytes())
    assert checkpoint.index_msg_timestamp == T0 + 1500


def test_full_index_file_is_replaced_even_by_a_keyless_record(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path / "s", **{**SMALL, "index_entries": 3})
    writer.append(MessageSpec("T", b"a", auto_uniq_key=False, store_timestamp=T0))
    keyed = writer.append(MessageSpec("T", b"b", keys="k1 k2", auto_uniq_key=False, store_timestamp=T0 + 1))
    writer.append(MessageSpec("T", b"c", auto_uniq_key=False, store_timestamp=T0 + 5000))
    writer.close()
    files = sorted((tmp_path / "s" / "index").iterdir())
    assert len(files) == 2
    assert parse_index_header(files[0].read_bytes()).index_count == 3
    header = parse_index_header(files[1].read_bytes())
    assert (header.index_count, header.used_slots) == (1, 0), "flushed empty file: indexCount 1"
    assert header.begin_phy_offset == header.end_phy_offset == keyed.physical_offset > 0
    assert header.begin_timestamp == header.end_timestamp == T0 + 1


def test_crashed_store_has_abort_and_torn_tail(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path / "s", **SMALL)
    for i in range(5):
        writer.append(MessageSpec("T", b"m%d" % i, keys=f"k{i}"))
    end = writer.position
    writer.close(crashed=True)
    store = tmp_path / "s"
    assert (store / "abort").read_text().isdigit()
    records, _, walked_end = walk_log(store)
    assert len(records) == 5 and walked_end == end
    segment = (store / "commitlog" / f"{0:020d}").read_bytes()
    assert any(segment[end : end + 16]), "torn bytes follow the valid end"
    assert check_record(segment, end, check_crc=True).kind == "invalid"


def test_clean_store_has_no_abort_and_a_checkpoint(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path / "s", **SMALL)
    first = writer.append(MessageSpec("T", b"1", store_timestamp=T0))
    last = writer.append(MessageSpec("T", b"2", store_timestamp=T0 + 42, transaction=TRANSACTION_PREPARED))
    writer.close()
    assert not (tmp_path / "s" / "abort").exists()
    checkpoint = parse_checkpoint((tmp_path / "s" / "checkpoint").read_bytes())
    assert (tmp_path / "s" / "checkpoint").stat().st_size == 4096
    assert checkpoint.physic_msg_timestamp == T0 + 42
    assert checkpoint.logics_msg_timestamp == T0, "PREPARED records are not dispatched to a consume queue"
    assert checkpoint.confirm_phy_offset == last.physical_offset != first.physical_offset


def test_refuses_to_overwrite_a_store(tmp_path: Path) -> None:
    StoreWriter(tmp_path / "s", **SMALL).close()
    with pytest.raises(FileExistsError):
        StoreWriter(tmp_path / "s", **SMALL)
    writer = StoreWriter(tmp_path / "s", **SMALL, overwrite=True)
    writer.append(MessageSpec("T", b"new"))
    writer.close()
    assert [r.body for r in walk_log(tmp_path / "s")[0]] == [b"new"]
    (tmp_path / "s" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match=r"notes\.txt"):
        StoreWriter(tmp_path / "s", **SMALL, overwrite=True)
    assert (tmp_path / "s" / "notes.txt").read_text() == "mine"


def test_config_files_in_fastjson_form(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path / "s", **SMALL)
    writer.declare_topic("Multi", 3, multi_tag=True)
    record = writer.append(MessageSpec("Multi", b"x", tags="TagB||TagC"))
    writer.append(MessageSpec("Plain", b"y", queue_id=6))
    writer.set_consumer_offset("Multi", "cg", 0, 1)
    writer.set_consumer_offset("Multi", "cg", 2, 0)
    writer.close()
    text = (tmp_path / "s" / "config" / "consumerOffset.json").read_text()
    assert '\t\t"Multi@cg":{\n\t\t\t0:1,\n\t\t\t2:0\n\t\t}' in text
    assert consumer_offsets(parse_fastjson(text)) == {("Multi", "cg"): {0: 1, 2: 0}}
    topics = topic_configs(parse_fastjson((tmp_path / "s" / "config" / "topics.json").read_text()))
    assert topics["Multi"]["topicFilterType"] == "MULTI_TAG" and topics["Multi"]["readQueueNums"] == 3
    assert topics["Plain"]["writeQueueNums"] == 7
    assert by_offset(tmp_path / "s")[record.physical_offset].sys_flag & SYSFLAG_MULTI_TAGS


def test_uniq_key_format() -> None:
    ms = 1_700_000_000_000
    v4 = UniqKeyGenerator("10.1.2.3:5000", pid=0x1234, class_loader_hash=0x0BADCAFE)
    first, second = v4.next(ms), v4.next(ms)
    month = datetime.datetime.fromtimestamp(ms / 1000)
    since_month = ms - int(datetime.datetime(month.year, month.month, 1).timestamp() * 1000)
    assert first == f"0A01020312340BADCAFE{since_month:08X}0000"
    assert second.endswith("0001") and second[:-4] == first[:-4]
    next_month = int(datetime.datetime(month.year, month.month + 1, 1).timestamp() * 1000) + 5
    assert v4.next(next_month)[20:28] == "00000005", "time is counted from the start of the current month"
    v6 = UniqKeyGenerator("[2001:db8::1]:5000", pid=1, class_loader_hash=2).next(ms)
    assert len(v6) == 56 and v6.startswith("20010DB8")


def test_output_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    def build(name: str, seed: int) -> str:
        writer = StoreWriter(tmp_path / name, **SMALL, seed=seed)
        for i in range(30):
            writer.append(
                MessageSpec("T", b"%d" % i, keys=f"k{i}", born_host="[::1]:9" if i % 2 else "1.2.3.4:5")
            )
        writer.close()
        digest = hashlib.sha256()
        for path in sorted((tmp_path / name).rglob("*")):
            if path.is_file():
                digest.update(str(path.relative_to(tmp_path / name)).encode() + path.read_bytes())
        return digest.hexdigest()

    first = build("a", 1)
    assert build("b", 1) == first
    assert build("c", 2) != first


def test_consume_queue_segments_are_presized_and_complete(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path / "s", **{**SMALL, "cq_segment_size": 70})  # rounded up to 80 = 4 units
    for i in range(9):
        writer.append(MessageSpec("T", b"%d" % i, queue_id=0, tags="A" if i % 2 else None))
    writer.close()
    queue_dir = tmp_path / "s" / "consumequeue" / "T" / "0"
    assert [(p.name, p.stat().st_size) for p in sorted(queue_dir.iterdir())] == [
        (f"{o:020d}", 80) for o in (0, 80, 160)
    ]
    units = parse_units(b"".join(p.read_bytes() for p in sorted(queue_dir.iterdir())))
    assert list(units["tags_code"][:9]) == [0, tags_code("A")] * 4 + [0]
    records = walk_log(tmp_path / "s")[0]
    assert written_units(tmp_path / "s") == expected_units(records)
    assert len(expected_index_keys(records)) == 9


def test_index_view_from_writer_matches_every_entry(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path / "s", **{**SMALL, "index_entries": 7})
    for i in range(40):
        writer.append(
            MessageSpec(
                f"T{i % 3}", b"x", keys=["a", f"订单-{i}", "😀"][: i % 4], store_timestamp=T0 + i * 700
            )
        )
    writer.close()
    store = tmp_path / "s"
    records = by_offset(store)
    views = index_views(store, 11, 7)
    for _, view in views:
        assert isinstance(view, IndexFileView)
        for entry in view.entries():
            record = records[int(entry["phy"])]
            indexed = [k for k, p in expected_index_keys([record])]
            assert int(entry["key_hash"]) in {index_key_hash(k) for k in indexed}


def test_crc32_property_option(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path / "s", **SMALL, append_crc_property=True)
    results = [writer.append(MessageSpec("T", b"body %d" % i, keys="k")) for i in range(3)]
    writer.close()
    segment = (tmp_path / "s" / "commitlog" / f"{0:020d}").read_bytes()
    for result in results:
        check = check_record(segment, result.physical_offset, check_crc=True, verify_prop_crc=True)
        assert (check.kind, check.size) == ("record", result.store_size)
    digits = by_offset(tmp_path / "s")[0].properties["__CRC32#"]
    assert len(digits) == 10 and digits.isdigit()
