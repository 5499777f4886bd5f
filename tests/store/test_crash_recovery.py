"""With an `abort` file the log ends where RocketMQ's abnormal recovery ends (§6.3): the walk starts at the
segment the checkpoint's getMinTimestamp() picks, checks every record from there and stops at the first
invalid one, never at the index's end. Without `abort` the walk-start rule is unchanged."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers.crash_store import lost_page_crash_copy
from helpers.store_builder import StoreBuilder, fill
from rmqstore.format.checkpoint import Checkpoint, encode_checkpoint
from rmqstore.store import Store, StoreCorruptionError
from rmqstore.store.commitlog import AfterEnd


def _offsets(store: Store, **kwargs) -> list[int]:
    """Every record a scan returns, BODYCRC checked (Spark's default `verifyCrc`)."""
    return [o for b in store.scan(columns=["commitLogOffset"], check_crc=True, **kwargs)
            for o in b.column(0).to_pylist()]


def test_a_lost_page_ends_a_crash_copy_at_its_record(tmp_path: Path) -> None:
    lost = lost_page_crash_copy(tmp_path / "s")
    store = Store.open(lost.root)
    assert store.abort_present
    assert store.max_offset == lost.damaged.physical_offset
    assert "recovery after a crash" in store.log_end.reason and "BODYCRC" in store.log_end.reason
    assert _offsets(store) == [r.physical_offset for r in lost.kept]  # FAILFAST: no error
    after = [r.physical_offset for r in lost.after]
    assert store.read_offsets(after, ["commitLogOffset"], strict=False).num_rows == 0
    assert store.log.after_end() == AfterEnd(lost.damaged.physical_offset, 3,
                                             sum(r.store_size for r in lost.after), after[0])
    assert store.log.after_end().describe() == (
        f"3 records, {sum(r.store_size for r in lost.after)} bytes after the recovered end "
        f"{lost.damaged.physical_offset} (the first at {after[0]}), which a restarted broker would overwrite")


def test_without_abort_the_walk_starts_at_the_index_end(tmp_path: Path) -> None:
    """The same bytes after a clean shutdown: the walk-start rule (E) ends the log at the torn tail, and the
    damaged record is reported when read (FAILFAST) or skipped (PERMISSIVE)."""
    lost = lost_page_crash_copy(tmp_path / "s")
    os.remove(os.path.join(lost.root, "abort"))
    store = Store.open(lost.root)
    assert store.max_offset == lost.after[-1].physical_offset + lost.after[-1].store_size
    with pytest.raises(StoreCorruptionError, match=f"at physical offset {lost.damaged.physical_offset}"):
        _offsets(store)
    assert _offsets(store, mode="PERMISSIVE") == [r.physical_offset for r in lost.kept + lost.after]
    assert store.log.after_end().records == 0


def _crash_copy(tmp_path: Path, *, min_timestamp: int | None) -> tuple[StoreBuilder, list]:
    """Three 2 KiB segments, `abort`, a checkpoint whose getMinTimestamp() is `min_timestamp` (None: no
    checkpoint), and a bad MAGICCODE at the second record of the second segment."""
    b = StoreBuilder(str(tmp_path / "store"), segment_size=2048)
    written = fill(b, 40)
    assert b.cursor > 2 * 2048
    victim = [w for w in written if 2048 <= w.offset < 4096][1]
    b.segments[2048][victim.offset - 2048 : victim.offset - 2048 + 8] = b"\xde\xad\xbe\xef" * 2
    os.makedirs(b.root)
    open(os.path.join(b.root, "abort"), "w").close()
    if min_timestamp is not None:
        ts = min_timestamp + 3000
        with open(os.path.join(b.root, "checkpoint"), "wb") as fh:
            fh.write(encode_checkpoint(Checkpoint(ts, ts, 0)))
    b.finish(checkpoint=False)
    return b, written


def _first_in(written: list, base: int):
    return next(w for w in written if w.offset >= base)


@pytest.mark.parametrize("start", ["segment 0", "segment 1", "no checkpoint"])
def test_damage_after_the_recovery_start_ends_the_log(tmp_path: Path, start: str) -> None:
    """Recovery starts at the last segment whose first record is stored no later than getMinTimestamp()
    (the first segment without one): damage in or after that segment ends the log."""
    b = StoreBuilder(str(tmp_path / "probe"), segment_size=2048)
    probe = fill(b, 40)
    times = {"segment 0": probe[0].store_ts, "segment 1": _first_in(probe, 2048).store_ts}
    b, written = _crash_copy(tmp_path, min_timestamp=times.get(start))
    victim = [w for w in written if 2048 <= w.offset < 4096][1]
    store = Store.open(b.root)
    assert store.max_offset == victim.offset
    assert f"from {b.commitlog_path(2048 if start == 'segment 1' else 0)}" in store.log_end.reason
    assert _offsets(store) == [w.offset for w in written if w.offset < victim.offset]
    assert store.log.after_end().records == len([w for w in written if w.offset > victim.offset])


def test_damage_before_the_recovery_start_does_not_end_the_log(tmp_path: Path) -> None:
    """Recovery from the third segment never sees the damage in the second: the log ends after the last
    record, and reading reports the damage (FAILFAST) or steps over it (PERMISSIVE)."""
    b = StoreBuilder(str(tmp_path / "probe"), segment_size=2048)
    third = _first_in(fill(b, 40), 4096).store_ts
    b, written = _crash_copy(tmp_path, min_timestamp=third)
    victim = [w for w in written if 2048 <= w.offset < 4096][1]
    store = Store.open(b.root)
    assert store.max_offset == b.cursor
    assert f"from {b.commitlog_path(4096)}" in store.log_end.reason
    with pytest.raises(StoreCorruptionError, match=f"at physical offset {victim.offset}"):
        _offsets(store)
    assert _offsets(store, mode="PERMISSIVE") == [w.offset for w in written if w is not victim]
    assert store.log.after_end().records == 0


def test_a_recovery_walk_resumes_where_one_ended_never_where_a_walk_from_e_did(tmp_path: Path) -> None:
    lost = lost_page_crash_copy(tmp_path / "s")
    abort = os.path.join(lost.root, "abort")
    os.rename(abort, abort + ".away")
    then = os.stat(lost.root).st_mtime - 60  # files the broker last wrote a while ago (`logend` RACY_NS)
    for name in os.listdir(os.path.join(lost.root, "commitlog")):
        os.utime(os.path.join(lost.root, "commitlog", name), (then, then))
    clean = Store.open(lost.root)  # from E: past the damaged record, and remembered
    assert clean.max_offset == lost.after[-1].physical_offset + lost.after[-1].store_size
    os.rename(abort + ".away", abort)
    first = Store.open(lost.root)
    assert first.max_offset == lost.damaged.physical_offset
    assert first.stats.records_walked == len(lost.kept)
    again = Store.open(lost.root)  # resumes in each segment: only the damaged record is looked at
    assert again.max_offset == lost.damaged.physical_offset and again.stats.records_walked == 0
