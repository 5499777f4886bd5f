"""`rmqstore verify`: 0 for a sound store, 1 for a corrupted copy (the original is never touched)."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import GEOMETRY_ARG, SLOTS, KnownStore

from rmqstore.writer import MessageSpec, StoreWriter

SEGMENT = 8192


def tree_digest(path: Path) -> str:
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode() + file.read_bytes())
    return digest.hexdigest()


def patch(path: Path, position: int, change: Callable[[bytes], bytes], length: int = 1) -> None:
    data = bytearray(path.read_bytes())
    data[position : position + length] = change(bytes(data[position : position + length]))
    path.write_bytes(bytes(data))


def flip(old: bytes) -> bytes:
    return bytes(b ^ 0x5A for b in old)


def verify_json(run_cli, store: Path) -> tuple[int, dict]:
    status, out, _ = run_cli("verify", store, "--json", "--no-progress", "--index-geometry", GEOMETRY_ARG)
    return status, json.loads(out)


def test_sound_store_passes(known_store: KnownStore, run_cli) -> None:
    before = tree_digest(known_store.path)
    status, report = verify_json(run_cli, known_store.path)
    assert status == 0 and report["sound"] and not report["errors"]
    assert report["counts"]["records"] == len(known_store.records)
    assert report["counts"]["indexed keys"] == report["counts"]["index entries"] > 0
    status, out, _ = run_cli("verify", known_store.path)
    assert status == 0 and "store is sound" in out
    assert tree_digest(known_store.path) == before, "verify never writes"


def _body_position(known_store: KnownStore, index: int) -> tuple[Path, int]:
    """File and position of the body of record `index` (written with IPv4 born and store hosts)."""
    offset = known_store.records[index].offset
    return known_store.path / "commitlog" / f"{offset // SEGMENT * SEGMENT:020d}", offset % SEGMENT + 88


def corrupt_body_early(store: KnownStore, copy: Path) -> None:
    path, position = _body_position(store, 12)  # segment 0, uncompressed, IPv4 born host
    patch(copy / path.relative_to(store.path), position, flip)


def corrupt_body_in_last_segment(store: KnownStore, copy: Path) -> None:
    path, position = _body_position(store, len(store.records) - 3)  # TopicB, last data segment
    assert int(path.name) > 0
    patch(copy / path.relative_to(store.path), position, flip)


def corrupt_consume_queue_size(store: KnownStore, copy: Path) -> None:
    patch(
        copy / "consumequeue" / "TopicA" / "1" / f"{0:020d}",
        2 * 20 + 8,
        lambda old: (12345).to_bytes(4, "big"),
        4,
    )


def corrupt_index_entry_offset(store: KnownStore, copy: Path) -> None:
    first_index = sorted((copy / "index").iterdir())[0]
    other = store.records[-1].offset.to_bytes(8, "big")
    patch(first_index, 40 + 4 * SLOTS + 20 + 4, lambda old: other, 8)


@pytest.mark.parametrize(
    "corrupt, check",
    [
        (corrupt_body_early, "commit log"),
        # Before the last indexed record: checked when read, like older segments' records (the walk
        # for the end starts there, commitlog module docstring), so the end stays after it.
        (corrupt_body_in_last_segment, "commit log"),
        (corrupt_consume_queue_size, "consume queues"),
        (corrupt_index_entry_offset, "index"),
    ],
)
def test_corrupted_copy_fails(known_store: KnownStore, run_cli, tmp_path: Path, corrupt, check: str) -> None:
    before = tree_digest(known_store.path)
    copy = tmp_path / "copy"
    shutil.copytree(known_store.path, copy)
    corrupt(known_store, copy)
    status, report = verify_json(run_cli, copy)
    assert status == 1 and not report["sound"]
    assert report["errors"].get(check, 0) > 0, report
    assert tree_digest(known_store.path) == before, "the original store is untouched"
    status, out, _ = run_cli("verify", copy, "--no-progress")
    assert status == 1 and "store is NOT sound" in out


def test_crashed_store_is_sound_with_a_warning(tmp_path: Path, run_cli) -> None:
    writer = StoreWriter(
        tmp_path / "s", segment_size=4096, cq_segment_size=200, index_hash_slots=SLOTS, index_entries=30
    )
    for i in range(12):
        writer.append(MessageSpec("T", b"m" * 50, keys=f"k{i}"))
    writer.close(crashed=True)
    status, report = verify_json(run_cli, tmp_path / "s")
    assert status == 0 and report["crashed"] and report["warnings"]["commit log"] == 1
    assert report["counts"]["records"] == 12
