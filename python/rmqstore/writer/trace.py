"""Message-trace bodies as RocketMQ's clients write them (docs/format.md §10), for tests and demo stores.

`trace_record` writes one record in the field order of a variant of `TraceDataEncoder` (the contract's
`VARIANTS`), `trace_message` the trace message a client's `AsyncTraceDispatcher` sends for records: the
body, and the KEYS property holding every traced msgId and key; `TracedClients` the trace messages of the
demo store's producers and consumers.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rmqstore.format import contract_trace as ct
from rmqstore.format.record import TRANS_HALF_TOPIC
from rmqstore.writer.message import MessageSpec
from rmqstore.writer.store_writer import StoreWriter

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


BATCH_RECORDS = 10
"""`AsyncTraceDispatcher`'s batchNum: records of one traced topic sent in one trace message."""
FLUSH_MS = 100
"""`AsyncTraceDispatcher`'s pollingTimeMil: a batch waits at most this long for more records."""
REGION = "DefaultRegion"
CONSUME_FAILED = 4
"""`ConsumeReturnType.FAILED.ordinal()`: a SubAfter's contextCode when the listener asked for a retry."""


class TracedClients:
    """The demo's clients with message trace on (`rmqstore.writer.demo` `tracer`): a Pub per send of a
    message with a UNIQ_KEY by the `producers` with trace on, a SubBefore and a SubAfter per consume
    (§10.2), batched per traced topic into trace messages in RMQ_SYS_TRACE_TOPIC as `AsyncTraceDispatcher`
    sends them; costs drawn from `seed`."""

    def __init__(self, seed: int, producers: Sequence[str],
                 observer: Callable[[Any], None] | None = None) -> None:
        self.rng = random.Random(f"trace-{seed}")
        self.producers = frozenset(producers)
        """The born hosts of the producers with trace on."""
        self.observer = observer
        self.keys: dict[str, str | None] = {}
        """KEYS of each sent UNIQ_KEY, for its consumes' records."""
        self.attempts: dict[tuple[str, str], int] = {}
        self.pending: dict[str, list[dict[str, object]]] = {}
        self.requests = 0

    def __call__(self, writer: StoreWriter, event: Any) -> None:
        """Trace `event` (a `DemoEvent`), then send the batches that are full or waited FLUSH_MS."""
        if self.observer is not None:
            self.observer(event)
        record, spec = event.record, event.spec
        uniq = record.uniq_key
        if event.group is None:
            if uniq is not None and spec.born_host in self.producers:
                self.keys[uniq] = spec.keys_property()
                half = spec.transaction or record.topic == TRANS_HALF_TOPIC
                delayed = record.topic != spec.topic
                msg_type = "Trans_Msg_Half" if half else "Delay_Msg" if delayed else "Normal_Msg"
                self._add(writer, spec.topic, {
                    "traceType": "Pub", "timestamp": event.at_ms, "regionId": REGION,
                    "groupName": f"PID_{spec.topic}", "topic": spec.topic, "msgId": uniq, "tags": spec.tags,
                    "key": spec.keys_property(), "storeHost": writer.store_host, "bodyLength": len(spec.body),
                    "costTime": self.rng.randrange(1, 20), "msgType": msg_type, "offsetMsgId": record.msg_id,
                    "success": True})
        elif uniq is not None:
            self.requests += 1
            attempt = self.attempts.get((event.group, uniq), 0)
            self.attempts[(event.group, uniq)] = attempt + 1
            cost = self.rng.randrange(0, 50)
            common = {"groupName": event.group, "requestId": f"{self.requests:032X}", "msgId": uniq,
                      "key": self.keys.get(uniq), "regionId": REGION}
            self._add(writer, record.topic, {**common, "traceType": "SubBefore", "timestamp": event.at_ms,
                                             "retryTimes": attempt})
            self._add(writer, record.topic, {**common, "traceType": "SubAfter", "costTime": cost,
                                             "timestamp": event.at_ms + cost, "success": event.ok,
                                             "contextCode": 0 if event.ok else CONSUME_FAILED})
        self._send(writer, event.at_ms)

    def _add(self, writer: StoreWriter, topic: str, values: dict[str, object]) -> None:
        batch = self.pending.setdefault(topic, [])
        batch.append(values)
        if len(batch) >= BATCH_RECORDS:
            writer.append(trace_message(self.pending.pop(topic)))

    def _send(self, writer: StoreWriter, now: int | None) -> None:
        for topic, batch in list(self.pending.items()):
            if now is None or now - int(batch[0]["timestamp"]) >= FLUSH_MS:
                writer.append(trace_message(self.pending.pop(topic)))

    def flush(self, writer: StoreWriter) -> None:
        """Send every batch still waiting (the dispatcher's shutdown)."""
        self._send(writer, None)
