"""A message's life from its trace records: who sent it, when it was stored, who consumed it and how long.

    python examples/trace_records.py [store] [msgId]

Clients with message trace on send trace messages to RMQ_SYS_TRACE_TOPIC (docs/format.md §10);
`rmqstore.spark.trace_records` decodes them into one row per record (Pub, SubBefore, SubAfter,
EndTransaction, Recall). With a msgId it reads only the trace messages the index finds by it; without, it
picks a message a traced consumer failed on. Without a store it uses the demo store, whose clients trace.
"""

from __future__ import annotations

import sys

from _common import store_from_argv

from rmqstore.spark import session, trace_records


def main() -> None:
    store = store_from_argv()
    spark = session()
    if len(sys.argv) > 2:
        msg_id = sys.argv[2]
    else:  # a message a traced consumer failed on: each group's tries
        msg_id = trace_records(spark, store).where("traceType = 'SubAfter' AND NOT success").first().msgId
    records = trace_records(spark, store, msg_id=msg_id)
    columns = ("timestamp", "traceType", "groupName", "topic", "msgId", "costTime", "success", "requestId")
    records.select(*columns).orderBy("timestamp").show(50, truncate=False)
    spark.stop()


if __name__ == "__main__":
    main()
