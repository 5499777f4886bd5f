"""`rmqstore dump`: commit-log order, the table's column names and JSON forms, range and topic filters."""

from __future__ import annotations

import base64

from cli_helpers import T0, KnownStore, jsonl

from rmqstore.format.table import COLUMN_NAMES


def test_dump_prints_every_message_in_log_order_with_all_columns(known_store: KnownStore, run_cli) -> None:
    status, out, err = run_cli("dump", known_store.path, "--format", "jsonl", "--no-progress")
    rows = jsonl(out)
    assert status == 0 and f"{len(rows)} messages" in err
    assert [r["commitLogOffset"] for r in rows] == [r.offset for r in known_store.records]
    assert all(list(row) == list(COLUMN_NAMES) for row in rows)
    for row, written in zip(rows, known_store.records, strict=True):
        assert base64.b64decode(row["body"]) == written.body, "bodies come back decompressed, base64"
        assert row["storeTimestamp"] == written.store_ms and row["bornTimestamp"] == written.born_ms
        assert row["keys"] == list(written.keys)
        assert row["uniqKey"] == written.uniq_key == row["properties"]["UNIQ_KEY"]
        assert row["msgId"] == written.msg_id
        assert isinstance(row["properties"], dict)
    assert {r["bornHost"] for r in rows} >= {"[2001:db8::7]:4000", "10.1.1.1:5000"}


def test_dump_columns_in_the_order_asked(known_store: KnownStore, run_cli) -> None:
    status, out, _ = run_cli(
        "dump", known_store.path, "--columns", "keys,topic,storeTimestamp", "--no-progress"
    )
    rows = jsonl(out)
    assert status == 0
    assert [list(r) for r in rows] == [["keys", "topic", "storeTimestamp"]] * len(known_store.records)
    assert rows[0] == {"keys": ["hot"], "topic": "TopicA", "storeTimestamp": T0}


def test_dump_offset_range_and_topic(known_store: KnownStore, run_cli) -> None:
    offsets = [r.offset for r in known_store.records]
    start, end = offsets[10] + 1, offsets[40]
    _, out, _ = run_cli(
        "dump", known_store.path, "--start", start, "--end", end, "--columns", "commitLogOffset"
    )
    assert [r["commitLogOffset"] for r in jsonl(out)] == [o for o in offsets if start <= o < end]
    _, out, _ = run_cli("dump", known_store.path, "--topic", "TopicB", "--columns", "commitLogOffset,topic")
    assert [r["commitLogOffset"] for r in jsonl(out)] == [
        r.offset for r in known_store.records if r.topic == "TopicB"
    ]


def test_dump_rejects_unknown_columns(known_store: KnownStore, run_cli, capsys) -> None:
    try:
        run_cli("dump", known_store.path, "--columns", "topic,nope")
    except SystemExit as exc:
        assert exc.code == 2
    assert "unknown column 'nope'" in capsys.readouterr().err
