"""Consumer lag people can act on: per group, topic and queue, the backlog in messages, bytes and time.

    python examples/consumer_lag.py [store] [group]

`rmqstore.spark.lag` reads the consume queues and the committed offsets (config/consumerOffset.json or the
broker's RocksDB), never a message body. `lagMs` is how far the oldest unconsumed message lies behind the
newest one in the store; a queue whose lag cannot be known (no committed offset, an offset past the queue's
end or below its start: retention) has a `state` saying so and null counts, never 0. The same from a shell:
`rmqstore lag STORE [--group G]`.

A group's `%RETRY%<group>` topic counts for the group: there wait the messages it failed on, sent back
through the schedule topic (docs/format.md §2.10). On the demo store cg-analytics and cg-inventory lag,
cg-payments failed on payments, stopped, and has retries waiting. Messages failed more than the group's
maxReconsumeTimes sit in `%DLQ%<group>`, which no consumer reads: the last table counts them per group.
"""

from __future__ import annotations

import sys

from _common import store_from_argv
from pyspark.sql import functions as F

from rmqstore import Store
from rmqstore.spark import lag, session


def main() -> None:
    store = store_from_argv()
    group = sys.argv[2] if len(sys.argv) > 2 else None
    spark = session()
    queues = lag(spark, store, group)
    print("per queue:")
    queues.orderBy("group", "topic", "queueId").show(200, truncate=40)
    print("per group and topic (lag_messages is null when some queue's lag is unknown):")
    unknown = F.sum((F.col("state") != "ok").cast("int"))
    (queues.groupBy("group", "topic")
     .agg(F.when(unknown == 0, F.sum("lagMessages")).alias("lag_messages"), unknown.alias("unknown_queues"),
          F.sum("lagBytes").alias("lag_bytes"), F.max("lagMs").alias("oldest_unconsumed_behind_ms"))
     .orderBy(F.desc("oldest_unconsumed_behind_ms")).show(100, truncate=40))
    with Store.open(store) as opened:
        dead_letter_topics = [topic for topic in opened.topics() if topic.startswith("%DLQ%")]
    print("dead letters per group:")
    (spark.read.format("rmqstore").load(store).where(F.col("topic").isin(dead_letter_topics))  # pushed
     .groupBy(F.expr("substring(topic, 6)").alias("group"))
     .agg(F.count("*").alias("dead_letters"), F.max("storeTimestamp").alias("newest"))
     .orderBy("group").show(100, truncate=False))
    spark.stop()


if __name__ == "__main__":
    main()
