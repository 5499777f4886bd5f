"""DLedger entries around the records of a DLedger commit log (§2.13): header layout and its check."""

from __future__ import annotations

import struct
from typing import Any

from rmqstore.format.contract_layout import DLEDGER_ENTRY_HEADER as ENTRY_HEADER
from rmqstore.format.contract_layout import DLEDGER_ENTRY_MAGIC as ENTRY_MAGIC

_HEADER = struct.Struct(">iiqqqiiii")


def entry_problem(buf: Any, at: int, base_offset: int, size: int | None) -> str | None:
    """Why the bytes at `at` are not the DLedger header of a `size`-byte record right after it (like
    `DLedgerMmapFileStore.recover`: magic, pos = base_offset + at, size = body size + 48; the sizes
    not when `size` is None, a record not yet known); None when they are. The chain and body CRCs are
    not checked (DLedger 0.3.x writes 0)."""
    if at < 0 or len(buf) - at < ENTRY_HEADER:
        return f"no room for a DLedger entry header at position {at}"
    header = bytes(buf[at:at + ENTRY_HEADER])
    magic, entry_size, _index, _term, pos, _channel, _chain, _crc, body = _HEADER.unpack_from(header)
    if magic != ENTRY_MAGIC:
        return f"DLedger entry at position {at}: magic {magic}, not {ENTRY_MAGIC}"
    if pos != base_offset + at:
        return f"DLedger entry at position {at}: pos {pos}, not its position {base_offset + at}"
    if size is not None and (entry_size != size + ENTRY_HEADER or body != size):
        return (f"DLedger entry at position {at}: size {entry_size} / body size {body} do not frame a "
                f"{size}-byte record")
    return None
