"""Independent, brute-force readers for checking what the writer wrote.

They use only the format layer's scalar functions (no Store): a recovery-style walk of the commit
log with CRC checks (§2.12), the consume-queue rebuild rule of §4.1 and the index key rule of §5.4.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rmqstore.format.consumequeue import parse_units, record_tags_code, valid_unit_count
from rmqstore.format.indexfile import IndexFileView, index_key
from rmqstore.format.layout import (
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_COMMIT,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK,
)
from rmqstore.format.record import MessageRecord, check_record, decode_record


def segment_paths(store: Path) -> list[Path]:
    return sorted((store / "commitlog").iterdir())


def walk_log(store: Path) -> tuple[list[MessageRecord], list[tuple[int, int]], int]:
    """(records, BLANKs as (physical offset, size), end offset) of a recovery-style walk (§2.12).

    Every record's CRC and PHYSICALOFFSET field are checked; the walk stops at the first invalid record.
    """
    records: list[MessageRecord] = []
    blanks: list[tuple[int, int]] = []
    for path in segment_paths(store):
        base = int(path.name)
        data = path.read_bytes()
        pos = 0
        while True:
            check = check_record(data, pos, check_crc=True, expected_physical_offset=base + pos)
            if check.kind == "blank":
                blanks.append((base + pos, check.size))
                assert pos + check.size == len(data), f"BLANK at {base + pos} does not cover the segment rest"
                break
            if check.kind == "invalid":
                return records, blanks, base + pos
            records.append(decode_record(data, pos))
            pos += check.size
    raise AssertionError("the commit log ended without an invalid record or zero tail")


def has_queue_offset(record: MessageRecord) -> bool:
    return record.sys_flag & SYSFLAG_TRANSACTION_MASK in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT)


def expected_units(records: list[MessageRecord]) -> dict[tuple[str, int], list[tuple[int, int, int]]]:
    """Consume queues rebuilt from the commit log alone (§4.1)."""
    queues: dict[tuple[str, int], dict[int, tuple[int, int, int]]] = {}
    for r in records:
        if has_queue_offset(r):
            unit = (
                r.commit_log_offset,
                r.store_size,
                record_tags_code(r.topic, r.properties, r.store_timestamp),
            )
            queue = queues.setdefault((r.topic, r.queue_id), {})
            assert r.queue_offset not in queue, (
                f"queue offset {r.queue_offset} used twice in {r.topic}/{r.queue_id}"
            )
            queue[r.queue_offset] = unit
    result = {}
    for queue, units in queues.items():
        assert sorted(units) == list(range(len(units))), f"queue {queue} has gaps"
        result[queue] = [units[i] for i in range(len(units))]
    return result


def written_units(store: Path) -> dict[tuple[str, int], list[tuple[int, int, int]]]:
    """Units in the consume-queue files, up to the first invalid unit (§4.3)."""
    result = {}
    root = store / "consumequeue"
    for topic_dir in sorted(root.iterdir()):
        for queue_dir in sorted(topic_dir.iterdir()):
            data = b"".join(p.read_bytes() for p in sorted(queue_dir.iterdir()))
            units = parse_units(data)
            units = units[: valid_unit_count(units)]
            result[(topic_dir.name, int(queue_dir.name))] = [
                (int(u["phy"]), int(u["size"]), int(u["tags_code"])) for u in units
            ]
    return result


def expected_index_keys(records: list[MessageRecord]) -> list[tuple[str, int]]:
    """(topic#key, physical offset) for every key a broker indexes, in dispatch order (§5.4)."""
    keys = []
    for r in records:
        if r.sys_flag & SYSFLAG_TRANSACTION_MASK == TRANSACTION_ROLLBACK:
            continue
        if r.uniq_key is not None:
            keys.append((index_key(r.topic, r.uniq_key), r.commit_log_offset))
        keys.extend((index_key(r.topic, token), r.commit_log_offset) for token in r.keys or ())
    return keys


def index_views(store: Path, hash_slots: int, index_entries: int) -> list[tuple[str, IndexFileView]]:
    return [
        (path.name, IndexFileView(path.read_bytes(), hash_slots, index_entries))
        for path in sorted((store / "index").iterdir())
    ]


def all_entries(views: list[tuple[str, IndexFileView]]) -> np.ndarray:
    return np.concatenate([view.entries() for _, view in views]) if views else np.array([])
