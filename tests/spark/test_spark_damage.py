"""Compressed bodies through Spark on both engines: empty stored bodies, the `maxMessageSize` cap,
PERMISSIVE counts."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import zstandard

from helpers.spark_stores import read_stats
from rmqstore.format.compression import PARALLEL_MIN_BYTES, compressed_sys_flag
from rmqstore.format.layout import COMPRESSION_LZ4, COMPRESSION_ZLIB, COMPRESSION_ZSTD, TRANSACTION_ROLLBACK
from rmqstore.store import Store
from rmqstore.writer import MessageSpec, StoreWriter

pytestmark = pytest.mark.spark
BIG = bytes(100_000)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, write_raw_log) -> tuple[Path, list[int]]:
    """Plain records, four ROLLBACKs with compression bits 0-3 and no body, and a zstd body of
    100,000 zeros: (store, offsets)."""
    rollback = [(b"", compressed_sys_flag(kind) | TRANSACTION_ROLLBACK) for kind in range(4)]
    zstd = compressed_sys_flag(COMPRESSION_ZSTD)
    root = tmp_path_factory.mktemp("spark-damage") / "store"
    specs = [(b"plain", 0), *rollback, (zstandard.ZstdCompressor().compress(BIG), zstd), (b"last", 0)]
    return root, write_raw_log(root, specs)


def _bodies(spark, root: Path, source: str, **options: str) -> dict[int, bytes]:
    df = spark.read.format(source).options(**options).load(str(root))
    return {r.commitLogOffset: bytes(r.body) for r in df.select("commitLogOffset", "body").collect()}


def test_body_column(spark, engine_format: str, store, stats_dir: Path) -> None:
    root, offsets = store
    bodies = [b"plain", b"", b"", b"", b"", BIG, b"last"]
    assert _bodies(spark, root, engine_format) == dict(zip(offsets, bodies, strict=True))
    got = _bodies(spark, root, engine_format, maxMessageSize="99999", mode="PERMISSIVE",
                  statsDir=str(stats_dir))
    del bodies[5]
    assert got == dict(zip(offsets[:5] + offsets[6:], bodies, strict=True))
    reads = [r for r in read_stats(stats_dir) if r["event"] == "read"]
    assert sum(r["invalid_records_skipped"] for r in reads) == 1
    assert sum(r["bytes_skipped"] for r in reads) == offsets[6] - offsets[5]
    named = f"{0:020d}: at physical offset {offsets[5]}: .*inflates past 99999 bytes"
    with pytest.raises(Exception, match=named):
        _bodies(spark, root, engine_format, maxMessageSize="99999")


def test_bodies_decompressed_on_threads_in_a_worker(spark, tmp_path: Path) -> None:
    """A partition with ~460 KB of zlib, LZ4 and zstd bodies: decompressed on the pool inside
    Spark's forked Python worker (on a machine with more than one core), the same bodies as the
    calling thread alone reads."""
    rnd = random.Random(4)
    root = tmp_path / "store"
    with StoreWriter(root, segment_size=1 << 20) as writer:
        for i in range(150):
            body = (rnd.randbytes(3000) + b"payment-%06d " % i * 300)[:6000]
            writer.append(MessageSpec("TopicZ", body, compression=(COMPRESSION_ZLIB, COMPRESSION_LZ4,
                                                                   COMPRESSION_ZSTD)[i % 3]))
    with Store.open(root, decompress_threads=1) as store:
        want = {o: b for batch in store.scan(columns=["commitLogOffset", "body"])
                for o, b in zip(batch.column("commitLogOffset").to_pylist(), batch.column("body").to_pylist(),
                                strict=True)}
        stored = sum(len(b) for batch in store.scan(columns=["body"], decompress=False)
                     for b in batch.column("body").to_pylist())
    assert len(want) == 150 and stored > PARALLEL_MIN_BYTES
    assert _bodies(spark, root, "rmqstore_python") == want  # the Python engine's decompression pool
