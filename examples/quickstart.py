"""Quickstart: a demo RocketMQ store read with Spark — a key lookup, a time window, a dead letter's life.

    python examples/quickstart.py            # creates ~/.cache/rmqstore/demo-store-v2 on first run
    python examples/quickstart.py /path/to/broker/store
"""

from __future__ import annotations

from datetime import timedelta

from _common import store_from_argv
from pyspark.sql import functions as F

from rmqstore import Store
from rmqstore.spark import served_by, session


def main() -> None:
    store = store_from_argv()
    # The JVM engine when its jar is shipped or can be built here, else the Python engine (a note
    # on stderr says why); pushdown on, UTC, PYSPARK_PYTHON set.
    spark = session()

    # Key lookup. One DataFrame per query: Spark 4.1-4.3 reuse a filtered reader on reuse.
    lookup = (spark.read.format("rmqstore").load(store)
              .where(F.col("key") == "order-42")
              .select("topic", "queueId", "queueOffset", "msgId", "key", "tags", "storeTimestamp"))
    lookup.explain("formatted")  # BatchScan rmqstore: PushedFilters: [IsNotNull(key), EqualTo(key,order-42)]
    lookup.show(truncate=False)

    # Messages having "order-42" among several keys (RocketMQ's queryMsgByKey meaning).
    (spark.read.format("rmqstore").option("keys", "order-42").load(store)
     .select("topic", "key", "commitLogOffset").show(truncate=False))

    # A one-minute time window: only that slice of the commit log is read.
    first = spark.read.format("rmqstore").load(store).agg(F.min("storeTimestamp")).first()[0]
    begin = first + timedelta(minutes=30)
    window = (spark.read.format("rmqstore").load(store)
              .where(F.col("storeTimestamp").between(begin, begin + timedelta(minutes=1)))
              .groupBy("topic").count().orderBy("topic"))
    window.show()

    # A dead letter's life (docs/format.md §2.10): every record with its UNIQ_KEY, the producer's send, the
    # schedule-topic and %RETRY% copies of each send-back, the %DLQ% copy once the group gave up.
    with Store.open(store) as opened:
        dead_letter_topics = [topic for topic in opened.topics() if topic.startswith("%DLQ%")]
    for topic in dead_letter_topics[:1]:
        uniq_key = (spark.read.format("rmqstore").load(store).where(F.col("topic") == topic)
                    .select("uniqKey").first().uniqKey)
        (spark.read.format("rmqstore").load(store).where(F.col("uniqKey") == uniq_key)
         .select("storeTimestamp", "topic", "queueId", "reconsumeTimes", "key",
                 F.col("properties")["DELAY"].alias("delayLevel"))
         .orderBy("storeTimestamp").show(truncate=False))
    # "quickstart served by the JVM engine (rmqstore-spark-4.0_2.13-<version>.jar)" or "... the Python engine"
    print("quickstart " + served_by(window))
    spark.stop()


if __name__ == "__main__":
    main()
