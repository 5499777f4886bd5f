"""A message's life read from open stores (§3.4): the `CopyLookup` of `rmqstore.plan.life` over the
stores' index-backed lookups (`rmqstore.plan.lookup`: planned, read and confirmed like a Spark read, a
scan only when the index cannot answer), each broker's `BrokerState` (log bounds, the committed
offsets the lag service reads), and the trace records of the message's UNIQ_KEYs (§10).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from rmqstore.format.trace import TraceRow, decode_body
from rmqstore.plan.life import (
    COPY_COLUMNS,
    OP_TOPIC,
    TRACE_TOPIC,
    BrokerState,
    Copy,
    Event,
    about,
    collect_copies,
    life_events,
    traced_ids,
)
from rmqstore.plan.lookup import find
from rmqstore.plan.predicates import InSet, KeysContainAny, Predicate
from rmqstore.store import Store
from rmqstore.store.errors import IndexUnavailableError


def _predicate(column: str, values: tuple[str, ...]) -> Predicate:
    """The lookup `column IN values` (KEYS: among the tokens), as `rmqstore.plan.lookup` asks it."""
    return KeysContainAny(values) if column == "keys" else InSet(column, values)


def batch_copies(broker: str, batch: pa.RecordBatch) -> list[Copy]:
    """The rows of a batch of `COPY_COLUMNS` (plus `body`) as copies on `broker`."""
    stamps = pc.cast(batch.column("storeTimestamp"), pa.int64()).to_pylist()
    rows = batch.to_pylist()
    return [Copy.from_row(broker, {**row, "storeTimestamp": us // 1000})
            for row, us in zip(rows, stamps, strict=True)]


class StoreLookup:
    """`CopyLookup` over several brokers' open stores (broker name -> Store)."""

    def __init__(self, stores: Mapping[str, Store]) -> None:
        self.stores = dict(stores)

    def _read(self, predicates: tuple[Predicate, ...], columns: tuple[str, ...],
              brokers: Iterable[str] | None = None) -> list[Copy]:
        copies = []
        for broker in self.stores if brokers is None else brokers:
            store = self.stores[broker]
            offsets = find(store, predicates).offsets
            if offsets:
                copies += batch_copies(broker, store.read_offsets(offsets, columns, strict=False))
        return copies

    def find(self, column: str, values: Sequence[str]) -> list[Copy]:
        return self._read((_predicate(column, tuple(values)),), COPY_COLUMNS)

    def op_records(self, queues: Sequence[tuple[str, int]]) -> list[Copy]:
        return [op for broker, queue_id in queues for op in self._read(
            (InSet("topic", (OP_TOPIC,)), InSet("queueId", (queue_id,))), (*COPY_COLUMNS, "body"), [broker])]

    def past_end(self, column: str, values: Sequence[str]) -> list[tuple[str, str, int]]:
        return [(value, broker, offset) for broker, store in self.stores.items() for value in values
                for offset in index_past_end(store, column, value)]


def index_past_end(store: Store, column: str, value: str) -> list[int]:
    """Offsets the index holds for a KEYS token or UNIQ_KEY at or past the store's valid end (§6.3): records
    a crash left after the recovered end, which no read returns. None for an msgId or without an index."""
    if column == "msgId":
        return []
    try:
        return [o for o in store.index_candidates(value) if o >= store.max_offset]
    except IndexUnavailableError:
        return []


def broker_state(broker: str, store: Store) -> BrokerState:
    """`broker`'s log bounds and committed offsets (the lag service's, `Store.consumer_offsets`)."""
    return BrokerState(broker, store.min_offset, store.max_offset, store.consumer_offsets())


def trace_rows(stores: Mapping[str, Store], ids: Sequence[str]) -> list[TraceRow]:
    """The records of the trace messages (`RMQ_SYS_TRACE_TOPIC`) whose KEYS hold one of `ids`, decoded by
    `rmqstore.format.trace` (§10); a record that is no trace record fails naming its offset (FAILFAST)."""
    rows = []
    predicates = (InSet("topic", (TRACE_TOPIC,)), KeysContainAny(tuple(ids)))
    for broker, store in stores.items():
        offsets = find(store, predicates).offsets if ids else []
        messages = store.read_offsets(offsets, ("commitLogOffset", "body"), strict=False).to_pylist()
        for at, body in ((m["commitLogOffset"], m["body"]) for m in messages):
            for row in decode_body(body):
                if row["problem"] is not None:
                    raise ValueError(f"rmqstore: trace message at commitLogOffset {at} of {broker}, record "
                                     f"{row['recordIndex']}: {row['problem']}")
                rows.append(row)
    return rows


def message_life(stores: Mapping[str, Store], column: str, value: str) -> list[Event]:
    """The life of the message whose `column` ("keys", "uniqKey" or "msgId") is `value`, across the stores
    (broker name -> Store), with the trace records of its UNIQ_KEYs."""
    found = collect_copies(StoreLookup(stores), column, value)
    trace = about(found, trace_rows(stores, traced_ids(found)))
    return life_events(found, [broker_state(b, s) for b, s in stores.items()], trace)
