"""`LIMIT n` without ORDER BY on the JVM engine (SupportsPushDownLimit, README "Pushdown"): a read task's
scan stops at its n-th row; Spark applies the limit again. With `pushdown=false` Spark stops pulling after
the first batch, a whole scan chunk (RmqColumnarReader.ScanChunkBytes, 4 MiB); the Python engine returns as
many rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.spark_stores import explain_text, read_stats
from rmqstore.writer import MessageSpec, StoreWriter

pytestmark = pytest.mark.spark
MESSAGES = 3000


@pytest.fixture(scope="module")
def nine_mib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3000 messages of 3 KB: about 9 MiB of log in one segment, one read task of three scan chunks."""
    root = tmp_path_factory.mktemp("limit") / "store"
    with StoreWriter(root, segment_size=16 << 20, cq_segment_size=20 * 1024, index_hash_slots=64,
                     index_entries=4000, seed=3) as writer:
        writer.declare_topic("T", 2)
        for i in range(MESSAGES):
            writer.append(MessageSpec("T", b"%04d" % i * 750))
    return root


def test_limit_stops_the_read_task(spark, engine_format, nine_mib, tmp_path) -> None:
    def decoded(**options: str) -> tuple[int, int, str]:
        stats = tmp_path / str(len(list(tmp_path.iterdir())))
        reader = spark.read.format(engine_format).options(statsDir=str(stats), **options)
        df = reader.load(str(nine_mib)).limit(5)
        rows = df.select("queueOffset").collect()
        reads = [r for r in read_stats(stats) if r["event"] == "read"]
        return len(rows), sum(r["records_decoded"] for r in reads), explain_text(df)

    count, records, plan = decoded()
    assert count == 5
    if "rmqstore_python" not in engine_format:
        assert "PushedLimit: 5" in plan
        assert records == 5
        count, records, plan = decoded(pushdown="false")
        assert count == 5 and records > 1000 and "PushedLimit" not in plan
