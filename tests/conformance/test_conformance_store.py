"""rmqstore.Store against stores written by real RocketMQ and RocketMQ's own answers (oracle.json).

Fixtures and oracle fields: tests/conformance/README.md. Regenerate/check them with
tests/conformance/regenerate.sh (needs the JVM; these tests only read the committed files).
"""

from __future__ import annotations

import pytest
from oracle import (
    CRASH,
    MAIN,
    ORACLES,
    expected_row,
    index_queries,
    msg_id_queries,
    open_store,
    records,
    table_row,
)

from rmqstore.plan.lookup import find_by_key, find_by_msg_id, find_by_uniq_key


def test_fixtures_present() -> None:
    assert MAIN and CRASH, "no conformance fixtures under tests/conformance/fixtures"


@pytest.mark.parametrize("name", MAIN)
def test_every_record_matches_message_decoder(name: str) -> None:
    with open_store(name) as store:
        rows = [table_row(r) for batch in store.scan() for r in batch.to_pylist()]
    expected = [expected_row(r) for r in records(name)]
    assert [r["commitLogOffset"] for r in rows] == [r["commitLogOffset"] for r in expected]
    for actual, wanted in zip(rows, expected, strict=True):
        assert actual == wanted, f"record at {wanted['commitLogOffset']}"


@pytest.mark.parametrize("name", MAIN)
def test_log_bounds_match_recovery(name: str) -> None:
    oracle = ORACLES[name]
    with open_store(name) as store:
        assert store.min_offset == oracle["minPhyOffset"]
        assert store.max_offset == oracle["recoveredMaxPhyOffset"] == oracle["maxPhyOffset"]
        assert store.abort_present == oracle["abortPresent"]


@pytest.mark.parametrize("name", MAIN)
def test_key_and_uniq_key_queries_match_rocketmq(name: str) -> None:
    with open_store(name) as store:
        for query in index_queries(name):
            finder = find_by_key if query.kind == "key" else find_by_uniq_key
            # RocketMQ repeats an offset per matching index entry (e.g. KEYS "dup dup"); we do not.
            query.check(finder(store, query.key, topics=[query.topic]))


@pytest.mark.parametrize("name", MAIN)
def test_msg_id_queries_match_rocketmq(name: str) -> None:
    with open_store(name) as store:
        for query in msg_id_queries(name):
            expected = [] if query.offset is None else [query.offset]
            assert find_by_msg_id(store, query.msg_id) == expected, query.msg_id


@pytest.mark.parametrize("name", MAIN)
def test_consumer_offsets_match_persisted_json(name: str) -> None:
    expected = {
        tuple(topic_group.split("@", 1)): {int(q): offset for q, offset in offsets.items()}
        for topic_group, offsets in ORACLES[name]["consumerOffsets"].items()
    }
    with open_store(name) as store:
        assert store.consumer_offsets() == expected


@pytest.mark.parametrize("name", CRASH)
def test_crash_copy_valid_end_matches_recovery(name: str) -> None:
    oracle = ORACLES[name]
    with open_store(name) as store:
        assert store.abort_present is True
        assert store.max_offset == oracle["recoveredMaxPhyOffset"] == oracle["tornRecordOffset"]
        batches = store.scan(columns=["commitLogOffset"])
        offsets = [r["commitLogOffset"] for batch in batches for r in batch.to_pylist()]
    assert offsets == [r["commitLogOffset"] for r in records(name)]
