"""Cold reads (issue 22 item 1): a key lookup on a store whose pages were dropped from the page cache
brings in the pages of what it reads and no more, on both engines: its point and planning reads (the
walk for the log's end, the side index's holes, index probes, the record) are positioned reads or
random-advised maps, not page faults in a map, each of which reads the read-ahead window around it
(128 KiB by default, megabytes on cloud volumes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import functions as F

from helpers.page_cache import drop_store_cache, page_cache_droppable, resident_bytes, store_files
from helpers.side_index_stores import write_keyed_store

RECORDS = 6_000
"""About 4.4 MiB of log in 512 KiB segments (`write_keyed_store`)."""
KEY = "k3001 g1"
"""Record 3001 only (an indexed one: not a ROLLBACK record)."""
LOOKUP_BYTES = 192 << 10
"""What the lookup reads (about 30 KiB of log, 13 pages) with room for the read-ahead that reading a
segment's first page starts on the JVM (which cannot advise a file random: about 30 pages more), less
than 5 % of the log: through a map, each page fault read a read-ahead window (at least 128 KiB)."""


@pytest.fixture(scope="module")
def keyed_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cold-reads") / "store"
    write_keyed_store(path, RECORDS)
    return path


def test_a_cold_key_lookup_brings_in_only_the_pages_it_reads(spark, engine_format: str,
                                                             keyed_store: Path) -> None:
    def lookup():
        return (spark.read.format(engine_format).load(str(keyed_store)).where(F.col("key") == KEY)
                .select("commitLogOffset", "key"))

    expected = lookup().collect()  # builds once what the lookup needs (side index, coverage)
    assert [r.key for r in expected] == [KEY]
    if not page_cache_droppable(keyed_store):
        pytest.skip("this file system keeps its files in memory (tmpfs): no page cache to drop")
    drop_store_cache(keyed_store, spark)
    cold = lookup()
    assert_df_equality(cold, spark.createDataFrame(expected, cold.schema))
    resident = resident_bytes(store_files(keyed_store / "commitlog"))
    assert 0 < resident <= LOOKUP_BYTES, f"{resident} bytes of the log brought into memory"
