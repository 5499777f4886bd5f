"""Message-trace bodies decoded in Python (docs/format.md §10.3), for the paths without Spark (`rmqstore
trace`): the same variants, values and malformed-record causes as the Spark SQL both engines run, both
driven by the generated contract (`contract_trace`); tests hold the two to equal rows.
"""

from __future__ import annotations

import re
from typing import Any

from rmqstore.format import contract_trace as ct

TraceRow = dict[str, Any]
"""A record's columns (`contract_trace.COLUMNS`; `timestamp` in epoch ms), `recordIndex` and `problem`:
why the record is no trace record RocketMQ writes, None when it is one."""

_VARIANTS = {(t, len(at)): at for t, at, _, _ in ct.VARIANTS}
_COUNTS: dict[str, list[int]] = {}
for _type, _at, _, _ in ct.VARIANTS:
    _COUNTS.setdefault(_type, []).append(len(_at))
_BITS = {"millis": 64, "int": 32, "msg_type": 32}
"""Kinds whose text must parse as a number, and its width (Spark's try_cast to BIGINT / INT)."""
_NUMBER = re.compile(r"[+-]?\d+")


def decode_body(body: bytes) -> list[TraceRow]:
    """The records of a trace message's body: split on RECORD_END, empty ones dropped, each split on
    FIELD_SEPARATOR keeping empty fields; its type and field count pick the variant (§10.3)."""
    text = body.decode("utf-8", "replace")
    records = [r for r in text.split(chr(ct.RECORD_END)) if r]
    return [{**_decode(r.split(chr(ct.FIELD_SEPARATOR))), "recordIndex": i} for i, r in enumerate(records)]


def _number(text: str | None, bits: int) -> int | None:
    stripped = (text or "").strip()
    value = int(stripped) if _NUMBER.fullmatch(stripped) else None
    return value if value is not None and -(1 << (bits - 1)) <= value < 1 << (bits - 1) else None


def _value(kind: str, text: str | None) -> Any:
    if text is None:
        return None
    if kind in _BITS:
        number = _number(text, _BITS[kind])
        if kind != "msg_type" or number is None:
            return number
        return ct.MSG_TYPES[number] if 0 <= number < len(ct.MSG_TYPES) else None
    if kind == "bool":
        return text.lower() == "true"
    if kind == "keys":
        return [k for k in text.split(ct.KEY_SEPARATOR) if k]
    return text


def _decode(fields: list[str]) -> TraceRow:
    at = _VARIANTS.get((fields[0], len(fields)))
    texts = dict(zip(at, fields, strict=True)) if at else {"traceType": fields[0]}
    texts["keys"] = texts.get("key")
    row = {name: _value(kind, texts.get(name)) for name, kind in ct.COLUMNS}
    return {**row, "problem": _problem(fields, at, texts)}


def _problem(fields: list[str], at: tuple[str, ...] | None, texts: dict[str, str | None]) -> str | None:
    """The first cause, in the order of the contract's SQL (`.ci/contract.py` `_trace_problem`)."""
    trace_type = fields[0]
    if at is None:
        if trace_type in _COUNTS:
            writes = ", ".join(map(str, _COUNTS[trace_type]))
            return f"{trace_type} record of {len(fields)} fields (RocketMQ writes {writes})"
        return f'unknown trace type "{trace_type[:64]}"'
    for name, kind in ct.COLUMNS:
        text = texts.get(name)
        number = None if text is None else _number(text, _BITS.get(kind, 32))
        if kind in _BITS and text is not None and number is None:
            return f'{name} "{text[:64]}" is not a number'
        if kind == "msg_type" and number is not None and not 0 <= number < len(ct.MSG_TYPES):
            return f"{name} {text} is no MessageType ordinal"
    return None
