"""What happened to a message: every stored copy (delayed, transaction half / commit / op, retries, DLQ)
in time order, then each consumer group's state, as one DataFrame.

    python examples/message_life.py [store] [uniqKey]

Without a UNIQ_KEY it picks, from the store's message-trace records, a transactional message a traced
producer sent and a message a traced consumer failed on (the demo store has both).
`rmqstore.spark.message_life` finds the copies through pushed-down lookups (the KEYS/UNIQ_KEY index,
msgIds, the op-half topic's queue) on either engine, labels them like `rmqstore trace STORE --uniq-key U`
(docs/format.md §3.4) and joins the message's trace records (`trace` events: who sent and consumed it, ok
or failed, how long; §10).
"""

from __future__ import annotations

import sys

from _common import store_from_argv

from rmqstore.spark import message_life, session, trace_records


def main() -> None:
    store = store_from_argv()
    spark = session()
    if len(sys.argv) > 2:
        picked = [sys.argv[2]]
    else:  # a traced half message and a failed consume (a fresh read per query: README "Pushdown")
        picked = [trace_records(spark, store).where(condition).select("msgId").first()[0]
                  for condition in ("msgType = 'Trans_Msg_Half'", "traceType = 'SubAfter' AND NOT success")]
    for uniq_key in picked:
        print(f"life of the message with UNIQ_KEY {uniq_key}:")
        message_life(spark, store, uniq_key=uniq_key).show(50, truncate=80)
    spark.stop()


if __name__ == "__main__":
    main()
