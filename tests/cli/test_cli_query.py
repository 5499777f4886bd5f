"""`rmqstore query`: exactly the messages with the key (queryMsgByKey meaning), no caps, no collisions."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import GEOMETRY_ARG, T0, KnownStore, jsonl

from rmqstore.cachedir import CACHE_DIR_ENV
from rmqstore.format.layout import TRANSACTION_ROLLBACK
from rmqstore.writer import MessageSpec, StoreWriter


def offsets(out: str) -> list[int]:
    return [row["commitLogOffset"] for row in jsonl(out)]


@pytest.mark.parametrize("key", ["hot", "Aa", "BB", "hotter", "订单-😀", "missing"])
def test_query_key_returns_exactly_the_messages_having_it(known_store: KnownStore, run_cli, key: str) -> None:
    status, out, _ = run_cli("query", known_store.path, "--key", key, "--index-geometry", GEOMETRY_ARG)
    assert status == 0
    assert offsets(out) == known_store.with_key(key)


def test_query_key_has_no_cap(known_store: KnownStore, run_cli) -> None:
    _, out, _ = run_cli("query", known_store.path, "--key", "hot", "--columns", "commitLogOffset,keys")
    rows = jsonl(out)
    assert len(rows) > 64, "RocketMQ stops at 64 hits; we do not"
    assert all("hot" in row["keys"] for row in rows)


def test_query_key_with_topic_and_time(known_store: KnownStore, run_cli) -> None:
    _, out, _ = run_cli("query", known_store.path, "--key", "hot", "--topic", "TopicB")
    assert offsets(out) == known_store.with_key("hot", "TopicB") != []
    begin, end = T0 + 10_000, T0 + 30_000
    _, out, _ = run_cli(
        "query", known_store.path, "--key", "hot", "--begin", begin, "--end", "2023-11-14T22:13:50Z"
    )
    assert end == 1_700_000_030_000
    assert offsets(out) == [
        r.offset for r in known_store.records if "hot" in r.keys and begin <= r.store_ms <= end
    ]


def test_query_by_uniq_key_and_msg_id(known_store: KnownStore, run_cli) -> None:
    target = known_store.records[17]
    for option, value in (
        ("--uniq-key", target.uniq_key),
        ("--msg-id", target.msg_id),
        ("--msg-id", target.uniq_key),
    ):
        status, out, _ = run_cli(
            "query", known_store.path, option, value, "--columns", "commitLogOffset,uniqKey"
        )
        assert status == 0 and jsonl(out) == [{"commitLogOffset": target.offset, "uniqKey": target.uniq_key}]


def test_query_topic_time_range(known_store: KnownStore, run_cli) -> None:
    begin, end = T0 + 20_500, T0 + 60_000
    _, out, _ = run_cli("query", known_store.path, "--topic", "TopicA", "--begin", begin, "--end", end)
    expected = [r.offset for r in known_store.records if r.topic == "TopicA" and begin <= r.store_ms <= end]
    assert offsets(out) == expected and len(expected) == 40


def test_query_needs_a_criterion(known_store: KnownStore, run_cli) -> None:
    with pytest.raises(SystemExit, match="give --key"):
        run_cli("query", known_store.path)


def test_installed_entry_point_runs(known_store: KnownStore) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rmqstore.cli",
            "query",
            str(known_store.path),
            "--key",
            "Aa",
            "--columns",
            "keys",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert jsonl(done.stdout) == [{"keys": ["Aa"]}] * 3


@pytest.mark.parametrize("damage", ["remove", "truncate"])
def test_query_without_a_usable_index_finds_the_same(
    known_store: KnownStore, run_cli, tmp_path, damage: str
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(known_store.path, copy)
    if damage == "remove":
        shutil.rmtree(copy / "index")
    else:
        first = sorted((copy / "index").iterdir())[0]
        first.write_bytes(first.read_bytes()[:100])
    status, out, err = run_cli("query", copy, "--key", "hot", "--columns", "commitLogOffset")
    assert status == 0
    assert offsets(out) == known_store.with_key("hot")
    assert ("index cannot answer" in err and "scanning instead" in err) == (damage == "truncate")


def test_query_notes_are_silenced_through_logging(known_store: KnownStore, run_cli, tmp_path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(known_store.path, copy)
    first = sorted((copy / "index").iterdir())[0]
    first.write_bytes(first.read_bytes()[:100])
    logger = logging.getLogger("rmqstore")
    logger.setLevel(logging.ERROR)
    try:
        status, out, err = run_cli("query", copy, "--key", "hot", "--columns", "commitLogOffset")
    finally:
        logger.setLevel(logging.NOTSET)
    assert status == 0 and offsets(out) == known_store.with_key("hot")
    assert "scanning instead" not in err and err.strip() == f"{len(known_store.with_key('hot'))} messages"


def test_query_key_finds_rollback_records_and_says_once_that_it_built_the_side_index(
        tmp_path: Path, run_cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    with StoreWriter(tmp_path / "store", segment_size=4096, seed=3) as writer:
        writer.declare_topic("T", 1)
        written = [writer.append(MessageSpec(topic="T", body=b"x" * 50, keys=f"k{i} shared",
                                             transaction=TRANSACTION_ROLLBACK if i % 4 == 1 else 0))
                   for i in range(40)]
    status, out, err = run_cli("query", tmp_path / "store", "--key", "k5")
    assert status == 0 and offsets(out) == [written[5].physical_offset]  # only a ROLLBACK record has k5
    assert err.count("built a side index") == 1
    _, out, err = run_cli("query", tmp_path / "store", "--key", "shared")
    assert offsets(out) == [w.physical_offset for w in written] and "side index" not in err
