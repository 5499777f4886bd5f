"""The walk for the log's end starts at the last record the broker indexed on both engines (COMMON
walk-start rule: python/rmqstore/store/commitlog.py `CommitLog.end`, connector store/CommitLog.scala):
the same rows when the walk starts at E, when the active segment is damaged before E (an error naming
file and offset in FAILFAST, the record skipped in PERMISSIVE) and when the record at E is invalid
(the walk starts at the segment's start, and the damage before E ends the log)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.store_builder import StoreBuilder, fill

pytestmark = pytest.mark.spark
SEG = 1 << 20


def _store(tmp_path: Path, *, unindexed: int = 0) -> tuple[StoreBuilder, list]:
    """One 1 MiB segment (plus the pre-allocated one): 400 keyed records, then `unindexed` records
    without keys (past the index's end, E). Not yet finished."""
    b = StoreBuilder(str(tmp_path / "store"), segment_size=SEG)
    written = fill(b, 400)
    written += [b.append("TopicA", b"u" * 40) for _ in range(unindexed)]
    return b, written


def _last_indexed(b: StoreBuilder) -> int:
    return b.index_files[-1].header.end_phy_offset


def _damage(b: StoreBuilder, record) -> None:
    """A bad MAGICCODE (and TOTALSIZE) at the record's start."""
    b.segments[0][record.offset : record.offset + 8] = b"\xde\xad\xbe\xef" * 2


def _offsets(spark, fmt: str, root: str, **options: str) -> list[int]:
    df = spark.read.format(fmt).options(**options).load(root)
    return sorted(r.commitLogOffset for r in df.select("commitLogOffset").collect())


def test_a_walk_from_e_finds_the_end_past_the_index(spark, engine_format: str, tmp_path: Path) -> None:
    b, written = _store(tmp_path, unindexed=3)
    assert _last_indexed(b) == written[-4].offset
    root = b.finish()
    assert _offsets(spark, engine_format, root) == [w.offset for w in written]


def test_damage_before_e_in_the_active_segment_is_reported_not_the_end(spark, engine_format: str,
                                                                      tmp_path: Path) -> None:
    b, written = _store(tmp_path)
    victim = written[-50]
    _damage(b, victim)
    root = b.finish()
    named = f"{0:020d}: at physical offset {victim.offset}: invalid record"
    with pytest.raises(Exception, match=named):
        _offsets(spark, engine_format, root)
    got = _offsets(spark, engine_format, root, mode="PERMISSIVE")
    assert got == [w.offset for w in written if w is not victim]


def test_an_invalid_record_at_e_starts_the_walk_at_the_segment_start(spark, engine_format: str,
                                                                      tmp_path: Path) -> None:
    """The index outlived lost log pages (its last three records are zeros): walked from the start, the
    walk stops at the damage before E; without `abort` the valid records after it make it damage, not
    the end (damage.md §2): FAILFAST names it, PERMISSIVE skips it and ends before the lost pages."""
    b, written = _store(tmp_path)
    first_lost, victim = written[-3], written[-50]
    end = written[-1].offset + written[-1].size
    b.segments[0][first_lost.offset : end] = bytes(end - first_lost.offset)
    _damage(b, victim)
    root = b.finish()
    with pytest.raises(Exception, match=f"{0:020d}: at physical offset {victim.offset}: invalid record"):
        _offsets(spark, engine_format, root)
    got = _offsets(spark, engine_format, root, mode="PERMISSIVE")
    assert got == [w.offset for w in written[:-3] if w is not victim]
