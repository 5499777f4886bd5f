"""What happened to a message: every stored copy (delayed, transaction half / commit / op, retries, DLQ)
in time order, then each consumer group's state, as one DataFrame.

    python examples/message_life.py [store] [uniqKey]

Without a UNIQ_KEY it picks a transactional message and a delayed one of the store (the demo store has
both). `rmqstore.spark.message_life` finds the copies through pushed-down lookups (the KEYS/UNIQ_KEY index,
msgIds, the op-half topic's queue) on either engine and labels them like `rmqstore trace STORE --uniq-key U`
(docs/format.md §3.4).
"""

from __future__ import annotations

import sys

from _common import store_from_argv

from rmqstore.spark import message_life, session


def main() -> None:
    store = store_from_argv()
    spark = session()
    if len(sys.argv) > 2:
        picked = [sys.argv[2]]
    else:  # the first half message and the first delayed message (a fresh read per query: README "Pushdown")
        picked = [spark.read.format("rmqstore").option("topics", topic).load(store)
                  .select("uniqKey").where("uniqKey IS NOT NULL").first()[0]
                  for topic in ("RMQ_SYS_TRANS_HALF_TOPIC", "SCHEDULE_TOPIC_XXXX")]
    for uniq_key in picked:
        print(f"life of the message with UNIQ_KEY {uniq_key}:")
        message_life(spark, store, uniq_key=uniq_key).show(50, truncate=80)
    spark.stop()


if __name__ == "__main__":
    main()
