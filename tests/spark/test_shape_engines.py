"""Store shapes (docs/format.md §1.6) through Spark on both engines: a DLedger log (§2.13) reads like the
commit log it replaces, and what rmqstore cannot read (DLedger streams) fails naming the feature instead
of returning rows from a misread layout."""

from __future__ import annotations

from pathlib import Path

import pytest

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


