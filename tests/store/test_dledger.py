"""A DLedger commit log (docs/format.md §2.13) damaged the ways a commit log is (§2.12): a torn or cut last
entry ends the log at that entry, a bad entry header before the end is damage (FAILFAST names it,
PERMISSIVE steps over that record only). The fixture is RocketMQ 5.4.0's DLedgerCommitLog's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rmqstore.store import PERMISSIVE, Store, StoreCorruptionError

FIXTURE = Path(__file__).parents[1] / "conformance" / "fixtures" / "rmq-5.4.0-dledger"
RECORDS = json.loads((FIXTURE / "oracle.json").read_text())["records"]
OFFSETS = [r["commitLogOffset"] for r in RECORDS]
HEADER = 48


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(FIXTURE / "store", root)
    return root


def _data_file(root: Path, offset: int) -> tuple[Path, int]:
    """The DLedger data file holding physical `offset`, and the offset's position in it."""
    files = sorted((root / "dledger-n0" / "data").iterdir())
    base = max(int(f.name) for f in files if int(f.name) <= offset)
    return root / "dledger-n0" / "data" / f"{base:020d}", offset - base


def _offsets(store: Store, **options: str) -> list[int]:
    return [o for b in store.scan(columns=["commitLogOffset"], **options) for o in b.column(0).to_pylist()]


@pytest.mark.parametrize("damage", ["torn", "cut"])
def test_a_torn_or_cut_last_entry_ends_the_log_at_that_entry(tmp_path: Path, damage: str) -> None:
    root = _copy(tmp_path)
    last = RECORDS[-1]
    path, pos = _data_file(root, last["commitLogOffset"])
    data = bytearray(path.read_bytes())
    if damage == "torn":
        half = pos + last["storeSize"] // 2
        data[half:pos + last["storeSize"]] = bytes(pos + last["storeSize"] - half)
    else:
        del data[pos + 20:]
    path.write_bytes(bytes(data))
    with Store.open(root) as store:
        assert store.max_offset == last["commitLogOffset"] - HEADER
        assert _offsets(store) == OFFSETS[:-1]


def test_a_bad_entry_header_before_the_end_is_damage(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    victim = next(o for o in OFFSETS if o % 8192 == HEADER and o > 8192)  # first record of a sealed file
    path, pos = _data_file(root, victim)
    data = bytearray(path.read_bytes())
    data[pos - HEADER + 24:pos - HEADER + 32] = (12345).to_bytes(8, "big")  # the entry's pos field
    path.write_bytes(bytes(data))
    with Store.open(root) as store:
        assert store.max_offset == RECORDS[-1]["commitLogOffset"] + RECORDS[-1]["storeSize"]
        damage = rf"{path.name}: at physical offset {victim}: .*DLedger entry at position \d+: pos 12345"
        with pytest.raises(StoreCorruptionError, match=damage):
            _offsets(store)
        assert _offsets(store, mode=PERMISSIVE) == [o for o in OFFSETS if o != victim]
        assert [s.offset for s in store.stats.skipped.values()] == [victim]
