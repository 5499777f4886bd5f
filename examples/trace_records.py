"""A message's life from its trace records: who sent it, when it was stored, who consumed it and how long.

    python examples/trace_records.py [store] [msgId]

Clients with message trace on send trace messages to RMQ_SYS_TRACE_TOPIC (docs/format.md §10);
`rmqstore.spark.trace_records` decodes them into one row per record (Pub, SubBefore, SubAfter,
EndTransaction, Recall). With a msgId it reads only the trace messages the index finds by it. Without
arguments it writes a small store of trace messages first (the writer's `trace_message`).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from rmqstore.spark import session, trace_records
from rmqstore.writer import StoreWriter
from rmqstore.writer.trace import trace_message

MSG_ID = "0A0000011F4A18B4AAC2600000000000"


def write_trace_store(path: Path) -> None:
    """A producer's Pub record and a consumer's SubBefore / SubAfter pair for MSG_ID, as 5.x clients send."""
    common = {"regionId": "DefaultRegion", "msgId": MSG_ID, "key": "order-1"}
    with StoreWriter(path, segment_size=1 << 20, cq_segment_size=20 * 64, index_hash_slots=64,
                     index_entries=64) as writer:
        writer.append(trace_message([{**common, "traceType": "Pub", "timestamp": 1700000000000,
                                      "groupName": "PID_orders", "topic": "TopicOrders", "tags": "TagA",
                                      "storeHost": "127.0.0.1:10911", "bodyLength": 42, "costTime": 7,
                                      "msgType": "Normal_Msg", "success": True,
                                      "offsetMsgId": "7F00000100002A9F0000000000000000"}]))
        writer.append(trace_message([
            {**common, "traceType": "SubBefore", "timestamp": 1700000000500, "groupName": "CID_billing",
             "requestId": "req-1", "retryTimes": 0},
            {**common, "traceType": "SubAfter", "timestamp": 1700000000512, "groupName": "CID_billing",
             "requestId": "req-1", "costTime": 12, "success": True, "contextCode": 0}]))


def main() -> None:
    if len(sys.argv) > 1:
        store, msg_id = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
    else:
        store, msg_id = str(Path(tempfile.mkdtemp()) / "store"), MSG_ID
        write_trace_store(Path(store))
    spark = session()
    records = trace_records(spark, store, msg_id=msg_id)
    columns = ("timestamp", "traceType", "groupName", "topic", "msgId", "costTime", "success", "requestId")
    records.select(*columns).orderBy("timestamp").show(50, truncate=False)
    spark.stop()


if __name__ == "__main__":
    main()
