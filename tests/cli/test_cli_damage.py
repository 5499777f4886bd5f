"""`rmqstore dump` and `verify` on damaged stores: empty compressed bodies, garbage inside a segment."""

from __future__ import annotations

import base64
import json
import random
import shutil
from pathlib import Path

import pytest
from cli_helpers import GEOMETRY_ARG, KnownStore, Stored, jsonl

from rmqstore.format.compression import compressed_sys_flag
from rmqstore.format.layout import TRANSACTION_ROLLBACK

SEGMENT = 8192


def test_dump_empty_compressed_bodies(tmp_path: Path, run_cli, write_raw_log) -> None:
    """ROLLBACK records with the compression bits and no body (older end-transaction path) between
    ordinary ones: every record comes out, the empty bodies as empty."""
    rollback = [(b"", compressed_sys_flag(kind) | TRANSACTION_ROLLBACK) for kind in range(4)]
    offsets = write_raw_log(tmp_path / "s", [(b"first", 0), *rollback, (b"last", 0)])
    status, out, err = run_cli("dump", tmp_path / "s", "--columns", "commitLogOffset,body", "--no-progress")
    assert status == 0, err
    rows = jsonl(out)
    assert [r["commitLogOffset"] for r in rows] == offsets
    assert [base64.b64decode(r["body"]) for r in rows] == [b"first", b"", b"", b"", b"", b"last"]


@pytest.fixture
def garbled(known_store: KnownStore, tmp_path: Path) -> tuple[Path, Stored, list[Stored]]:
    """A copy of the known store with 2000 random bytes in segment 0 from 20 bytes into record 5:
    (copy, that record, the records lost)."""
    copy = tmp_path / "copy"
    shutil.copytree(known_store.path, copy)
    victim = known_store.records[5]
    g0, g1 = victim.offset + 20, victim.offset + 2020
    assert g1 < SEGMENT < known_store.records[-1].offset
    segment = copy / "commitlog" / f"{0:020d}"
    data = bytearray(segment.read_bytes())
    data[g0:g1] = random.Random(3).randbytes(g1 - g0)
    segment.write_bytes(bytes(data))
    return copy, victim, [r for r in known_store.records if victim.offset <= r.offset < g1]


def test_dump_permissive_steps_over_garbage(known_store: KnownStore, garbled, run_cli) -> None:
    copy, victim, lost = garbled
    status, out, err = run_cli("dump", copy, "--columns", "commitLogOffset", "--no-progress")
    assert status == 2 and f"{0:020d}: at physical offset {victim.offset}: invalid record" in err
    status, out, err = run_cli("dump", copy, "--permissive", "--columns", "commitLogOffset", "--no-progress")
    assert status == 0
    kept = [r.offset for r in known_store.records if r not in lost]
    assert [r["commitLogOffset"] for r in jsonl(out)] == kept
    resume = known_store.records[known_store.records.index(lost[-1]) + 1].offset
    (line,) = [line for line in err.splitlines() if "PERMISSIVE" in line]
    segment = copy / "commitlog" / f"{0:020d}"
    assert line.startswith(f"rmqstore: PERMISSIVE skipped 1 damaged record(s), {resume - victim.offset} "
                           f"bytes; first at {segment} physical offset {victim.offset}")


def test_verify_groups_consequences_under_the_damage(known_store: KnownStore, garbled, run_cli) -> None:
    copy, victim, lost = garbled
    status, out, _ = run_cli("verify", copy, "--json", "--no-progress", "--index-geometry", GEOMETRY_ARG)
    report = json.loads(out)
    assert status == 1
    assert report["errors"] == {"commit log": 1}, report["errorExamples"]
    (cause,) = report["errorExamples"]["commit log"]
    entries = sum(1 + len(r.keys) for r in lost)
    assert f"at physical offset {victim.offset}: invalid record" in cause
    assert cause.endswith(f"pointing into it: {len(lost)} consume-queue units, 1 gap in the record sequence, "
                          f"{entries} index entries"), cause
    assert report["counts"]["records"] == len(known_store.records) - len(lost)


def test_verify_names_an_invalid_unit_that_valid_units_follow(known_store: KnownStore, tmp_path: Path,
                                                              run_cli) -> None:
    """docs/damage.md §2: a zeroed consume-queue unit with valid units after it is named as such (and its
    record as having no unit), not taken for the queue's end."""
    copy = tmp_path / "copy"
    shutil.copytree(known_store.path, copy)
    topic = known_store.records[0].topic
    cq = copy / "consumequeue" / topic / "0" / f"{0:020d}"
    data = bytearray(cq.read_bytes())
    assert data[40:60] != bytes(20), "the queue needs a valid unit after the zeroed one"
    data[20:40] = bytes(20)
    cq.write_bytes(bytes(data))
    status, out, _ = run_cli("verify", copy, "--json", "--no-progress", "--index-geometry", GEOMETRY_ARG)
    report = json.loads(out)
    assert status == 1 and report["errors"]["consume queues"] == 2, report["errorExamples"]
    assert (f"{topic}/0 offset 1: unit (0, 0, 0) is invalid and valid units follow it (damage.md §2)"
            in report["errorExamples"]["consume queues"])
