"""Store shapes (docs/format.md §1.6) through Spark on both engines: a DLedger log (§2.13) reads like the
commit log it replaces, and what rmqstore cannot read (DLedger streams, RocksDB consume queues) fails
naming the feature instead of returning rows from a misread layout."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from chispa import assert_df_equality

FIXTURES = Path(__file__).parents[1] / "conformance" / "fixtures"
DEFAULT = FIXTURES / "rmq-5.5.0" / "store"
DLEDGER = FIXTURES / "rmq-5.4.0-dledger" / "store"
COLUMNS = ["commitLogOffset", "topic", "queueId", "queueOffset", "msgId", "body"]

pytestmark = pytest.mark.spark


def test_a_dledger_stream_is_refused_by_name(spark, engine_format, tmp_path):
    query = None
    with pytest.raises(Exception) as failure:  # at start() or from the query thread, by engine
        query = (spark.readStream.format(engine_format).load(str(DLEDGER)).writeStream.format("noop")
                 .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
        query.awaitTermination(120)
        raise AssertionError(f"the stream ran: {query.exception()}")
    if query is not None:
        query.stop()
    assert "DLedger commit log (dledger-n0/data/): streaming refused" in str(failure.value)


def test_rocksdb_consume_queues_refuse_group_offsets_while_the_log_reads(spark, engine_format, tmp_path):
    root = tmp_path / "store"
    shutil.copytree(DEFAULT, root)
    shutil.rmtree(root / "consumequeue")
    (root / "consumequeue").mkdir()
    for name in ("CURRENT", "IDENTITY", "MANIFEST-000005", "000009.sst"):
        (root / "consumequeue" / name).write_bytes(b"rocksdb")
    read = spark.read.format(engine_format).option("pushdown", "false")
    assert_df_equality(read.load(str(root)).select(*COLUMNS), read.load(str(DEFAULT)).select(*COLUMNS),
                       ignore_row_order=True)
    with pytest.raises(Exception, match=r"RocksDB consume queue \(consumequeue/ is a RocksDB database"):
        spark.read.format(engine_format).option("startingOffsets", "group:group-a").load(str(root)).count()
