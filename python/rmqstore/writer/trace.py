"""Message-trace bodies as RocketMQ's clients write them (docs/format.md §10), for tests and demo stores.

`trace_record` writes one record in the field order of a variant of `TraceDataEncoder` (the contract's
`VARIANTS`), `trace_message` the trace message a client's `AsyncTraceDispatcher` sends for records: the
body, and the KEYS property holding every traced msgId and key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rmqstore.format import contract_trace as ct
from rmqstore.writer.message import MessageSpec

TraceValues = Mapping[str, object]
"""A record's column values (the trace-record DataFrame's names; `timestamp` in epoch milliseconds)."""


def trace_record(values: TraceValues, field_count: int | None = None) -> str:
    """One record of type `values["traceType"]` with `field_count` fields (default: what RocketMQ 5.3.2+
    writes), ended by RECORD_END. Values print as Java's StringBuilder does: None as "null", booleans as
    "true"/"false", `msgType` by its ordinal; a position no column takes is empty."""
    trace_type = values["traceType"]
    variants = [(at, current) for t, at, _, current in ct.VARIANTS if t == trace_type]
    chosen = [at for at, current in variants if (len(at) == field_count if field_count else current)]
    if not chosen:
        raise ValueError(f"RocketMQ writes no {trace_type} record of {field_count} fields")
    fields = (_text(name, values.get(name)) for name in chosen[0])
    return chr(ct.FIELD_SEPARATOR).join(fields) + chr(ct.RECORD_END)


def _text(name: str, value: object) -> str:
    if name == "":
        return ""
    if name == "msgType" and isinstance(value, str):
        return str(ct.MSG_TYPES.index(value))
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def trace_keys(values: Sequence[TraceValues]) -> list[str]:
    """The trace message's KEYS (`TraceDataEncoder` transKey): each record's msgId, then its keys."""
    keys: dict[str, None] = {}
    for record in values:
        keys[str(record.get("msgId"))] = None
        keys.update(dict.fromkeys(t for t in str(record.get("key") or "").split(ct.KEY_SEPARATOR) if t))
    return list(keys)


def trace_message(records: Sequence[TraceValues], *, topic: str = ct.DEFAULT_TOPIC,
                  field_counts: Sequence[int | None] | None = None) -> MessageSpec:
    """The trace message carrying `records` (each with its field count from `field_counts`, default the
    current one) to `topic`."""
    counts = field_counts or [None] * len(records)
    body = "".join(trace_record(r, n) for r, n in zip(records, counts, strict=True))
    return MessageSpec(topic=topic, body=body.encode(), keys=trace_keys(records))
