"""One way to read (#9 item 6): `rmqstore.plan.lookup.find_by_key`, `rmqstore query --key` and the
Python source's `keys` option are one planned read, so they return the same records on a
ROLLBACK-heavy store and on one whose newest index file was deleted, and read the same things: an
index probe, then only the candidate records (the Spark tasks decode exactly the records the lookup
decodes; a key of one record reads under 1% of the log)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from helpers.side_index_stores import (
    bytes_read_per_file,
    copy_store,
    delete_index_file,
    expected_offsets,
    log_bytes,
    log_size,
    scanned_rows,
    write_keyed_store,
)
from helpers.spark_stores import read_stats
from rmqstore.cli import main
from rmqstore.plan.lookup import find, key_predicates
from rmqstore.store import Store

RECORDS = 3_000
KEYS = ["k7", "k2977", "g7", "k8", "absent"]
"""k7 and k2977 are on ROLLBACK records only (every 30th from the 7th), g7 on 60 records some of
them ROLLBACK, k8 on one indexed record."""


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("one-read")
    rollback_heavy = root / "rollback-heavy"
    write_keyed_store(rollback_heavy, RECORDS, segment_size=256 << 10, index_entries=1_500)
    deleted = copy_store(rollback_heavy, root / "newest-index-deleted")
    delete_index_file(deleted, -1)
    return {"rollback-heavy": rollback_heavy, "newest-index-deleted": deleted}


@pytest.mark.parametrize("kind", ["rollback-heavy", "newest-index-deleted"])
def test_store_cli_and_keys_option_agree_and_read_the_same(spark: SparkSession, stores: dict[str, Path],
                                                          kind: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = stores[kind]
    rows, size = scanned_rows(path), log_size(path)
    with Store.open(path) as store:
        assert store.unindexed_ranges()  # ROLLBACK records the broker's index lacks
        store.side_index()  # built once (cached outside the store): the reads below only probe it
    with Store.open(path) as store, bytes_read_per_file() as counted:
        assert store.max_offset  # every open store finds its valid end first (walks the last segment)
    end_walk = log_bytes(counted)
    for key in KEYS:
        expected = expected_offsets(rows, "keys", key)
        assert (expected != []) == (key != "absent")

        with Store.open(path) as store:
            assert store.max_offset
            with bytes_read_per_file() as counted:
                found = find(store, key_predicates(key))
            decoded = store.stats.records_decoded
        assert found.offsets == expected, (kind, key)
        assert found.plan.access == ["key-index"] and decoded == len(expected)
        found_bytes = log_bytes(counted)
        assert found_bytes < 0.01 * size or key == "g7"  # g7's 60 records are 2% of the log

        with bytes_read_per_file() as counted:
            status = main(["query", str(path), "--key", key, "--columns", "commitLogOffset", "--no-progress"])
        out, err = capsys.readouterr()
        assert status == 0 and "scanning instead" not in err
        assert [json.loads(line)["commitLogOffset"] for line in out.splitlines()] == expected, (kind, key)
        # its valid-end walk, then the records twice (find and confirm, then print): nothing else
        assert log_bytes(counted) <= end_walk + 2 * found_bytes

        stats_dir = tmp_path / key
        got = sorted(r.commitLogOffset for r in spark.read.format("rmqstore_python")
                     .option("keys", key).option("statsDir", str(stats_dir)).load(str(path))
                     .select("commitLogOffset").collect())
        assert got == expected, (kind, key)
        stats = read_stats(stats_dir)
        plans = [s for s in stats if s["event"] == "plan"]
        assert [p["access"] for p in plans] == [["key-index"]] and plans[0]["range_bytes"] == 0
        assert sum(s["records_decoded"] for s in stats if s["event"] == "read") == decoded
