"""Typos are errors that name what was typed, never empty answers (issue 10 item 6)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hostile_helpers import replace_file

from rmqstore.cli import main
from rmqstore.format.brokerconfig import encode_fastjson, parse_fastjson
from rmqstore.spark.options import OptionError, parse_offsets, parse_options
from rmqstore.spark.reader import StoreReader
from rmqstore.store import Store


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        status = main([str(a) for a in args])
    except SystemExit as exc:  # argparse usage errors
        status = int(exc.code or 0)
    return status, capsys.readouterr().err


def test_malformed_msg_id_is_refused_naming_it(base_store: Path, capsys):
    status, err = run(capsys, "query", base_store, "--msg-id", "XYZ")
    assert status == 2
    assert "argument --msg-id: 'XYZ' is not a message id (offsetMsgId or UNIQ_KEY): 3 characters" in err
    status, err = run(capsys, "query", base_store, "--msg-id", "7F00000100002A9F000000000000000Z")
    assert status == 2 and "not hexadecimal" in err


def test_unknown_topic_is_an_error_with_did_you_mean(base_store: Path, capsys):
    status, err = run(capsys, "query", base_store, "--topic", "OrderEvent", "--no-progress")
    assert status == 2
    assert "topic 'OrderEvent' is not in this store" in err
    assert "did you mean 'OrderEvents'?" in err and "Known topics: " in err
    status, err = run(capsys, "dump", base_store, "--topic", "NoSuchTopic", "--no-progress")
    assert status == 2 and "topic 'NoSuchTopic' is not in this store" in err
    status, err = run(capsys, "query", base_store, "--topic", "NoSuchTopic", "--key", "order-17",
                      "--no-progress")
    assert status == 2 and "topic 'NoSuchTopic' is not in this store" in err


def test_known_topic_with_no_match_is_an_empty_answer(base_store: Path, capsys):
    status, err = run(capsys, "query", base_store, "--topic", "OrderEvents", "--key", "no-such-key",
                      "--no-progress")
    assert (status, err.strip()) == (0, "0 messages")


def test_topic_only_in_the_log_is_a_real_topic(damaged: Path, capsys):
    """A topic without consume queue and topics.json entry still has its messages in the log."""
    shutil.rmtree(damaged / "consumequeue" / "AuditLog")
    topics = damaged / "config" / "topics.json"
    doc = parse_fastjson(topics.read_text())
    del doc["topicConfigTable"]["AuditLog"]
    replace_file(topics, encode_fastjson(doc).encode())
    with Store.open(str(damaged)) as store:
        assert "AuditLog" not in store.topics()
    status, err = run(capsys, "dump", damaged, "--topic", "AuditLog", "--no-progress", "--columns", "topic")
    assert status == 0 and err.strip().endswith(" messages") and not err.startswith("0 ")


def test_negative_offsets_are_refused_naming_them(base_store: Path, capsys):
    status, err = run(capsys, "dump", base_store, "--start", "-5")
    assert status == 2 and "argument --start: offset -5 is negative" in err
    status, err = run(capsys, "dump", base_store, "--end", "-1")
    assert status == 2 and "argument --end: offset -1 is negative" in err


def test_unknown_consumer_group_names_it_and_the_close_ones(base_store: Path):
    from rmqstore.spark.offsets import check_group_known

    with Store.open(str(base_store)) as store:
        known = {group for _, group in store.consumer_offsets()}
        assert "cg-orders" in known
        with pytest.raises(OptionError) as caught:
            check_group_known([store], parse_offsets("startingOffsets", "group:cg-order"), "startingOffsets")
        message = str(caught.value)
        assert message.startswith("rmqstore option 'startingOffsets': consumer group 'cg-order' has no "
                                  "committed offsets in ")
        assert "did you mean 'cg-orders'" in message and "Known consumer groups: " in message
        check_group_known([store], parse_offsets("startingOffsets", "group:cg-orders"), "startingOffsets")


def test_batch_read_of_an_unknown_group_fails_at_planning(base_store: Path):
    """`startingOffsets=group:nosuchgroup` returned 0 rows."""
    reader = StoreReader(parse_options({"path": str(base_store), "startingOffsets": "group:nosuchgroup"}),
                         None)
    with pytest.raises(OptionError, match="consumer group 'nosuchgroup' has no committed offsets"):
        reader.partitions()
