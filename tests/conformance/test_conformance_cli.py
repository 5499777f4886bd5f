"""The `rmqstore` CLI against stores written by real RocketMQ and RocketMQ's own answers (oracle.json).

`dump` runs as a separate process, like a user would run it; the hundreds of `query` questions call the
same entry point (`rmqstore.cli.main`) in-process to keep the suite fast. Index geometry is not passed:
the CLI detects it from the index files like it must for a store it knows nothing about.
Fixtures and oracle fields: tests/conformance/README.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from oracle import (
    CRASH,
    MAIN,
    expected_row,
    host,
    index_queries,
    msg_id_queries,
    offsets_with_uniq_key,
    records,
    store_dir,
)

from rmqstore.cli import main as cli_main
from rmqstore.format.table import COLUMN_NAMES


def _dump(name: str) -> list[dict[str, Any]]:
    """`rmqstore dump STORE --format jsonl` in a child process, parsed."""
    command = ["dump", str(store_dir(name)), "--format", "jsonl", "--no-progress"]
    done = subprocess.run(
        [sys.executable, "-m", "rmqstore.cli", *command],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _expected_json_row(record: dict[str, Any]) -> dict[str, Any]:
    """The oracle record as `dump` prints it: body base64, epoch ms, properties an object, keys a list
    ([] when the record has no KEYS); hosts parsed because Java prints IPv6 uncompressed."""
    row = expected_row(record)
    return {**row, "body": record["body"], "keys": row["keys"] or []}


def _comparable(printed: dict[str, Any]) -> dict[str, Any]:
    return {**printed, "bornHost": host(printed["bornHost"]), "storeHost": host(printed["storeHost"])}


@pytest.mark.parametrize("name", MAIN + CRASH)
def test_dump_prints_every_record_like_message_decoder(name: str) -> None:
    printed = _dump(name)
    expected = [_expected_json_row(r) for r in records(name)]  # crash copies: up to the recovered end
    assert [r["commitLogOffset"] for r in printed] == [r["commitLogOffset"] for r in expected]
    for actual, wanted in zip(printed, expected, strict=True):
        assert list(actual) == list(COLUMN_NAMES), f"columns of the record at {wanted['commitLogOffset']}"
        assert _comparable(actual) == wanted, f"record at {wanted['commitLogOffset']}"


def _run_query(capsys: pytest.CaptureFixture[str], name: str, *selection: str) -> tuple[int, str, str]:
    """`rmqstore query STORE <selection>`: exit status, stdout, stderr (argparse refusals exit 2 too)."""
    try:
        status = cli_main(
            ["query", str(store_dir(name)), *selection, "--columns", "commitLogOffset", "--no-progress"]
        )
    except SystemExit as exit_:
        status = exit_.code
    out, err = capsys.readouterr()
    return status, out, err


def _query(capsys: pytest.CaptureFixture[str], name: str, *selection: str) -> list[int]:
    """`rmqstore query STORE <selection>`: offsets of the printed records, in printed order."""
    status, out, _ = _run_query(capsys, name, *selection)
    assert status == 0, selection
    found = [json.loads(line)["commitLogOffset"] for line in out.splitlines()]
    assert found == sorted(found), f"{selection}: not in commit-log order"
    return found


@pytest.mark.parametrize("name", MAIN)
def test_query_by_key_and_uniq_key_matches_rocketmq(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    queries = index_queries(name)
    assert {q.kind for q in queries} == {"key", "uniqKey"}
    stored_topics = {r["topic"] for r in records(name)}
    for query in queries:
        option = "--key" if query.kind == "key" else "--uniq-key"
        selection = (option, query.key, "--topic", query.topic)
        if query.topic in stored_topics:
            query.check(_query(capsys, name, *selection))
        else:  # a topic the store never held: an error naming it, not an empty answer
            assert not query.table, query.label
            status, _, err = _run_query(capsys, name, *selection)
            assert status == 2 and f"topic '{query.topic}' is not in this store" in err, (query.label, err)


@pytest.mark.parametrize("name", MAIN)
def test_query_by_msg_id_matches_rocketmq(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    queries = msg_id_queries(name)
    assert any(q.offset is not None for q in queries) and any(q.offset is None for q in queries)
    for query in queries:
        if not _looks_like_message_id(query.msg_id):  # refused, naming it, not answered with nothing
            assert query.offset is None and not offsets_with_uniq_key(name, query.msg_id), query.msg_id
            status, _, err = _run_query(capsys, name, "--msg-id", query.msg_id)
            assert status == 2 and f"'{query.msg_id}' is not a message id" in err, err
            continue
        found = _query(capsys, name, "--msg-id", query.msg_id)
        if query.offset is not None:
            assert found == [query.offset], query.msg_id
        else:  # like mqadmin queryMsgById, an id that names no record is tried as a UNIQ_KEY
            assert found == offsets_with_uniq_key(name, query.msg_id), query.msg_id
        if query.admin is not None:  # mqadmin returns the record, or the first UNIQ_KEY match
            assert set(found) >= query.admin, query.msg_id
            assert set(found) == query.admin or query.offset is None, query.msg_id


def _looks_like_message_id(text: str) -> bool:
    """An offsetMsgId or UNIQ_KEY: 32 (IPv4) or 56 (IPv6) hex characters (spec §3)."""
    return len(text) in (32, 56) and all(c in "0123456789abcdefABCDEF" for c in text)
